"""The test playing a node's kubelet, where KWOK does not: its Ready report."""

from __future__ import annotations

from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import NODES

SMP = "application/strategic-merge-patch+json"


#: What a kubelet reports of a healthy node, for a node whose kubelet the test plays.
KUBELET_READY = {
    "type": "Ready",
    "status": "True",
    "reason": "KubeletReady",
    "message": "kubelet is posting ready status (written by the test, playing the kubelet)",
    "lastHeartbeatTime": "2026-01-01T00:00:00Z",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}


def report_ready(kube: Kube, name: str, *, lifecycle_controller: bool = True) -> dict[str, Any]:
    """The node's kubelet reports Ready once; the node lifecycle controller then lifts
    the ``node.kubernetes.io/not-ready`` taint admission put on it at registration.

    ``lifecycle_controller=False`` (an API server alone): the taint is lifted here.
    """
    import time

    from fracctl.core.clock import utc_timestamp

    # The heartbeat is now: the node lifecycle controller judges a node by when its
    # heartbeat last changed, and a node of the same name may have lived before.
    now = utc_timestamp()
    ready = {**KUBELET_READY, "lastHeartbeatTime": now, "lastTransitionTime": now}
    node = kube.patch(
        NODES, name, {"status": {"conditions": [ready]}},
        content_type=SMP, subresource="status",
    )  # fmt: skip
    if not lifecycle_controller:
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
        return dict(kube.patch(NODES, name, {"spec": {"taints": kept}}))
    deadline = time.monotonic() + 30
    while True:
        node = kube.get(NODES, name)
        taints = (node.get("spec") or {}).get("taints") or []
        if not any(t.get("key") == "node.kubernetes.io/not-ready" for t in taints):
            return node
        if time.monotonic() > deadline:
            raise AssertionError(f"the not-ready taint stayed on {name}")
        time.sleep(0.05)
