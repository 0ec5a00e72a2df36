"""The CRD's CEL rules and finalizer, enforced by the real API server."""

from __future__ import annotations

import pytest

from fracctl.errors import Invalid
from tests.support.helpers import Cluster, ref_for

SELECTOR_MESSAGE = (
    "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
)


def test_updating_node_selector_is_rejected_with_the_cel_message(cluster: Cluster) -> None:
    cluster.target({"example.org/gpu-class": "rtx-pro-6000"})
    with pytest.raises(Invalid) as e:
        cluster.kube.patch(
            ref_for(cluster.config),
            "default",
            {"spec": {"nodeSelector": {"example.org/gpu-fractions": "enabled"}}},
        )
    assert e.value.status.code == 422
    assert e.value.status.reason == "Invalid"
    messages = [c.message for c in e.value.causes]
    assert any(SELECTOR_MESSAGE in m for m in messages), messages
    assert any(c.field == "spec.nodeSelector" for c in e.value.causes)
    live = cluster.live_target()
    assert live is not None
    assert live["spec"]["nodeSelector"] == {"example.org/gpu-class": "rtx-pro-6000"}


def test_other_fields_update_in_place(cluster: Cluster) -> None:
    cluster.target({"example.org/gpu-class": "rtx-pro-6000"})
    out = cluster.kube.patch(
        ref_for(cluster.config), "default", {"spec": {"runtimeClassName": "nvidia-cdi"}}
    )
    assert out["spec"]["runtimeClassName"] == "nvidia-cdi"


def test_a_second_object_with_another_name_is_rejected(cluster: Cluster) -> None:
    with pytest.raises(Invalid) as e:
        cluster.target({"a": "b"}, name="b200")
    assert "GpuFractioningConfig must be named 'default'" in str(e.value)


def test_node_selector_is_required(cluster: Cluster) -> None:
    t = cluster.config.target
    with pytest.raises(Invalid) as e:
        cluster.kube.create(
            ref_for(cluster.config),
            {
                "apiVersion": t.api_version,
                "kind": t.kind,
                "metadata": {"name": "default"},
                "spec": {},
            },
        )
    assert any(c.field == "spec.nodeSelector" for c in e.value.causes)


def test_delete_with_finalizer_stays_terminating_until_released(cluster: Cluster) -> None:
    ref = ref_for(cluster.config)
    cluster.target({"a": "b"})
    cluster.kube.patch(
        ref, "default", {"metadata": {"finalizers": [cluster.config.target.finalizer]}}
    )
    cluster.kube.delete(ref, "default")
    live = cluster.live_target()
    assert live is not None
    assert live["metadata"]["deletionTimestamp"]
    cluster.kube.patch(ref, "default", {"metadata": {"finalizers": None}})
    assert cluster.live_target() is None
