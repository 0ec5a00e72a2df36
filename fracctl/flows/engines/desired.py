"""Git's object made ready to create or apply: the fields only the server sets taken out."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def clean_desired(desired: Obj) -> Obj:
    """The desired object without server-set fields, ready to create or apply."""
    body = {k: v for k, v in desired.items() if k != "status"}
    meta = dict(body.get("metadata") or {})
    for key in (
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "managedFields",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ):
        meta.pop(key, None)
    body["metadata"] = meta
    return body
