"""``recreate --drain`` on the cluster with its controllers and KWOK nodes.

The operator and KAI are simulations (tests' stand-ins for what cannot run here); the
budgets, evictions, garbage collection, Deployments and pods are the real parts'.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from fracctl.core.clock import utc_timestamp
from fracctl.core.drain import POD_GROUP
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import DEPLOYMENTS, NODES, PDBS, PODS
from fracctl.errors import ExitCode, ExternalError
from fracctl.flows import drain
from fracctl.sandbox.agents import kwok_delays
from fracctl.sandbox.controllers import SLOW_DELETE
from tests.support.drain_fixtures import (
    FRACTION_NODES,
    Busy,
    admit_without_deleting,
    busy_cluster,
    deployment,
    kai_config,
    ready_pods,
    witness,
)
from tests.support.helpers import Cluster, run_cli
from tests.support.killing import kill_when
from tests.support.waiting import until


def test_a_busy_cluster_drains_recreates_and_reopens(cluster: Cluster, tmp_path: Path) -> None:
    with busy_cluster(cluster, tmp_path) as busy:
        kube, ns = busy.kube, busy.ns
        fractional = busy.uids("app=frac")
        others = busy.uids("app in (whole,cpu)")
        assert len(fractional) == 24 and len(others) == 4
        with witness(kube, ns) as seen:
            r = run_cli("-c", str(busy.incident.config_file), "recreate", "--drain", "--yes")
            assert r.exit_code == ExitCode.OK, r.output
            until("the replacements are placed on the new selection",
                  lambda: len(ready_pods(kube, ns, "app=frac")) == 24, timeout=60)  # fmt: skip
        assert set(fractional) <= seen.evicted, "every fractional pod went by eviction"
        assert not set(fractional) & set(busy.uids("app=frac")), "none of them is left"
        assert busy.uids("app in (whole,cpu)") == others, "whole-GPU and CPU pods untouched"
        assert not set(others) & (seen.evicted | seen.deleted)
        cond = cluster.config.condition
        for name in (*FRACTION_NODES, "b200-0"):
            c = condition(kube.get(NODES, name), cond) or {}
            assert c.get("status") == "True", (name, c)
        assert busy.fences() == {}
        assert busy.journal() is None
        assert "evicted PodGroup" in r.output and "6/6 group(s), 24/24 pod(s)" in r.output


def unchanged(busy: Busy, fractional: dict[str, str], uid: str) -> None:
    """Nothing was changed: no fence, no journal, the same pods, the same config."""
    assert busy.fences() == {}
    assert busy.journal() is None
    assert set(busy.uids("app=frac")) == set(fractional)
    live = busy.incident.cluster.live_target() or {}
    assert live["metadata"]["uid"] == uid and not live["metadata"].get("deletionTimestamp")


def test_the_dry_run_lists_fence_groups_owners_and_budgets(
    cluster: Cluster, tmp_path: Path
) -> None:
    with busy_cluster(cluster, tmp_path) as busy:
        fractional = busy.uids("app=frac")
        uid = busy.incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        r = run_cli("-c", str(busy.incident.config_file), "recreate", "--drain", "--dry-run")
        assert r.exit_code == ExitCode.OK, r.output
        assert "fence 2 node(s): rtx-pro-6000-0, rtx-pro-6000-1" in r.output
        assert "evict 24 pod(s) in 6 group(s)" in r.output
        for i in range(6):
            assert f"PodGroup {busy.ns}/g{i}:" in r.output
        assert "owner ReplicaSet/frac-g0-" in r.output
        assert f"budget {busy.ns}/frac: allows 24, the drain needs 24 (ok)" in r.output
        assert "fractional-pods" in r.output and "the drain evicts 24 pod(s) first" in r.output
        # The row passes: its fix for a refusal ("let them finish") is not shown with it.
        assert "let them finish or scale them down" not in r.output, r.output
        j = run_cli("-c", str(busy.incident.config_file), "recreate", "--drain", "--dry-run",
                    "-o", "json")  # fmt: skip
        assert j.exit_code == ExitCode.OK, j.output
        plan = j.json["drain"]
        assert plan["fence"] == list(FRACTION_NODES) and len(plan["groups"]) == 6
        assert plan["budgets"][0]["needs"] == 24 and plan["refusals"] == []
        unchanged(busy, fractional, uid)


def refused(busy: Busy, *args: str) -> str:
    from fracctl.core.drain import REFUSAL_FIX as DRAIN_REFUSAL_FIX

    cfg = str(busy.incident.config_file)
    r = run_cli("-c", cfg, "recreate", "--drain", "--yes", *args)
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "nothing changed" in r.output or "nothing was deleted or changed" in r.output
    if "; drain: " in r.output or ": drain: " in r.output:
        # A refusal of the drain's plan ends with the fix the dry run shows for it, and
        # that fix names the runbook whole.
        assert r.output.rstrip().endswith(f"-> {DRAIN_REFUSAL_FIX}"), r.output
        assert "runbooks/drain.md" in DRAIN_REFUSAL_FIX
        plan = run_cli("-c", cfg, "recreate", "--drain", "--dry-run", "-o", "json", *args)
        fixes = {c["fix"] for c in plan.json["guards"]["checks"] if c["name"] == "drain"}
        assert fixes == {DRAIN_REFUSAL_FIX}, plan.output
    return r.output


def test_every_reason_the_drain_could_not_finish_refuses_before_any_change(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with busy_cluster(cluster, tmp_path, budget=False) as busy:
        kube, ns = busy.kube, busy.ns
        fractional = busy.uids("app=frac")
        uid = busy.incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]

        # A budget that cannot absorb all its pods at once.
        busy.budget("frac", minAvailable=20)
        busy.budget_settled("frac", 4)
        out = refused(busy)
        assert f"PodDisruptionBudget {ns}/frac allows 4 disruption(s) and the drain needs 24" in out
        unchanged(busy, fractional, uid)

        # A pod two budgets select: the Eviction API would answer 500.
        kube.patch(PDBS, "frac", {"spec": {"minAvailable": 0}}, namespace=ns)
        busy.budget_settled("frac", 24)
        body = {
            "metadata": {"name": "g0-only"},
            "spec": {"selector": {"matchLabels": {"group": "g0"}}, "maxUnavailable": 4},
        }
        kube.create(PDBS, body, namespace=ns)  # fmt: skip
        out = refused(busy)
        assert "more than one PodDisruptionBudget" in out and "(budgets frac, g0-only)" in out
        unchanged(busy, fractional, uid)
        kube.delete(PDBS, "g0-only", ns)

        # A bare pod: nothing would recreate it. --force evicts it anyway (planned only).
        bare = {"metadata": {"name": "bare", "labels": {"app": "bare"},
                             "annotations": {"gpu-fraction": "0.5", **kwok_delays(0)}},
                "spec": {"schedulerName": "kai-scheduler", "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip
        kube.create(PODS, body=bare, namespace=ns)
        until("the bare pod placed", lambda: len(ready_pods(kube, ns, "app=bare")) == 1)
        out = refused(busy)
        assert f"bare pod(s) with no controller to recreate them: {ns}/bare" in out
        unchanged(busy, fractional, uid)
        r = run_cli("-c", str(busy.incident.config_file), "recreate", "--drain", "--force",
                    "--dry-run")  # fmt: skip
        assert r.exit_code == ExitCode.OK, r.output
        assert "bare on rtx-pro-6000-0, owner none (bare pod)" in r.output
        kube.delete(PODS, "bare", ns, grace_period=0)

        # KAI not in NvFractions mode: nothing gates fractions on the condition.
        kai_config(kube, mode="HAMi")
        out = refused(busy)
        assert "gpuSharingMode 'HAMi', not 'NvFractions'" in out
        unchanged(busy, fractional, uid)
        kai_config(kube)

        # The condition fracctl would fence is not the one the operator writes: the
        # rehearsal of the wait refuses first; the drain's plan says so too.
        monkeypatch.setenv("FRACCTL_READINESS_CONDITION", "gpu-sharing.nvidia.com/Ready")
        out = refused(busy)
        assert "gpu-sharing.nvidia.com/Ready" in out
        unchanged(busy, fractional, uid)
        ctx = busy.incident.context(readiness__condition="gpu-sharing.nvidia.com/Ready")
        live = busy.incident.cluster.live_target()
        p = drain.plan(ctx, live=live, desired=live or {}, force=False, journal=None)
        assert any("carries the condition gpu-sharing.nvidia.com/Ready" in w for w in p.refusals)
        assert any("which carry no gpu-sharing.nvidia.com/Ready condition" in w
                   for w in p.refusals)  # fmt: skip


def test_no_fraction_lands_on_a_fenced_node_and_an_overwritten_fence_is_raised_again(
    cluster: Cluster, tmp_path: Path
) -> None:
    with busy_cluster(cluster, tmp_path, groups=2, per_group=2) as busy:
        kube, ns = busy.kube, busy.ns
        cond = cluster.config.condition
        # One group whose pods ignore SIGTERM for their 120 s of grace: the drain waits on
        # them while the late pod and the operator's overwrite come; then they are let go.
        slow = deployment(
            "slow", {"app": "slowfrac"}, 2, schedulerName="kai-scheduler",
            annotations={"gpu-fraction": "0.25", POD_GROUP: "slow", SLOW_DELETE: "1h"},
            nodeSelector={"kubernetes.io/hostname": FRACTION_NODES[1]},
            terminationGracePeriodSeconds=120,
        )  # fmt: skip
        kube.create(DEPLOYMENTS, slow, namespace=ns)
        until("the slow group placed", lambda: len(ready_pods(kube, ns, "app=slowfrac")) == 2)
        seen: dict[str, str] = {}

        def meanwhile() -> None:
            until("the fence is up", lambda: FRACTION_NODES[0] in busy.fences(), timeout=60)
            late = deployment(
                "late", {"app": "late"}, 1, schedulerName="kai-scheduler",
                annotations={"gpu-fraction": "0.5", **kwok_delays(0)},
                terminationGracePeriodSeconds=1,
            )  # fmt: skip
            kube.create(DEPLOYMENTS, late, namespace=ns)

            def refused_by_kai() -> bool:
                for pod in kube.list(PODS, namespace=ns, label_selector="app=late"):
                    for c in (pod.get("status") or {}).get("conditions") or []:
                        if c.get("type") == "PodScheduled" and "FracctlDrain" in str(
                            c.get("message")
                        ):
                            seen["late"] = str(c.get("message"))
                return "late" in seen

            until("KAI refuses the late pod on the fenced nodes", refused_by_kai, timeout=60)
            # The operator writes True over the fence, as its pass does when an agent
            # restarts (PatchNodeCondition). The simulated operator writes only while it
            # sees a daemon lag, which a fast replacement pod may never show: the test
            # writes the operator's True itself, so the overwrite happens on every run.
            stamp = utc_timestamp()
            kube.patch(NODES, FRACTION_NODES[0], {"status": {"conditions": [{
                "type": cond, "status": "True", "reason": "AllDaemonsReady",
                "message": "all gpu-fractioning daemons are running",
                "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]}},
                content_type="application/strategic-merge-patch+json",
                subresource="status")  # fmt: skip

            def refenced() -> bool:  # the operator's True, fenced again by the drain
                c = condition(kube.get(NODES, FRACTION_NODES[0]), cond) or {}
                return c.get("reason") == "FracctlDrain"

            try:
                until("the operator's True is fenced again", refenced, timeout=60)
            finally:
                seen["done"] = "yes"
                for p in kube.list(PODS, namespace=ns, label_selector="app=slowfrac"):
                    kube.delete(PODS, p["metadata"]["name"], ns, grace_period=0)

        with ThreadPoolExecutor(max_workers=1) as pool:
            helper = pool.submit(meanwhile)
            r = run_cli("-c", str(busy.incident.config_file), "recreate", "--drain", "--yes")
            failed = helper.exception(timeout=90)
        assert r.exit_code == ExitCode.OK, f"{r.output}\nthe helper thread: {failed!r}"
        assert failed is None, repr(failed)
        assert "not ready for fractional GPU scheduling" in seen["late"]
        assert f"Condition {cond} is False. Reason: FracctlDrain" in seen["late"]
        again = [line for line in r.output.splitlines()
                 if "the operator wrote the condition True on" in line]  # fmt: skip
        assert any(FRACTION_NODES[0] in line and "fenced again" in line for line in again), r.output
        until("the late pod runs once the new selection is ready",
              lambda: len(ready_pods(kube, ns, "app=late")) == 1, timeout=30)  # fmt: skip
        assert busy.fences() == {} and busy.journal() is None


def test_ctrl_c_before_the_delete_lifts_the_fence_and_says_what_was_evicted(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fracctl.flows.recreate import recreate

    with busy_cluster(cluster, tmp_path, groups=2, per_group=2) as busy:
        cond = cluster.config.condition
        before = {n: condition(busy.kube.get(NODES, n), cond) for n in FRACTION_NODES}
        uid = busy.incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]

        def stop_at(step: str) -> None:
            if step == "drained":
                assert set(busy.fences()) == set(FRACTION_NODES)
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            recreate(busy.incident.context(), yes=True, drain=True, boundary=stop_at)
        err = capsys.readouterr().err
        assert "was undone: the condition is restored on rtx-pro-6000-0, rtx-pro-6000-1" in err
        assert "4 pod(s) were evicted" in err
        assert busy.fences() == {} and busy.journal() is None
        after = {n: condition(busy.kube.get(NODES, n), cond) for n in FRACTION_NODES}
        for n in FRACTION_NODES:  # the snapshot, as the operator wrote it
            assert {k: v for k, v in after[n].items() if k != "lastHeartbeatTime"} == {  # type: ignore[union-attr]
                k: v
                for k, v in before[n].items()
                if k != "lastHeartbeatTime"  # type: ignore[union-attr]
            }
        assert busy.incident.cluster.live_target()["metadata"]["uid"] == uid  # type: ignore[index]
        until("the evicted pods' replacements run again on the old selection",
              lambda: len(ready_pods(busy.kube, busy.ns, "app=frac")) == 4)  # fmt: skip


def test_a_failure_before_the_delete_lifts_the_fence_and_the_error_says_so(
    cluster: Cluster, tmp_path: Path
) -> None:
    from fracctl.flows.recreate import recreate

    with busy_cluster(cluster, tmp_path, groups=1, per_group=2) as busy:

        def fail_at(step: str) -> None:
            if step == "drained":
                raise ExternalError("injected: the API server went away")

        frames: list[tuple[Any, ...]] = []

        class Table:  # the live table the CLI shows on a terminal
            def __init__(self, ctx: Any) -> None:
                frames.append(("started",))

            def show(self, rows: list[tuple[str, int, int]], more: int, totals: str) -> None:
                frames.append((rows, more, totals))

            def stop(self) -> None:
                frames.append(("stopped",))

        ctx = busy.incident.context()
        ctx.drain_progress = Table
        with pytest.raises(ExternalError) as failed:
            recreate(ctx, yes=True, drain=True, boundary=fail_at)
        assert frames[0] == ("started",) and frames[-1] == ("stopped",)
        assert frames[1] == ([(f"PodGroup {busy.ns}/g0", 2, 0)], 0, "evicted 0/2 pod(s), "
                             "0/1 PodGroup(s) gone")  # fmt: skip
        assert frames[-2] == ([], 0, "evicted 2/2 pod(s), 1/1 PodGroup(s) gone")
        assert "injected" in failed.value.message
        assert "was undone: the condition is restored on" in failed.value.message
        assert "2 pod(s) were evicted" in failed.value.message
        assert busy.fences() == {} and busy.journal() is None


def test_abort_with_nothing_journaled_and_after_the_delete(
    cluster: Cluster, tmp_path: Path
) -> None:
    from fracctl.core.drain import DELETING
    from fracctl.flows.drain import journal as journals

    with busy_cluster(cluster, tmp_path, groups=1, per_group=1) as busy:
        cfg = str(busy.incident.config_file)
        r = run_cli("-c", cfg, "recreate", "--abort")
        assert r.exit_code == ExitCode.OK, r.output
        assert "no drain is journaled: nothing to undo" in r.output
        # A journal whose run reached the delete, the original gone: no undo.
        ctx = busy.incident.context()
        live = busy.incident.cluster.live_target() or {}
        gone = {**live, "metadata": {**live["metadata"], "uid": "an-earlier-incarnation"}}
        journals.write(ctx, journals.Journal(run_id="dead0001", phase=DELETING, old=gone, new=live))
        r = run_cli("-c", cfg, "recreate", "--abort")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "reached the delete of GpuFractioningConfig/default: there is no undo" in r.output
        assert "fracctl recreate --drain --yes" in r.output
        assert busy.journal() is not None
        for bad in (("--abort", "--drain"), ("--force",), ("--drain", "--restore-from", "x")):
            r = run_cli("-c", cfg, "recreate", *bad)
            assert r.exit_code == ExitCode.USAGE, r.output


def test_a_bare_pod_placed_while_the_fence_was_overwritten_is_not_evicted_without_force(
    cluster: Cluster, tmp_path: Path
) -> None:
    from fracctl.errors import Refused
    from fracctl.flows.drain.evict import Progress, wait_fractions_gone
    from fracctl.flows.drain.journal import Journal

    with busy_cluster(cluster, tmp_path, groups=1, per_group=1) as busy:
        kube, ns = busy.kube, busy.ns
        kube.delete(DEPLOYMENTS, "frac-g0", ns)
        until("the group is gone", lambda: not busy.pods("app=frac"))
        stray = {"metadata": {"name": "stray", "annotations": {"gpu-fraction": "0.5"}},
                 "spec": {"nodeName": FRACTION_NODES[0], "terminationGracePeriodSeconds": 1,
                          "containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip
        kube.create(PODS, stray, namespace=ns)
        ctx = busy.incident.context()
        journal = Journal(run_id="feed0001", phase="fenced", old={}, new={})
        progress = Progress(groups=0, pods=0)
        deadline = ctx.clock.monotonic() + 30
        with pytest.raises(Refused) as refused:
            wait_fractions_gone(ctx, journal, progress, deadline=deadline)
        assert f"the bare pod {ns}/stray was placed on {FRACTION_NODES[0]}" in refused.value.message
        assert "--force" in (refused.value.hint or "")
        assert kube.get_or_none(PODS, "stray", ns) is not None
        wait_fractions_gone(ctx, journal, progress, deadline=deadline, force=True)
        assert journal.evicted == [f"{ns}/stray"]
        assert kube.get_or_none(PODS, "stray", ns) is None


#: Where a run is killed (a moment of the drain, then a random delay, seeded and
#: printed), and what follows: ``--abort``, or a rerun.
KILLS = [("journaled", "abort"), ("fenced", "rerun"), ("evicting", "abort"),
         ("evicting", "rerun"), ("deleting", "abort")]  # fmt: skip


@pytest.mark.parametrize(("moment", "then"), KILLS)
def test_sigkill_at_a_random_moment_then_rerun_or_abort(
    cluster: Cluster, tmp_path: Path, moment: str, then: str
) -> None:
    import os
    import random

    seed = int(os.environ.get("FRACCTL_TEST_SEED", "0")) or random.randrange(1, 10**6)
    jitter = random.Random(seed).uniform(0, 0.4)
    print(f"killed at {moment} + {jitter:.2f}s, then {then} (FRACCTL_TEST_SEED={seed})")
    with busy_cluster(cluster, tmp_path, groups=3, per_group=2) as busy:
        uid = busy.incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        cfg = str(busy.incident.config_file)

        def reached() -> bool:
            journal = busy.journal()
            if moment == "journaled":
                return journal is not None
            if moment == "fenced":
                return bool(busy.fences())
            if moment == "evicting":
                return len(busy.uids("app=frac")) > 6 or any(
                    p["metadata"].get("deletionTimestamp") for p in busy.pods("app=frac")
                )
            live = busy.incident.cluster.live_target()
            return live is None or bool(live["metadata"].get("deletionTimestamp"))

        env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "2s"}
        args = ["-c", cfg, "recreate", "--drain", "--yes"]
        kill_when(args, env, reached, jitter=jitter, what=moment, poll=0.1)
        time.sleep(2.5)  # the dead holder's lease expires
        if busy.fences():  # doctor names the fence the dead run left
            r = run_cli("-c", cfg, "doctor", "-o", "json")
            found = [f for f in r.json["findings"] if f["check"] == "drain-fence"]
            assert found and set(found[0]["subjects"]) == set(busy.fences()), r.output
        live = busy.incident.cluster.live_target()
        untouched = live is not None and live["metadata"]["uid"] == uid
        untouched = untouched and not live["metadata"].get("deletionTimestamp")  # type: ignore[index]
        if then == "abort":
            journaled = busy.journal() is not None
            r = run_cli("-c", cfg, "recreate", "--abort")
            if untouched:  # undone: no fence, the config untouched
                assert r.exit_code == ExitCode.OK, r.output
                assert busy.fences() == {} and busy.journal() is None, r.output
                live = busy.incident.cluster.live_target() or {}
                assert live["metadata"]["uid"] == uid, "abort leaves the config untouched"
                return
            if journaled:  # past the delete: only forward
                assert r.exit_code == ExitCode.FINDING, r.output
                assert "there is no undo" in r.output, r.output
            else:  # the killed run had finished the drain within its jitter
                assert r.exit_code == ExitCode.OK, r.output
                assert "no drain is journaled: nothing to undo" in r.output, r.output
        r = run_cli("-c", cfg, "recreate", "--drain", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        assert busy.fences() == {} and busy.journal() is None, r.output
        assert busy.incident.cluster.live_target()["metadata"]["uid"] != uid  # type: ignore[index]
        until("the replacements are placed on the new selection",
              lambda: len(ready_pods(busy.kube, busy.ns, "app=frac")) == 6, timeout=60)  # fmt: skip


def test_a_pod_an_earlier_eviction_admitted_counts_as_paid_and_is_finished(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A client that went away mid-eviction can leave a pod in the budget's disruptedPods
    without deleting it: the plan does not charge it again, and an identity that may
    delete pods finishes that eviction instead of waiting for the API server to forget
    it (the disruption controller's DeletionTimeout)."""
    with busy_cluster(cluster, tmp_path, groups=1, per_group=2) as busy:
        (first, _) = sorted(p["metadata"]["name"] for p in busy.pods("app=frac"))
        admit_without_deleting(busy, [first])
        ctx = busy.incident.context()
        live = busy.incident.cluster.live_target() or {}

        def planned() -> Any:
            return drain.plan(ctx, live=live, desired=live, force=False, journal=None)

        p = until("the budget lists the admitted pod", lambda: (q := planned()).finish and q)
        (budget,) = p.budgets
        assert budget.needs == 1, budget  # the admitted pod needs no second allowance
        assert p.finish == {f"{busy.ns}/{first}"} and p.budget_wait == 0, p


@pytest.mark.parametrize("record", ["about-to-lapse", "older-than-the-pod"])
def test_an_admitted_eviction_is_not_finished_on_a_record_it_cannot_trust(
    cluster: Cluster, tmp_path: Path, record: str
) -> None:
    """A record that lapses within the margin (the delete could land after the budget took
    the pod back) or that predates the pod (an older pod of the same name) is waited for."""
    from fracctl.core.drain import DELETION_TIMEOUT, FINISH_MARGIN
    from fracctl.core.recreate.lock import parse_time

    with busy_cluster(cluster, tmp_path, groups=1, per_group=2) as busy:
        pod = sorted(busy.pods("app=frac"), key=lambda p: p["metadata"]["name"])[0]
        created = parse_time(pod["metadata"]["creationTimestamp"])
        assert created is not None
        at = (time.time() - DELETION_TIMEOUT + FINISH_MARGIN / 2 if record == "about-to-lapse"
              else created.timestamp() - 5)  # fmt: skip
        admit_without_deleting(busy, [pod["metadata"]["name"]], at=at)
        ctx = busy.incident.context()
        live = busy.incident.cluster.live_target() or {}

        def planned() -> Any:
            p = drain.plan(ctx, live=live, desired=live, force=False, journal=None)
            return p.budget_wait and p

        p = until("the budget lists the admitted pod", planned)
        assert p.finish == frozenset() and 0 < p.budget_wait <= DELETION_TIMEOUT, p


def test_a_budget_at_its_floor_with_admitted_pods_drains_at_once(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Every pod admitted and none deleted (a run killed amid its evictions): the budget
    counts none healthy and answers 429 to every eviction for two minutes; the drain
    deletes those pods (their budget counted them) and the recreate goes on at once."""
    with busy_cluster(cluster, tmp_path, groups=1, per_group=2) as busy:
        names = sorted(p["metadata"]["name"] for p in busy.pods("app=frac"))
        admit_without_deleting(busy, names)

        def floor() -> bool:
            status = busy.kube.get(PDBS, "frac", busy.ns).get("status") or {}
            return status.get("disruptionsAllowed") == 0 and len(status["disruptedPods"]) == 2

        until("the budget allows no eviction", floor, timeout=30)
        cfg = str(busy.incident.config_file)
        r = run_cli("-c", cfg, "recreate", "--drain", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        assert "finishing the eviction of 2 pod(s)" in r.output, r.output
        assert "may wait up to" not in r.output, r.output
        assert not set(names) & {p["metadata"]["name"] for p in busy.pods("app=frac")}


def test_the_lease_the_fence_and_the_journal_name_one_run_and_doctor_says_so(
    cluster: Cluster, tmp_path: Path
) -> None:
    """While a drain holds the lock: the Lease's holder, the fence's message and the
    journal name the same run, and doctor reports the fence as that run's drain under way
    (not as agents that never started, nor pending pods whose daemons do not run)."""
    from fracctl.core.drain import fence_run
    from fracctl.core.kube.resources import LEASES
    from fracctl.core.recreate.lock import run_of
    from fracctl.flows.recreate import recreate

    with busy_cluster(cluster, tmp_path, groups=1, per_group=2) as busy:
        cfg = str(busy.incident.config_file)
        seen: dict[str, Any] = {}

        def look(step: str) -> None:
            if step != "drained":
                return
            ctx = busy.incident.context()
            rc = ctx.config.recreate
            lease = busy.kube.get(LEASES, rc.lock_name, rc.lock_namespace)
            seen["holder"] = lease["spec"]["holderIdentity"]
            node = busy.kube.get(NODES, FRACTION_NODES[0])
            seen["fence"] = fence_run(condition(node, cluster.config.condition))
            seen["journal"] = (busy.journal() or {}).get("data", {})
            seen["doctor"] = run_cli("-c", cfg, "doctor", "-o", "json")
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            recreate(busy.incident.context(), yes=True, drain=True, boundary=look)
        run = run_of(seen["holder"])
        assert run and seen["fence"] == run, seen
        assert run in str(seen["journal"]), seen["journal"]
        r = seen["doctor"]
        assert r.exit_code == ExitCode.FINDING, r.output
        found = {f["check"]: f for f in r.json["findings"]}
        assert "node-readiness" not in found, found.get("node-readiness")
        fence = found["drain-fence"]
        assert f"fenced by fracctl drain run {run}, under way" in fence["symptom"]
        assert seen["holder"] in fence["symptom"]
        assert "fracctl recreate --abort" not in fence["fix"]
        pending = found.get("pending-fractional-pods")
        assert pending is None or "daemons not running" not in pending["cause"], pending
        assert busy.fences() == {}  # Ctrl-C lifted it
