"""fracctl as each cluster's gate in Argo CD's own fleet rollout, for real: the real Argo CD
v3.2.11 and its applicationset-controller (RollingSync) over member clusters, each a real
control plane with KWOK nodes, the guard policy, the operator simulation, and the pod
runner executing the gate's hook pods (deploy/components/argocd-gate) as fracctl.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.core.kube.nodes import is_ready
from fracctl.core.kube.resources import CONFIGMAPS, LEASES, NODES, PODS
from fracctl.errors import ExitCode
from fracctl.sandbox import argocd_local
from fracctl.sandbox.controlplane import ControlPlane
from tests.support.argocd_real import RealArgoCD
from tests.support.fleet_fixtures import FRACTIONAL
from tests.support.gate_fleet import APPSET, APPSETS, GateFleet, appset, gate_fleet
from tests.support.helpers import run_cli
from tests.support.recreate_fixtures import NEW, OLD

pytestmark = pytest.mark.e2e

#: The example ApplicationSet's steps, one member cluster each. The third is the
#: session's own control plane (where Argo CD runs too, registered by its URL like the
#: others): three members at the cost of two more control planes.
STEPS = {"us": "canary", "ap": "early", "eu": "rest"}


@pytest.fixture
def fleet(
    real_argocd: RealArgoCD,
    control_plane: ControlPlane,
    extra_control_planes: list[ControlPlane],
    tmp_path: Path,
) -> Iterator[GateFleet]:
    cps = dict(zip(STEPS, (*extra_control_planes, control_plane), strict=True))
    planes = {name: (cps[name], step) for name, step in STEPS.items()}
    with gate_fleet(real_argocd, planes, tmp_path, hub=control_plane) as f:
        yield f


def start(fleet: GateFleet) -> None:
    """The ApplicationSet, and its first rollout (git as the clusters run) finished."""
    fleet.argocd.kube.create(APPSETS, appset(fleet.repo))
    fleet.wait(lambda r: len(r) == len(STEPS) and all(a["status"] == "Healthy"
                                                      for a in r.values()),
               "the first rollout did not finish")  # fmt: skip


def in_order(seen: list[dict[str, str]], later: str, before: str) -> None:
    """``later``'s sync (Progressing) never ran while ``before`` was not Healthy (a Pending
    may linger from the rollout before)."""
    for state in seen:
        if state.get(later) == "Progressing":
            assert state.get(before) == "Healthy", seen


def healthy(app: str) -> Any:
    return lambda rollout: (rollout.get(app) or {}).get("status") == "Healthy"


def hook_results(fleet: GateFleet, member: str) -> dict[str, dict[str, Any]]:
    op = fleet.application(member)["status"].get("operationState") or {}  # none before a sync
    return {r["name"]: r for r in (op.get("syncResult") or {}).get("resources") or []
            if r.get("hookType")}  # fmt: skip


def assert_converged(fleet: GateFleet, member: str) -> None:
    m = fleet.members[member]
    assert m.selector() == NEW
    nodes = {n["metadata"]["name"]: n for n in m.cluster.kube.list(NODES)}
    cond = m.cluster.config.condition
    assert is_ready(nodes["rtx-pro-6000-0"], cond) and is_ready(nodes["b200-0"], cond)
    assert m.cluster.kube.get_or_none(LEASES, "fracctl-recreate", "default") in (None,) or not (
        m.cluster.kube.get(LEASES, "fracctl-recreate", "default").get("spec") or {}
    ).get("holderIdentity")


def test_a_gated_rollout_no_op_then_canary_first_then_a_refusal_until_the_pod_is_gone(
    fleet: GateFleet,
) -> None:
    """One fleet of three steps, two commits: a sync with no immutable change passes the
    gate without the lock; the selector's change recreates the canary first; a fractional
    pod in the second step stops the rollout there, the third step unsynced, until the pod
    is gone; then Argo CD's retry and the third step finish it."""
    start(fleet)
    canary, second, third = (fleet.members[name] for name in STEPS)
    # 1. No immutable change: the PreSync hook ends at once, without the lock.
    uids = {name: m.uid() for name, m in fleet.members.items()}
    first = {name: len(m.runner.ran) for name, m in fleet.members.items()}
    fleet.commit(OLD, "an annotation only", **{"example.org/owner": "platform"})
    fleet.refresh()
    members = list(fleet.members.values())
    fleet.wait(lambda r: all(healthy(m.app)(r) and annotated(m) for m in members),
               "the in-place rollout did not finish")  # fmt: skip
    for name, m in fleet.members.items():
        assert m.uid() == uids[name], f"{name} was recreated"
        pre = [r for r in m.runner.ran[first[name] :] if r.name == "fracctl-gate-pre-sync"]
        assert pre and pre[-1].code == 0, m.runner.ran
        pod = m.cluster.kube.get(PODS, "fracctl-gate-pre-sync", "fracctl")
        said = pod["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
        assert said == "fracctl gate pre-sync: applies-in-place (applies-in-place)", said
        print(f"{name}: the no-op PreSync hook's process ran {pre[-1].seconds:.2f}s")
    # 2. The selector's change, with a fractional pod running in the second step.
    second.cluster.pod("team-a", "trainer-0", annotations=FRACTIONAL, node="rtx-pro-6000-0")
    before = second.uid()
    began = time.monotonic()
    fleet.commit(NEW, "extend fractions by the opt-in label")
    # Before Argo CD has seen the commit, every cluster is Healthy, and none runs git's.
    early = fleet_status(fleet, "-o", "json").json
    assert not early["done"] and early["revision"] == rev_parse(fleet.repo), early
    assert all(c["behind"] for c in early["clusters"]), early
    fleet.refresh()

    refusal: list[str] = []  # the hook's message as Argo CD shows it (a retry resets it)

    def refused(rollout: dict[str, Any]) -> bool:
        hooks = hook_results(fleet, "ap") if healthy(canary.app)(rollout) else {}
        refusal[:] = [(hooks.get("fracctl-gate-pre-sync") or {}).get("message", "")]
        return "trainer-0" in refusal[0]

    seen = fleet.wait(refused, "the second step's PreSync hook never refused")
    # Argo CD's retries refuse again; the third step stays unsynced all the while.
    seen += fleet.wait(lambda r: retries(fleet, "ap") >= 2, "Argo CD did not retry")
    in_order(seen, second.app, canary.app)
    in_order(seen, third.app, second.app)
    assert third.uid() == uids["eu"] and third.selector() == OLD, "the third step was synced"
    assert fleet.application("eu")["status"]["sync"]["status"] == "OutOfSync"
    assert fleet.rollout()[third.app]["status"] != "Progressing"
    assert canary.uid() != uids["us"], "the canary was not recreated"
    assert_converged(fleet, "us")
    hooks = hook_results(fleet, "us")
    assert hooks["fracctl-gate-pre-sync"]["hookPhase"] == "Succeeded", hooks
    assert hooks["fracctl-gate-post-sync"]["hookPhase"] == "Succeeded", hooks
    message = refusal[0]
    assert "preflight refused, nothing changed" in message and "team-a/trainer-0" in message
    assert second.uid() == before and second.selector() == OLD
    assert fleet.rollout()[second.app]["status"] != "Healthy"
    # fracctl reads where the rollout stands: the cluster, the pod, and the fix (while a
    # retry runs, Argo CD has cleared the last attempt's hooks: it says so; ask again).
    r = read_refusal(fleet)
    assert r.exit_code == ExitCode.FINDING, r.output
    assert f"stopped at {second.name} (step 2, {second.app}): PreSync hook " in r.stdout
    assert "team-a/trainer-0" in r.stdout
    assert "fix: let them finish or scale them down first" in r.stdout, r.stdout
    js = fleet_status(fleet, "-o", "json").json
    assert js["stopped"] == [second.app] and not js["done"]
    assert [(c["application"], c["step"]) for c in js["clusters"]] == [
        (canary.app, "1"), (second.app, "2"), (third.app, "3")]  # fmt: skip
    # 3. Once the pod is gone, Argo CD's retry finishes the second step and the third
    # follows by itself: no other step by hand.
    second.cluster.kube.delete(PODS, "trainer-0", "team-a", grace_period=0)

    def finished(rollout: dict[str, Any]) -> bool:
        return all(healthy(m.app)(rollout) and m.selector() == NEW for m in (second, third))

    seen = fleet.wait(finished, "Argo CD's retry did not finish the rollout once the pod was gone")
    in_order(seen, third.app, second.app)
    for name in ("ap", "eu"):
        assert_converged(fleet, name)
    assert second.uid() != before and third.uid() != uids["eu"]
    done = fleet_status(fleet)
    assert done.exit_code == ExitCode.OK, done.output
    sha = rev_parse(fleet.repo)
    assert f"every cluster ({len(STEPS)}) runs {sha[:7]}: the rollout is done" in done.stdout
    js = fleet_status(fleet, "-o", "json").json
    assert js["done"] and js["revision"] == sha, js
    assert [c["cluster"] for c in js["clusters"]] == list(STEPS), js
    print(f"the gated rollout of {len(STEPS)} clusters, refusal and retry included: "
          f"{time.monotonic() - began:.1f}s")  # fmt: skip


def read_refusal(fleet: GateFleet, timeout: float = 30) -> Any:
    """``fracctl fleet status`` until it shows a hook's refusal; a retry's attempt between."""
    deadline = time.monotonic() + timeout
    while True:
        r = fleet_status(fleet)
        if "PreSync hook" in r.stdout or time.monotonic() > deadline:
            return r
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "retrying a failed sync (attempt #" in r.stdout, r.stdout
        time.sleep(0.5)


def retries(fleet: GateFleet, member: str) -> int:
    """How often Argo CD has retried the member's current sync operation."""
    op = fleet.application(member)["status"].get("operationState") or {}
    return int(op.get("retryCount") or 0)


def annotated(m: Any) -> bool:
    live = m.cluster.live_target() or {}
    return bool((live.get("metadata", {}).get("annotations") or {}).get("example.org/owner"))


def fleet_status(fleet: GateFleet, *args: str) -> Any:
    kubeconfig = fleet.argocd.local.kubeconfig
    return run_cli("--kubeconfig", kubeconfig, "fleet", "status", "--appset", APPSET,
                   "-n", argocd_local.NAMESPACE, *args)  # fmt: skip


def test_hooks_killed_at_random_moments_then_argo_cds_retries_converge(
    fleet: GateFleet,
) -> None:
    start(fleet)
    seed = int(os.environ.get("FRACCTL_TEST_SEED", "0")) or random.randrange(1, 10**6)
    print(f"FRACCTL_TEST_SEED={seed}")
    rng = random.Random(seed)
    kills: list[str] = []
    stop = threading.Event()

    def killer() -> None:  # SIGKILL gate processes at random moments until 3 kills land
        done: set[int] = set()
        while sum("ended first" not in k for k in kills) < 3 and len(kills) < 10:
            if stop.is_set():
                return
            for m in fleet.members.values():
                with m.runner.lock:
                    procs = [(k, p) for k, p in m.runner.processes.items() if p.pid not in done]
                for key, proc in procs[:1]:
                    delay = rng.uniform(0, 1.2)
                    time.sleep(delay)
                    done.add(proc.pid)
                    ran = proc.poll() is None
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    kills.append(
                        f"{m.name} {key} +{delay:.2f}s" + ("" if ran else " (ended first)")
                    )
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        fleet.commit(NEW, "extend fractions by the opt-in label")
        fleet.refresh()
        fleet.wait(lambda r: all(healthy(m.app)(r) for m in fleet.members.values())
                   and all(m.selector() == NEW for m in fleet.members.values()),
                   f"no convergence after the kills {kills}", timeout=420)  # fmt: skip
    finally:
        stop.set()
        thread.join(timeout=10)
    print("killed:", kills)
    assert any("ended first" not in k for k in kills), f"no kill landed: {kills}"
    for name, m in fleet.members.items():
        assert_converged(fleet, name)
        assert m.cluster.kube.get_or_none(CONFIGMAPS, "fracctl-recreate-drain", "default") is None


@pytest.mark.timeout(480)  # the session's Argo CD and planes may start for this test
def test_a_later_step_synced_by_hand_before_the_canary_waits_for_the_canary(
    fleet: GateFleet,
) -> None:
    """The second step's cluster is synced by hand to the new commit before Argo CD has
    even seen it for the canary (`argocd app sync --revision`, through Argo CD's API):
    its PreSync hook refuses, naming the canary, until the canary runs the commit; then
    the rollout finishes, and the second cluster's config was recreated only after."""
    start(fleet)
    canary, second, _third = (fleet.members[name] for name in STEPS)
    began = time.monotonic()
    uids = {name: m.uid() for name, m in fleet.members.items()}
    print(explain(fleet))
    fleet.commit(NEW, "extend fractions by the opt-in label")
    sha = rev_parse(fleet.repo)
    print(f"git's new commit {sha}")
    # What `argocd app sync APP --revision SHA` asks of Argo CD's API server.
    fleet.argocd.client("admin").sync(second.app, resources=None, revision=sha)

    def refused_for_order(_rollout: dict[str, Any]) -> bool:
        hook = hook_results(fleet, "ap").get("fracctl-gate-pre-sync") or {}
        return "rollout-order" in hook.get("message", "")

    try:
        fleet.wait(refused_for_order, "the hand-synced second step was not refused for the order")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{explain(fleet)}") from None
    message = hook_results(fleet, "ap")["fracctl-gate-pre-sync"]["message"]
    assert f"{canary.app} (step 1)" in message, message
    assert second.uid() == uids["ap"] and second.selector() == OLD, "recreated out of turn"
    r = read_refusal(fleet)
    assert r.exit_code == ExitCode.FINDING, r.output
    assert f"stopped at {second.name} (step 2, {second.app})" in r.stdout, r.stdout
    assert "rollout-order" in r.stdout and "fix: let the earlier steps finish" in r.stdout
    # Argo CD sees the commit: the canary syncs, then the held cluster's retry goes on (the
    # third step follows as in the test above).
    fleet.refresh()
    fleet.wait(lambda r: all(healthy(m.app)(r) and m.selector() == NEW for m in (canary, second)),
               "the second step did not follow the canary", timeout=240)  # fmt: skip
    for name in ("us", "ap"):
        assert_converged(fleet, name)
    canary_done = deployed(fleet, "us", sha)
    created = second.cluster.live_target()["metadata"]["creationTimestamp"]  # type: ignore[index]
    assert created >= canary_done, (created, canary_done)
    print(f"canary ran {sha[:7]} by {canary_done}; the second step's config created {created}; "
          f"{time.monotonic() - began:.1f}s")  # fmt: skip


def explain(fleet: GateFleet) -> str:
    """Each member's Application operation and hooks, and its gate pods' last words."""
    lines = []
    for name, m in fleet.members.items():
        app = fleet.application(name)
        op = app["status"].get("operationState") or {}
        result = op.get("syncResult") or {}
        hooks = {
            k: (v.get("hookPhase"), v.get("message")) for k, v in hook_results(fleet, name).items()
        }
        lines.append(f"{name}: {op.get('phase')} {op.get('message')!r} {op.get('startedAt')}"
                     f"-{op.get('finishedAt')} synced={result.get('revision')} "
                     f"sync={app['status'].get('sync')} operation={app.get('operation')} "
                     f"op={op.get('operation')} hooks={hooks} uid={m.uid()} "
                     f"selector={m.selector()} history={app['status'].get('history')}")  # fmt: skip
        for pod in m.cluster.kube.list(PODS, namespace="fracctl"):
            states = (pod.get("status") or {}).get("containerStatuses") or [{}]
            lines.append(f"  {pod['metadata']['name']}: {states[0].get('state')}")
        lines.append(f"  ran: {m.runner.ran[-4:]}")
    return "\n".join(lines)


def rev_parse(repo: Path) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


def deployed(fleet: GateFleet, member: str, sha: str) -> str:
    """When the member's Application finished deploying ``sha`` (its history)."""
    history = fleet.application(member)["status"].get("history") or []
    (when,) = [h["deployedAt"] for h in history if h.get("revision") == sha][-1:]
    return str(when)
