"""The same picks from a PodList page decoded from JSON, where the server sent no protobuf.

Each pod is cut down to what :class:`~.podpage.Pick` names, shaped as
:func:`~.podpage.pod_page` gives it, so that a reader cannot tell which way it came.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fracctl.adapters.kube.podpage import (
    LIST,
    MAP,
    MSG,
    QMAP,
    WHERE,
    Pick,
    PickedPage,
    Refine,
    Reread,
)


def prune(obj: Mapping[str, Any], pick: Pick) -> dict[str, Any]:
    """The picked fields of a JSON object, shaped as :func:`pod_page` gives them."""
    out: dict[str, Any] = {}
    for key, (kind, sub) in pick.keys.items():
        if kind == WHERE:
            continue  # no bytes to point into
        value = obj.get(key)
        if value is None or value == "":
            continue
        if sub is not None and kind == MSG:
            if isinstance(value, Mapping):
                out[key] = prune(value, sub)
        elif sub is not None and kind == LIST:
            listed = (
                [prune(v, sub) for v in value if isinstance(v, Mapping)]
                if isinstance(value, list)
                else []
            )
            if listed:
                out[key] = listed
        elif kind in (MAP, QMAP):
            if isinstance(value, Mapping) and value:
                out[key] = {str(k): str(v) for k, v in value.items()}
        else:
            out[key] = value
    return out


def pod_page_json(page: Mapping[str, Any], pick: Pick, refine: Refine | None = None) -> PickedPage:
    """The same page from a PodList decoded from JSON."""
    items = page.get("items")
    pods: list[Mapping[str, Any]] = []
    for p in items if isinstance(items, list) else ():
        if isinstance(p, Mapping):
            pod = prune(p, pick)
            if refine is None:
                pods.append(pod)
                continue
            kept = refine.judge(pod, None, 0, 0)
            if isinstance(kept, Reread):
                pods.append(prune(p, refine.pick))
            elif kept is not None:
                pods.append(kept)
    meta = page.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    remaining = meta.get("remainingItemCount")
    return PickedPage(
        pods,
        str(meta.get("continue") or ""),
        remaining if isinstance(remaining, int) else None,
    )
