"""A change the config applies in place that rolls the MPS daemons is carried guarded.

On the real API server, controllers and KWOK, with the operator simulation rolling its
DaemonSets for exactly the fields upstream does: git adds a second toleration (the
selector unchanged). ``drift`` says ``restarts-daemons`` and names the fractional pod on
the selected node; ``recreate --yes`` refuses while it runs and leaves the daemons
alone; without it, it updates the config in place (same uid) and returns only once every
daemon pod was replaced and every node is ready; a RuntimeClass the cluster lacks is
refused before anything changes; a stop at any step and a rerun converge.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fracctl.core.kube.nodes import is_ready
from fracctl.core.kube.resources import LEASES, NODES, PODS
from fracctl.core.recreate.guard_policy import UPDATE_ARMED
from fracctl.errors import ExitCode
from fracctl.flows.recreate import recreate
from fracctl.sandbox import agents
from tests.support.helpers import GPU_TOLERATIONS, Cluster, commit_all, run_cli
from tests.support.kinds_fixtures import wait_for
from tests.support.recreate_fixtures import OLD, Incident, make_incident

GROUP = "gpu-fractioning.kai.scheduler"
SECOND = {
    "key": "example.org/dedicated",
    "operator": "Equal",
    "value": "ml",
    "effect": "NoSchedule",
}
TOLERATIONS_YAML = (
    "  tolerations:\n"
    "    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    "    - {key: example.org/dedicated, operator: Equal, value: ml, effect: NoSchedule}\n"
)


def git_wants(incident: Incident, extra: str) -> None:
    """Git keeps the live selector and changes only what ``extra`` (YAML under spec) says."""
    f = incident.root / "gitops" / "gpu-fractioning" / "gpufractioningconfig.yaml"
    f.write_text(
        f"apiVersion: {GROUP}/v1alpha1\nkind: GpuFractioningConfig\nmetadata:\n  name: default\n"
        f"spec:\n  nodeSelector:\n    example.org/gpu-class: rtx-pro-6000\n{extra}"
    )
    commit_all(incident.root / "gitops", message="change the config in place")


def daemon_pods(cluster: Cluster) -> dict[str, str]:
    """Each running agent pod's uid, by name."""
    pods = cluster.kube.list(PODS, namespace="gpu-fractioning", label_selector=agents.POD_SELECTOR)
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    }


def settled(cluster: Cluster) -> dict[str, str]:
    """Wait until both daemons run on the selected node and it is ready; their pods."""
    cond = cluster.config.condition

    def ready() -> bool:
        node = cluster.kube.get(NODES, "rtx-pro-6000-0")
        return len(daemon_pods(cluster)) == 2 and is_ready(node, cond)

    wait_for(ready, "both daemons on rtx-pro-6000-0 and the node ready")
    return daemon_pods(cluster)


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    inc = incident_without_b200(cluster, tmp_path)
    git_wants(inc, TOLERATIONS_YAML)
    return inc


def incident_without_b200(cluster: Cluster, tmp_path: Path) -> Incident:
    """The incident with one fraction node: git keeps the class selector, and no other
    node of an allowed class exists (the label guards would refuse it, rightly)."""
    inc = make_incident(cluster, tmp_path, label_b200=False, timeouts={"ready": "60s"})
    cluster.kube.delete(NODES, "b200-0")
    return inc


def refused_then_updated(cluster: Cluster, ns: str, before: dict[str, str],
                         run_recreate: Callable[..., Any]) -> Any:  # fmt: skip
    """``run_recreate()`` refuses while ``ns/trainer-0`` runs, rolling nothing; once the pod
    is gone ``run_recreate("-o", "json")`` updates the config in place: its result."""
    refused = run_recreate()
    assert refused.exit_code == ExitCode.FINDING, refused.output
    assert f"{ns}/trainer-0" in refused.output
    assert daemon_pods(cluster) == before
    cluster.kube.delete(PODS, "trainer-0", ns, grace_period=0)
    wait_for(lambda: cluster.kube.get_or_none(PODS, "trainer-0", ns) is None,
             "the fractional pod gone")  # fmt: skip
    r = run_recreate("-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "updated"
    return r


def cli(incident: Incident, *args: str) -> Any:
    return run_cli("-c", str(incident.config_file), *args)


def assert_updated(incident: Incident, uid: str, before: dict[str, str]) -> None:
    live = incident.cluster.live_target()
    assert live is not None and live["metadata"]["uid"] == uid, "no delete: the same object"
    assert live["spec"]["tolerations"] == [*GPU_TOLERATIONS, SECOND]
    assert live["spec"]["nodeSelector"] == OLD
    after = daemon_pods(incident.cluster)
    assert len(after) == 2 and not set(after.values()) & set(before.values()), (before, after)
    node = incident.cluster.kube.get(NODES, "rtx-pro-6000-0")
    assert is_ready(node, incident.cluster.config.condition)
    for lease in incident.cluster.kube.list(LEASES, namespace="fracctl-test"):
        # Only the guard policy's own Lease stays, unheld and disarmed.
        assert not (lease.get("spec") or {}).get("holderIdentity"), lease
        assert UPDATE_ARMED not in (lease["metadata"].get("annotations") or {}), lease


def test_a_fractional_pod_under_the_roll_is_named_and_refused(incident: Incident) -> None:
    cluster = incident.cluster
    with incident.operator():
        before = settled(cluster)
        cluster.pod("ml-team", "trainer-0", annotations={"gpu-fraction": "0.5"},
                    node="rtx-pro-6000-0")  # fmt: skip
        version = cluster.live_target()["metadata"]["resourceVersion"]  # type: ignore[index]
        drift = cli(incident, "drift")
        assert drift.exit_code == ExitCode.FINDING, drift.output
        assert "GpuFractioningConfig/default: restarts-daemons" in drift.stdout
        assert "restarts the mpsd, fractiond daemons on 1 node(s) (rtx-pro-6000-0)" in drift.stdout
        assert "ml-team/trainer-0" in drift.stdout
        assert "recreate --drain --yes" in drift.stdout
        junit = cli(incident, "drift", "-o", "junit")
        assert 'type="restarts-daemons"' in junit.stdout and "ml-team/trainer-0" in junit.stdout
        r = cli(incident, "recreate", "--yes")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "ml-team/trainer-0" in r.output
        time.sleep(1.0)  # a roll would have begun by now
        assert daemon_pods(cluster) == before, "the daemons were not touched"
    assert cluster.live_target()["metadata"]["resourceVersion"] == version  # type: ignore[index]


def test_without_fractional_pods_it_updates_in_place_and_waits_for_the_roll(
    incident: Incident,
) -> None:
    with incident.operator():
        before = settled(incident.cluster)
        uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        plan = cli(incident, "recreate", "--dry-run")
        assert plan.exit_code == ExitCode.OK, plan.output
        assert "restarts-daemons" in plan.output
        result = recreate(incident.context(), yes=True)
        assert result.outcome == "updated"
        assert result.plan.steps[:5] == ["prove", "guards", "backup", "arm", "update"]
        assert_updated(incident, uid, before)  # at the return: the roll is done, not begun
        assert cli(incident, "drift").exit_code == ExitCode.OK
    audit = (incident.state_dir / "audit.log").read_text().strip().splitlines()
    assert '"outcome": "updated"' in audit[-1]


def test_a_missing_runtime_class_is_refused_before_anything_changes(incident: Incident) -> None:
    git_wants(incident, "  runtimeClassName: nvidia-absent\n")  # no test creates it
    with incident.operator():
        before = settled(incident.cluster)
        was = incident.cluster.live_target()
        r = cli(incident, "recreate", "--yes")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "no RuntimeClass nvidia-absent" in r.output
        assert daemon_pods(incident.cluster) == before
    live = incident.cluster.live_target()  # the operator may write its status meanwhile
    assert live is not None and was is not None
    assert (live["metadata"]["generation"], live["spec"]) == (
        was["metadata"]["generation"],
        was["spec"],
    )


@pytest.mark.parametrize("where", ["planned", "proven", "guarded", "backed-up", "armed",
                                   "updated", "verified", "ready"])  # fmt: skip
def test_stopped_at_each_step_then_rerun_converges(incident: Incident, where: str) -> None:
    def stop_at(step: str) -> None:
        if step == where:
            raise KeyboardInterrupt

    with incident.operator():
        before = settled(incident.cluster)
        uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        with pytest.raises(KeyboardInterrupt):
            recreate(incident.context(), yes=True, boundary=stop_at)
        assert incident.cluster.kube.list(LEASES, namespace="fracctl-test") == []
        result = recreate(incident.context(), yes=True)
        assert result.outcome in ("updated", "ready", "nothing-to-do"), result.outcome
        assert_updated(incident, uid, before)


def test_sigkill_at_random_moments_then_rerun_converges(incident: Incident) -> None:
    seed = int(os.environ.get("FRACCTL_KILL_SEED") or random.randrange(1 << 30))
    print(f"kill seed {seed} (FRACCTL_KILL_SEED={seed} replays it)")
    rng = random.Random(seed)
    env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "2s"}
    with incident.operator():
        before = settled(incident.cluster)
        uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        for _ in range(3):
            proc = subprocess.Popen(
                [sys.executable, "-m", "fracctl", "-c", str(incident.config_file), "recreate",
                 "--yes"],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
            time.sleep(rng.uniform(0.3, 3.0))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        time.sleep(2.5)  # a dead holder's lease expires
        result = recreate(incident.context(timeouts__lock_lease="2s"), yes=True)
        assert result.outcome in ("updated", "ready", "nothing-to-do"), result.outcome
        assert_updated(incident, uid, before)


def test_a_failure_after_the_update_says_what_changed_and_the_way_on_and_back(
    incident: Incident,
) -> None:
    from fracctl.errors import ExternalError

    def fail_at(step: str) -> None:
        if step == "updated":
            raise ExternalError("the API server went away")

    with incident.operator():
        before = settled(incident.cluster)
        uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        with pytest.raises(ExternalError) as failed:
            recreate(incident.context(), yes=True, boundary=fail_at)
        said = str(failed.value)
        assert "may already be updated in place (its uid is unchanged)" in said, said
        (backup,) = sorted((incident.state_dir / "backups").glob("*.yaml"))
        assert f"the original is backed up in {backup}" in said, said
        assert "recreate --yes (it waits for the rollout)" in said, said
        assert "go back: revert the commit in git" in said, said
        result = recreate(incident.context(), yes=True)
        assert result.outcome in ("ready", "nothing-to-do"), result.outcome
        assert_updated(incident, uid, before)
