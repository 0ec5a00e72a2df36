"""The node conditions the operator simulation writes, as the operator's controller does.

A condition is written only when it says something new (status, reason or message), its
``lastTransitionTime`` kept while the status holds; a removal deletes that entry alone.
"""

from __future__ import annotations

from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import NODES

SMP = "application/strategic-merge-patch+json"


def set_condition(
    kube: Any, node: dict[str, Any], cond: str, verdict: tuple[str, str, str]
) -> None:
    """Write the node's condition, unless it already says so (PatchNodeCondition)."""
    have = condition(node, cond)
    if have and (have.get("status"), have.get("reason"), have.get("message")) == verdict:
        return
    stamp = utc_timestamp()
    since = have.get("lastTransitionTime") if have and have.get("status") == verdict[0] else None
    kube.patch(
        NODES,
        node["metadata"]["name"],
        {
            "status": {
                "conditions": [
                    {
                        "type": cond,
                        "status": verdict[0],
                        "reason": verdict[1],
                        "message": verdict[2],
                        "lastHeartbeatTime": stamp,
                        "lastTransitionTime": since or stamp,
                    }
                ]
            }
        },
        content_type=SMP,
        subresource="status",
    )


def clear_condition(kube: Any, name: str, cond: str) -> None:
    """Remove the node's condition (a strategic-merge delete of that one entry)."""
    kube.patch(
        NODES,
        name,
        {"status": {"conditions": [{"type": cond, "$patch": "delete"}]}},
        content_type=SMP,
        subresource="status",
    )
