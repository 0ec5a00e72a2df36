"""The rehearsal's second round on the real API server: what follows the delete.

Each case is an ordinary state in which the delete could not finish, the recreate would
be undone, or the wait would have nothing to wait for. ``recreate --yes`` and
``--dry-run`` must refuse before any change: exit non-zero, the same uid, no
deletionTimestamp, no DELETE call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.core.kube.resources import DEPLOYMENTS, NODES
from fracctl.errors import ExitCode, Refused
from fracctl.flows.recreate import recreate
from tests.support.helpers import SMP, Cluster, ref_for, run_cli
from tests.support.recreate_fixtures import NEW, Incident, make_incident


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


def uid_of(incident: Incident) -> str:
    live = incident.cluster.live_target()
    assert live is not None
    return str(live["metadata"]["uid"])


def refuses(incident: Incident, needle: str, *extra: str) -> str:
    """``recreate --dry-run`` and ``--yes`` both refuse, naming ``needle``; nothing changed."""
    uid = uid_of(incident)
    said = ""
    for mode in ("--dry-run", "--yes"):
        r = run_cli("-c", str(incident.config_file), *extra, "recreate", mode)
        assert r.exit_code != ExitCode.OK, r.output
        assert needle in r.stderr, r.stderr
        assert "Traceback" not in r.output
        said = r.stderr
    live = incident.cluster.live_target()
    assert live is not None and live["metadata"]["uid"] == uid
    assert not live["metadata"].get("deletionTimestamp")
    assert incident.cluster.kube.calls["DELETE gpufractioningconfigs"] == 0
    return said


def add_finalizer(incident: Incident, name: str) -> None:
    ref = ref_for(incident.cluster.config)
    live = incident.cluster.live_target()
    assert live is not None
    finalizers = [*live["metadata"].get("finalizers", []), name]
    incident.cluster.kube.patch(ref, "default", {"metadata": {"finalizers": finalizers}})


def test_an_unknown_finalizer_refuses_naming_it(incident: Incident) -> None:
    add_finalizer(incident, "example.com/hold")
    said = refuses(incident, "example.com/hold")
    assert "nothing fracctl knows releases" in said
    # cleanup: the API server keeps a finalizer until it is removed
    incident.cluster.kube.patch(
        ref_for(incident.cluster.config), "default",
        {"metadata": {"finalizers": [incident.cluster.config.target.finalizer]}},
    )  # fmt: skip


def test_the_operator_is_proven_even_without_its_finalizer(incident: Incident) -> None:
    cluster = incident.cluster
    cluster.kube.patch(ref_for(cluster.config), "default", {"metadata": {"finalizers": None}})
    k = cluster.config.cluster
    cluster.kube.delete(DEPLOYMENTS, k.operator_deployment, k.agent_namespace)
    said = refuses(incident, "does not exist")
    assert "Nothing would clear the readiness condition" in said


def test_another_gitops_owner_refuses(incident: Incident) -> None:
    """Flux is configured with Kustomization gpu-fractioning; another one applied the object."""
    cluster = incident.cluster
    marks = {"kustomize.toolkit.fluxcd.io/name": "platform",
             "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}  # fmt: skip
    cluster.kube.patch(ref_for(cluster.config), "default", {"metadata": {"labels": marks}})
    incident.edit_config(recreate={"backend": "flux"}, flux={"kustomization": "gpu-fractioning"})
    said = refuses(incident, "Flux Kustomization flux-system/platform")
    assert "not the configured Flux Kustomization flux-system/gpu-fractioning" in said
    assert "two owners would undo each other" in said


def test_a_direct_apply_names_the_marks_it_goes_past(incident: Incident) -> None:
    cluster = incident.cluster
    tracking = "gpu-fractioning:gpu-fractioning.kai.scheduler/GpuFractioningConfig:/default"
    notes = {"argocd.argoproj.io/tracking-id": tracking}
    cluster.kube.patch(ref_for(cluster.config), "default", {"metadata": {"annotations": notes}})
    r = run_cli("-c", str(incident.config_file), "recreate", "--dry-run", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert (
        "a direct apply: the live object names Argo CD Application gpu-fractioning"
        in (r.json["proofs"])
    )


def test_a_node_of_the_new_selection_that_is_not_ready_refuses(incident: Incident) -> None:
    down = {"type": "Ready", "status": "False", "reason": "KubeletNotReady",
            "message": "container runtime is down",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    incident.cluster.stop_kubelet("b200-0")
    incident.cluster.kube.patch(NODES, "b200-0", {"status": {"conditions": [down]}},
                                content_type=SMP, subresource="status")  # fmt: skip
    said = refuses(incident, "b200-0: its kubelet reports Ready=False (KubeletNotReady)")
    assert "the wait that follows the recreate could not end" in said


def test_a_taint_the_agents_do_not_tolerate_refuses(incident: Incident) -> None:
    taint = {"key": "example.org/maintenance", "value": "true", "effect": "NoSchedule"}
    incident.cluster.kube.patch(NODES, "b200-0", {"spec": {"taints": [taint]}})
    said = refuses(incident, "taint example.org/maintenance=true:NoSchedule")
    assert "tolerations from git's config" in said


def test_a_readiness_condition_nobody_writes_refuses(incident: Incident) -> None:
    incident.edit_config(readiness={"condition": "example.org/Ready"})
    said = refuses(incident, "carries the readiness condition example.org/Ready")
    assert "they carry gpu-fractioning.nvidia.com/Ready" in said


def test_a_fractional_pod_scheduled_after_the_guards_stops_the_delete(
    incident: Incident,
) -> None:
    uid = uid_of(incident)

    def schedule_one(step: str) -> None:
        if step == "guarded":  # while a person reads the plan
            incident.cluster.pod("ml-team", "late-0", annotations={"gpu-fraction": "0.5"},
                                 node="rtx-pro-6000-0")  # fmt: skip

    with incident.operator(), pytest.raises(Refused, match="appeared since the guards ran") as e:
        recreate(incident.context(), yes=True, boundary=schedule_one)
    assert "ml-team/late-0" in str(e.value) and "nothing was deleted" in str(e.value)
    live = incident.cluster.live_target()
    assert live is not None and live["metadata"]["uid"] == uid
    assert incident.cluster.kube.calls["DELETE gpufractioningconfigs"] == 0


def test_the_positive_control_converges(incident: Incident) -> None:
    with incident.operator():
        r = run_cli("-c", str(incident.config_file), "recreate", "--yes", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    proofs: list[Any] = r.json["proofs"]
    assert any("is released by the gpu-fractioning operator" in p for p in proofs), proofs
    assert "a direct apply: the live object names no GitOps owner" in proofs, proofs
    assert any("are Ready and their taints are tolerated" in p for p in proofs), proofs
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
