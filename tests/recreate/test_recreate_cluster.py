"""`fracctl recreate` against the real API server: converge, refuse, resume, lock, time out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fracctl.core.kube.nodes import is_ready
from fracctl.core.kube.resources import LEASES, NODES
from fracctl.errors import ExitCode, ExternalError, Refused, TimedOut, Unsafe, UsageError
from fracctl.flows.recreate import BOUNDARIES, recreate
from fracctl.flows.recreate.window import expected
from fracctl.sandbox.operator_sim import NEVER_READY
from tests.support.argocd_standin import ArgoCDStandIn
from tests.support.git_reads import count_git_reads
from tests.support.helpers import Cluster, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident, make_incident


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


def deletes(incident: Incident) -> int:
    return incident.cluster.kube.calls["DELETE gpufractioningconfigs"]


def assert_converged(incident: Incident) -> None:
    live = incident.cluster.live_target()
    assert live is not None
    assert live["spec"]["nodeSelector"] == NEW
    assert not live["metadata"].get("deletionTimestamp")
    cond = incident.cluster.config.condition
    nodes = {n["metadata"]["name"]: n for n in incident.cluster.kube.list(NODES)}
    assert is_ready(nodes["rtx-pro-6000-0"], cond)
    assert is_ready(nodes["b200-0"], cond)
    assert not is_ready(nodes["h200-0"], cond)
    assert incident.cluster.kube.list(LEASES, namespace="fracctl-test") == []


def backups(incident: Incident) -> list[Path]:
    return sorted((incident.state_dir / "backups").glob("*.yaml"))


def test_recreate_converges_and_records(incident: Incident) -> None:
    original = incident.cluster.live_target()
    assert original is not None
    with incident.operator():
        result = recreate(incident.context(), yes=True)
    assert result.outcome == "recreated"
    assert_converged(incident)
    assert deletes(incident) == 1
    (backup,) = backups(incident)
    assert original["metadata"]["uid"] in backup.read_text()
    assert "rtx-pro-6000" in backup.read_text()
    audit = (incident.state_dir / "audit.log").read_text().strip().splitlines()
    assert '"outcome": "recreated"' in audit[-1]
    assert "rtx-pro-6000" in audit[-1] and "gpu-fractions" in audit[-1]
    events = incident.cluster.kube.list(
        __import__("fracctl.core.kube.resources", fromlist=["EVENTS"]).EVENTS, namespace="default"
    )
    new_uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    assert any(
        e["involvedObject"].get("uid") == new_uid and e["reason"] == "Recreated" for e in events
    )


def test_a_run_exports_and_renders_git_once(
    incident: Incident, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan, the guards, the rehearsal and the verification read one rendering."""
    reads = count_git_reads(monkeypatch)
    ctx = incident.context()
    with incident.operator():
        assert recreate(ctx, yes=True).outcome == "recreated"
    assert len(reads.exports) == 1 and len(reads.renders) == 1, reads
    ctx.close()


def test_after_the_last_ready_node_the_run_reads_nothing(incident: Incident) -> None:
    """What follows the wait is the record (an audit line, one Event) and the lock's release.

    The Event names the object the run verified: no read of it, of the nodes or of the
    agents between the last ready node and the return.
    """
    ctx = incident.context()
    at_ready: dict[str, int] = {}

    def boundary(step: str) -> None:
        if step == "ready":
            at_ready.update(ctx.kube.calls)

    with incident.operator():
        result = recreate(ctx, yes=True, boundary=boundary)
    assert result.outcome == "recreated"
    after = {k: n - at_ready.get(k, 0) for k, n in ctx.kube.calls.items() if n > at_ready.get(k, 0)}
    # The lock's release reads its own Lease (it gives up only a Lease still its own), and
    # its renewal may fall in between: nothing else is read.
    reads = {k for k in after if k.startswith(("GET", "WATCH")) and k != "GET leases"}
    assert reads == set(), after
    assert after.get("POST events") == 1, after
    new_uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    events = incident.cluster.kube.list(
        __import__("fracctl.core.kube.resources", fromlist=["EVENTS"]).EVENTS, namespace="default"
    )
    assert [e["reason"] for e in events if e["involvedObject"].get("uid") == new_uid] == [
        "Recreated"
    ]


# "upgraded" is the helm backend's boundary (this run's apply backend never reaches it):
# tests/helm/ stops the helm backend there. "armed" and "updated" are an in-place run's:
# tests/recreate/test_restarts_daemons_cluster.py stops it there.
IN_PLACE_ONLY = ("upgraded", "armed", "updated")


@pytest.mark.parametrize("where", [b for b in BOUNDARIES if b not in IN_PLACE_ONLY])
def test_interrupted_at_every_boundary_then_rerun_converges(incident: Incident, where: str) -> None:
    original_uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]

    def stop_at(step: str) -> None:
        if step == where:
            raise KeyboardInterrupt

    with incident.operator():
        with pytest.raises(KeyboardInterrupt):
            recreate(incident.context(), yes=True, boundary=stop_at)
        assert incident.cluster.kube.list(LEASES, namespace="fracctl-test") == []
        result = recreate(incident.context(), yes=True)
    assert result.outcome in ("recreated", "ready", "nothing-to-do"), result.outcome
    assert_converged(incident)
    assert deletes(incident) == 1, "the original object is deleted exactly once"
    assert any(original_uid in p.read_text() for p in backups(incident))


def test_sigkill_during_delete_then_rerun_converges(incident: Incident) -> None:
    env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "2s", "FRACCTL_TIMEOUTS_DELETE": "60s"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fracctl", "-c", str(incident.config_file), "recreate", "--yes"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # no operator runs: the delete hangs on the finalizer
            live = incident.cluster.live_target()
            if live is not None and live["metadata"].get("deletionTimestamp"):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the subprocess never deleted the object")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    ctx = incident.context(timeouts__lock_lease="2s")
    time.sleep(2.5)  # the dead holder's lease expires
    operator = incident.operator()

    def start_operator(step: str) -> None:  # only once the rerun has judged the cluster
        if step == "planned":
            operator.__enter__()

    try:
        result = recreate(ctx, yes=True, boundary=start_operator)
    finally:
        operator.__exit__(None, None, None)
    assert result.plan.reason == "resume-terminating"
    assert deletes(incident) == 0, "the rerun deletes nothing"
    assert_converged(incident)
    assert backups(incident), "the backup of the original object exists"


def test_a_second_run_exits_5_naming_the_holder(incident: Incident) -> None:
    first_error: list[BaseException] = []

    def first() -> None:  # blocks on the finalizer: no operator yet
        try:
            recreate(incident.context(), yes=True)
        except BaseException as e:  # noqa: BLE001
            first_error.append(e)

    thread = threading.Thread(target=first)
    thread.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not incident.cluster.kube.list(
        LEASES, namespace="fracctl-test"
    ):
        time.sleep(0.05)
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes")
    assert r.exit_code == ExitCode.LOCKED, r.output
    assert "holds the lock Lease fracctl-test/fracctl-recreate" in r.stderr
    assert f"pid {os.getpid()}" in r.stderr and "since" in r.stderr
    with incident.operator():
        thread.join(timeout=30)
    assert not first_error, first_error
    assert_converged(incident)


def test_stale_lease_is_taken_over_with_a_warning(
    incident: Incident, capsys: pytest.CaptureFixture[str]
) -> None:
    from datetime import datetime, timedelta, timezone

    from fracctl.core.recreate.lock import lease_spec

    incident.cluster.namespace("fracctl-test")
    old = datetime.now(timezone.utc) - timedelta(minutes=5)
    incident.cluster.kube.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "fracctl-recreate", "namespace": "fracctl-test"},
            "spec": lease_spec(me="ops@bastion pid 1", now=old, duration=60),
        },
    )
    with incident.operator():
        recreate(incident.context(), yes=True)
    assert "taking over the expired lock Lease" in capsys.readouterr().err
    assert_converged(incident)


def test_live_lease_of_another_holder_refuses(incident: Incident) -> None:
    from datetime import datetime, timezone

    from fracctl.core.recreate.lock import lease_spec

    incident.cluster.namespace("fracctl-test")
    incident.cluster.kube.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "fracctl-recreate", "namespace": "fracctl-test"},
            "spec": lease_spec(
                me="ops@bastion pid 1", now=datetime.now(timezone.utc), duration=600
            ),
        },
    )
    with pytest.raises(Unsafe, match="ops@bastion pid 1, since"):
        recreate(incident.context(), yes=True)
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == OLD
    assert deletes(incident) == 0


def test_finalizer_never_released_exits_4_then_resumes(
    incident: Incident, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRACCTL_TIMEOUTS_DELETE", "3s")
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes")  # no operator runs
    assert r.exit_code == ExitCode.TIMEOUT, r.output
    assert "still terminating" in r.stderr
    assert "gpu-fractioning.nvidia.com/cleanup-node-conditions" in r.stderr
    assert "is it running?" in r.stderr
    audit = (incident.state_dir / "audit.log").read_text().splitlines()
    assert '"outcome": "failed: ' in audit[-1] and "still terminating" in audit[-1]
    with incident.operator():
        result = recreate(incident.context(), yes=True)
    assert result.plan.reason in ("resume-terminating", "resume-missing")
    assert_converged(incident)
    assert deletes(incident) == 0, "the rerun deletes nothing: the first run did"


def test_node_that_never_becomes_ready_exits_4_naming_it(incident: Incident) -> None:
    incident.cluster.kube.patch(
        NODES, "b200-0", {"metadata": {"annotations": {NEVER_READY: "never-ready"}}}
    )
    with incident.operator():
        with pytest.raises(TimedOut) as e:
            recreate(incident.context(timeouts__ready="3s"), yes=True)
        assert "b200-0: False (MPSDaemonCrashLoop" in str(e.value)
        assert "rtx-pro-6000-0" not in str(e.value)
        assert e.value.exit_code == ExitCode.TIMEOUT
        incident.cluster.kube.patch(
            NODES, "b200-0", {"metadata": {"annotations": {NEVER_READY: None}}}
        )
        incident.cluster.set_ready("b200-0", True)
        result = recreate(incident.context(), yes=True)
    assert result.plan.reason in ("resume-wait-ready", "nothing-to-do")
    assert_converged(incident)
    assert deletes(incident) == 1


def test_guards_refuse_and_change_nothing(cluster: Cluster, tmp_path: Path) -> None:
    incident = make_incident(cluster, tmp_path, label_b200=False)
    before = cluster.live_target()
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "fracctl nodes label b200-0" in r.stderr
    after = cluster.live_target()
    assert after is not None and before is not None
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["spec"]["nodeSelector"] == OLD
    assert cluster.kube.list(LEASES, namespace="fracctl-test") == []
    assert not backups(incident)


def test_fractional_pod_anywhere_refuses(incident: Incident) -> None:
    incident.cluster.pod(
        "ml-team", "train-0", annotations={"gpu-fraction": "0.5"}, node="rtx-pro-6000-0"
    )
    with pytest.raises(Refused, match="train-0"):
        recreate(incident.context(), yes=True)
    assert deletes(incident) == 0


def test_dry_run_prints_the_plan_and_changes_nothing(incident: Incident) -> None:
    before = incident.cluster.live_target()
    r = run_cli("-c", str(incident.config_file), "recreate", "--dry-run", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    data = r.json
    assert data["outcome"] == "dry-run"
    steps = [s["step"] for s in data["plan"]["steps"]]
    assert steps[:5] == ["prove", "guards", "backup", "delete", "wait-gone"]
    assert data["plan"]["before"] == OLD and data["plan"]["after"] == NEW
    assert data["guards"]["checks"]
    after = incident.cluster.live_target()
    assert after == before
    assert incident.cluster.kube.list(LEASES, namespace="fracctl-test") == []
    assert not (incident.state_dir / "backups").exists()
    text = run_cli("-c", str(incident.config_file), "recreate", "--dry-run")
    assert text.exit_code == ExitCode.OK, text.output
    assert "delete the live object" in text.stdout
    assert "MPS daemons restart on" in text.stdout
    # The window last measured for the backend, labelled as a measurement, not a promise.
    said = expected("apply", drain=False)
    assert said is not None and data["expected_window"] == said
    assert f"  {said}" in text.stdout.splitlines()
    assert "measured on" in said and "on the sandbox" in said and "not a promise" in said


def test_no_terminal_and_no_yes_is_refused(incident: Incident) -> None:
    r = run_cli("-c", str(incident.config_file), "recreate")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "--yes" in r.stderr
    assert deletes(incident) == 0


def test_declined_confirmation_changes_nothing(incident: Incident) -> None:
    ctx = incident.context()
    ctx.interactive = True
    with pytest.raises(Refused, match="not confirmed"):
        recreate(ctx, confirm=lambda planned: False)
    assert deletes(incident) == 0
    assert incident.cluster.kube.list(LEASES, namespace="fracctl-test") == []


def test_missing_desired_object_refuses(incident: Incident) -> None:
    with pytest.raises(Refused, match="git has no GpuFractioningConfig/default"):
        recreate(incident.context(), yes=True, desired_objects=[])
    assert deletes(incident) == 0


def test_argocd_backend_without_app_is_usage_error(incident: Incident) -> None:
    with pytest.raises(UsageError, match="application name"):
        recreate(incident.context(), yes=True, backend="argocd")


def test_argocd_backend_converges(incident: Incident) -> None:
    desired = incident.desired()
    with ArgoCDStandIn(kubeconfig=incident.cluster.kubeconfig, manifests=desired) as argo:
        ctx = incident.context(
            env={"ARGOCD_AUTH_TOKEN": argo.token},
            argocd__server=argo.url,
            argocd__app=argo.app_name,
        )
        with incident.operator():
            result = recreate(ctx, yes=True, backend="argocd")
        assert argo.sync_requests, "Argo CD was asked to sync"
    assert result.outcome == "recreated"
    assert any("Argo CD sync" in n for n in result.notes)
    assert_converged(incident)


@pytest.mark.parametrize("quirk", ["skip", "stale-manifests"])
def test_argocd_succeeded_but_not_applied_is_caught(incident: Incident, quirk: str) -> None:
    desired = incident.desired()
    before = [{**desired[0], "spec": {"nodeSelector": OLD}}]
    with ArgoCDStandIn(
        kubeconfig=incident.cluster.kubeconfig, manifests=before, quirk=quirk
    ) as argo:
        argo.set_manifests(desired)  # git moved on; a stale cache still serves `before`
        ctx = incident.context(
            env={"ARGOCD_AUTH_TOKEN": argo.token},
            argocd__server=argo.url,
            argocd__app=argo.app_name,
        )
        with incident.operator():
            with pytest.raises(ExternalError) as e:
                recreate(ctx, yes=True, backend="argocd")
            assert "Argo CD reported Succeeded but the live object differs" in str(e.value)
            assert argo.token not in str(e.value)
            # The documented way out: create it directly, and the rerun converges.
            result = recreate(incident.context(), yes=True, backend="apply")
    assert result.outcome == "recreated"
    assert_converged(incident)
    # The original is deleted once; with stale manifests Argo CD created a wrong incarnation
    # (the old selector), which the rerun judges needs-recreate and replaces.
    assert deletes(incident) == (1 if quirk == "skip" else 2)


def test_cli_recreate_end_to_end(incident: Incident) -> None:
    with incident.operator():
        r = run_cli("-c", str(incident.config_file), "recreate", "--yes", "-o", "json")
        assert r.exit_code == ExitCode.OK, r.output
        assert r.json["outcome"] == "recreated"
        assert set(r.json["ready"]["nodes"]) == {"rtx-pro-6000-0", "b200-0"}
        again = run_cli("-c", str(incident.config_file), "recreate", "--yes")
        assert again.exit_code == ExitCode.OK, again.output
        assert "nothing-to-do" in again.stdout
        w = run_cli("-c", str(incident.config_file), "wait", "-o", "json")
        assert w.exit_code == ExitCode.OK, w.output
        assert set(w.json["nodes"]) == {"rtx-pro-6000-0", "b200-0"}
    assert_converged(incident)


def test_wait_without_object_refuses(incident: Incident) -> None:
    incident.cluster.wipe_target()
    r = run_cli("-c", str(incident.config_file), "wait")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "does not exist" in r.stderr


def test_a_lock_lost_mid_run_stops_before_the_delete(incident: Incident) -> None:
    def steal(step: str) -> None:
        if step == "guarded":  # another run takes the Lease over while we are planning
            lease = incident.cluster.kube.get(LEASES, "fracctl-recreate", "fracctl-test")
            lease["spec"]["holderIdentity"] = "ops@bastion pid 7 run abc123"
            incident.cluster.kube.replace(LEASES, lease)

    with pytest.raises(Unsafe, match="lost the lock Lease .*ops@bastion pid 7"):
        recreate(incident.context(), yes=True, boundary=steal)
    assert deletes(incident) == 0
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == OLD
    lease = incident.cluster.kube.get(LEASES, "fracctl-recreate", "fracctl-test")
    assert lease["spec"]["holderIdentity"] == "ops@bastion pid 7 run abc123", "not released"


def test_unwritable_backup_stops_before_the_delete(incident: Incident) -> None:
    blocker = incident.root / "not-a-dir"
    blocker.write_text("")
    ctx = incident.context(recreate__state_dir=str(blocker))
    with pytest.raises(ExternalError, match="cannot write the backup .* nothing was deleted"):
        recreate(ctx, yes=True)
    assert deletes(incident) == 0
    assert incident.cluster.live_target()["spec"]["nodeSelector"] == OLD  # type: ignore[index]


def test_dry_run_says_each_proof_once(incident: Incident) -> None:
    """The plan lists the proofs; nothing else repeats them."""
    r = run_cli("-c", str(incident.config_file), "recreate", "--dry-run")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.output.count("proven: may get gpufractioningconfigs default") == 1, r.output
