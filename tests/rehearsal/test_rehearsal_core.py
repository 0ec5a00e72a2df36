"""The rehearsal's judgements on what was read: finalizers, owners, the wait's nodes."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl.core.recreate.rehearsal import (
    Owner,
    cannot_run_agents,
    condition_written,
    foreign_owners,
    owners,
    tolerated,
    unknown_finalizers,
)

OP = "gpu-fractioning.nvidia.com/cleanup-node-conditions"


def obj(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "default", **meta}}


def node(ready: str | None = "True", taints: list[dict[str, str]] | None = None,
         **conds: str) -> dict[str, Any]:  # fmt: skip
    conditions = [{"type": t, "status": s} for t, s in conds.items()]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready, "reason": "KubeletNotReady"})
    return {"metadata": {"name": "n"}, "spec": {"taints": taints or []},
            "status": {"conditions": conditions}}  # fmt: skip


def test_only_the_operators_finalizer_is_known() -> None:
    assert unknown_finalizers(obj(finalizers=[OP]), [OP]) == []
    assert unknown_finalizers(obj(finalizers=[OP, "example.com/hold"]), [OP]) == [
        "example.com/hold"
    ]
    assert unknown_finalizers(obj(), [OP]) == []


def test_owner_marks_of_flux_and_argocd() -> None:
    flux = obj(labels={"kustomize.toolkit.fluxcd.io/name": "gpu-fractioning",
                       "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})  # fmt: skip
    assert owners(flux) == [Owner("flux", "gpu-fractioning", "flux-system")]
    tracking = "gpu-fractioning:gpu-fractioning.kai.scheduler/GpuFractioningConfig:/default"
    argo = obj(annotations={"argocd.argoproj.io/tracking-id": tracking})
    assert owners(argo) == [Owner("argocd", "gpu-fractioning")]
    other_ns = obj(annotations={"argocd.argoproj.io/tracking-id": "team_app:g/K:/default"})
    assert owners(other_ns) == [Owner("argocd", "app", "team")]


def test_foreign_owners_leave_out_the_configured_one() -> None:
    flux = obj(labels={"kustomize.toolkit.fluxcd.io/name": "gpu-fractioning",
                       "kustomize.toolkit.fluxcd.io/namespace": "flux-system"})  # fmt: skip
    assert foreign_owners(flux, Owner("flux", "gpu-fractioning", "flux-system")) == []
    assert foreign_owners(flux, Owner("flux", "other", "flux-system")) == owners(flux)
    assert foreign_owners(flux, Owner("argocd", "gpu-fractioning")) == owners(flux)
    assert foreign_owners(flux, None) == owners(flux)
    assert str(owners(flux)[0]) == "Flux Kustomization flux-system/gpu-fractioning"


def test_the_readiness_condition_must_be_written_on_the_selected_nodes() -> None:
    cond = "gpu-fractioning.nvidia.com/Ready"
    assert condition_written([node(**{cond: "False"})], cond) == (True, [])
    older = node(**{"gpu-sharing.nvidia.com/Ready": "True"})
    assert condition_written([older], cond) == (False, ["gpu-sharing.nvidia.com/Ready"])
    assert condition_written([node()], cond) == (False, [])


@pytest.mark.parametrize(
    ("taint", "tolerations", "ok"),
    [
        ({"key": "nvidia.com/gpu", "effect": "NoSchedule"},
         [{"key": "nvidia.com/gpu", "operator": "Exists"}], True),
        ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
         [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}], True),
        ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
         [{"key": "nvidia.com/gpu", "value": "other", "effect": "NoSchedule"}], False),
        ({"key": "nvidia.com/gpu", "effect": "NoExecute"},
         [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], False),
        ({"key": "anything", "effect": "NoSchedule"}, [{"operator": "Exists"}], True),
        ({"key": "anything", "effect": "NoSchedule"}, [], False),
    ],
)  # fmt: skip
def test_tolerations_follow_kubernetes_rules(
    taint: dict[str, str], tolerations: list[dict[str, str]], ok: bool
) -> None:
    assert tolerated(taint, tolerations) is ok


def test_what_keeps_the_agents_off_a_node() -> None:
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    assert (
        cannot_run_agents(node(taints=[gpu]), [{"key": "nvidia.com/gpu", "operator": "Exists"}])
        == []
    )
    assert cannot_run_agents(node(taints=[gpu]), []) == [
        "taint nvidia.com/gpu=present:NoSchedule is not tolerated by the agents"
    ]
    assert cannot_run_agents(node(ready="False"), []) == [
        "its kubelet reports Ready=False (KubeletNotReady)"
    ]
    assert cannot_run_agents(node(ready=None), []) == ["its kubelet reports no Ready condition"]
    # The DaemonSet controller tolerates the node life-cycle taints on its own.
    cordoned = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    prefer = {"key": "x", "effect": "PreferNoSchedule"}
    assert cannot_run_agents(node(taints=[cordoned, prefer]), []) == []
