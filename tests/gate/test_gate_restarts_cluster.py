"""The gate around a sync that applies an in-place change which rolls the MPS daemons.

The revision keeps the live selector and adds a toleration: nothing is deleted, but the
operator rolls both daemons. PreSync refuses while a fractional pod runs on a selected
node; otherwise it arms the guard policy for the update and hands the lock on, the sync
applies the object in place (played here as a server-side apply), and PostSync returns
only once every daemon pod was replaced and the nodes are ready.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fracctl.core.kube.resources import LEASES
from fracctl.core.recreate.guard_policy import UPDATE_ARMED
from fracctl.errors import ExitCode
from fracctl.flows import gate
from fracctl.flows.engines import clean_desired
from fracctl.flows.render import to_yaml
from tests.recreate.test_restarts_daemons_cluster import (
    SECOND,
    daemon_pods,
    incident_without_b200,
    settled,
)
from tests.support.helpers import GPU_TOLERATIONS, Cluster, run_cli
from tests.support.recreate_fixtures import OLD, Incident

NS = "fracctl-test"


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return incident_without_b200(cluster, tmp_path)


def revision(incident: Incident) -> Path:
    """The synced revision: the live selector, a second toleration."""
    objects = incident.desired()
    objects[0]["spec"]["nodeSelector"] = OLD
    objects[0]["spec"]["tolerations"] = [*GPU_TOLERATIONS, SECOND]
    folder = incident.root / "desired"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(to_yaml(objects))
    return folder


def lease(incident: Incident) -> dict:  # type: ignore[type-arg]
    return incident.cluster.kube.get_or_none(LEASES, "fracctl-recreate", NS) or {}


def test_pre_sync_refuses_while_a_fractional_pod_runs_where_the_daemons_roll(
    incident: Incident,
) -> None:
    folder = revision(incident)
    log = incident.root / "termination-log"
    log.write_text("")
    with incident.operator():
        before = settled(incident.cluster)
        incident.cluster.pod("ml-team", "trainer-0", annotations={"gpu-fraction": "0.5"},
                             node="rtx-pro-6000-0")  # fmt: skip
        r = run_cli("-c", str(incident.config_file), "gate", "pre-sync", "--desired",
                    str(folder), "--termination-log", str(log))  # fmt: skip
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "ml-team/trainer-0 on rtx-pro-6000-0" in log.read_text()
        assert daemon_pods(incident.cluster) == before
    assert lease(incident) == {} or not (lease(incident).get("spec") or {}).get("holderIdentity")


def test_the_halves_arm_the_update_and_wait_for_the_roll(incident: Incident) -> None:
    folder = revision(incident)
    t = incident.cluster.config.target
    with incident.operator():
        before = settled(incident.cluster)
        uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
        first = gate.pre_sync(incident.context(), gate.read_desired(folder))
        assert first.locked and first.reason == "restarts-daemons", first
        assert "armed for this revision's update" in first.lines[-1]
        held = lease(incident)
        assert held["spec"]["holderIdentity"] == gate.gate_identity(incident.context())
        assert held["metadata"]["annotations"][UPDATE_ARMED] == uid
        assert daemon_pods(incident.cluster) == before, "nothing rolled before the sync"
        (obj,) = gate.read_desired(folder)
        incident.cluster.kube.apply(t.ref, clean_desired(obj))  # the sync phase
        second = gate.post_sync(incident.context(), gate.read_desired(folder))
        assert second.locked and second.ready == ["rtx-pro-6000-0"], second
        after = daemon_pods(incident.cluster)
    live = incident.cluster.live_target()
    assert live is not None and live["metadata"]["uid"] == uid
    assert live["spec"]["tolerations"] == [*GPU_TOLERATIONS, SECOND]
    assert len(after) == 2 and not set(after.values()) & set(before.values())
    assert not (lease(incident).get("spec") or {}).get("holderIdentity")
    assert UPDATE_ARMED not in (lease(incident).get("metadata") or {}).get("annotations", {})
