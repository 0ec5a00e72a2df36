"""The shapes of Argo CD's answers, and :func:`checked`, which holds an answer to one.

Each ``*_SHAPE`` table names what fracctl reads from one kind of answer and the JSON type
each part must have; :func:`checked` is the one place an answer is checked before
anything indexes into it, so an answer of the wrong shape is a clear error, not a crash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from fracctl.adapters.argocd.errors import UnexpectedAnswer
from fracctl.errors import UsageError

Obj = dict[str, Any]

# What fracctl reads from each answer, and the JSON type each part must have when it is
# there (absent and null are fine): ``a.b`` is a key path, ``[]`` every item of a list.
# Parents come before their children.
_RESOURCE_STATUS: dict[str, type | tuple[type, ...]] = {
    "[]": dict,
    "[].group": str,
    "[].version": str,
    "[].kind": str,
    "[].namespace": str,
    "[].name": str,
    "[].status": str,
    "[].message": str,
    "[].health": dict,
}
APPLICATION_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "metadata": dict,
    "spec": dict,
    "spec.destination": dict,
    "operation": dict,
    "operation.initiatedBy": dict,
    "status": dict,
    "status.sync": dict,
    "status.health": dict,
    "status.resources": list,
    **{f"status.resources{k}": t for k, t in _RESOURCE_STATUS.items()},
    "status.operationState": dict,
    "status.operationState.phase": str,
    "status.operationState.message": str,
    "status.operationState.startedAt": str,
    "status.operationState.operation": dict,
    "status.operationState.operation.initiatedBy": dict,
    "status.operationState.syncResult": dict,
    "status.operationState.syncResult.resources": list,
    **{f"status.operationState.syncResult.resources{k}": t for k, t in _RESOURCE_STATUS.items()},
}
MANAGED_RESOURCES_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "items": list,
    "items[]": dict,
    "items[].name": str,
}
MANIFESTS_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "manifests": list,
    "manifests[]": (str, dict),
    "revision": str,
}
SYNC_WINDOWS_SHAPE: dict[str, type | tuple[type, ...]] = {
    "": dict,
    "activeWindows": list,
    "activeWindows[]": dict,
    "assignedWindows": list,
    "assignedWindows[]": dict,
    "canSync": bool,
}


def checked(
    doc: Any, shape: Mapping[str, type | tuple[type, ...]], what: str, url: str = ""
) -> Obj:
    """``doc`` when every part ``shape`` names has the JSON type it should.

    The one place answers are checked before anything indexes into them, so an answer of
    the wrong shape (a list, a string, ``{"status": "x"}``) is a clear error, not a crash.

    Args:
        doc: the decoded JSON answer.
        shape: ``{path: type}`` (see :data:`APPLICATION_SHAPE`); absent or null is fine.
        what: the request, for the message.
        url: the server, for the hint.

    Raises:
        UnexpectedAnswer: a part has another type; the message names the part and the type
            found, not the value.
    """
    for path, expected in shape.items():
        for where, value in _values_at(doc, path):
            kinds = expected if isinstance(expected, tuple) else (expected,)
            if value is None or (
                isinstance(value, expected) and (bool in kinds or not isinstance(value, bool))
            ):
                continue
            part = f"`{where}`" if where else "the answer"
            raise UnexpectedAnswer(
                f"Argo CD sent an unexpected answer to {what}: {part} is "
                f"{_json_type(value)}, expected {_expected_type(expected)}",
                http_status=200,
                hint=f"is {url or 'the server'} the Argo CD API server, of a version fracctl "
                "supports (v2.x or v3.x)?",
            )
    return doc  # type: ignore[no-any-return]


def _values_at(doc: Any, path: str) -> list[tuple[str, Any]]:
    """``(where, value)`` for each value at ``path``; stops at parts of another type."""
    found: list[tuple[str, Any]] = [("", doc)]
    for step in path.replace("[]", ".[]").split(".") if path else []:
        if not step:
            continue
        nxt: list[tuple[str, Any]] = []
        for where, value in found:
            if step == "[]":
                if isinstance(value, list):
                    nxt.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
            elif isinstance(value, dict) and step in value:
                nxt.append((f"{where}.{step}" if where else step, value[step]))
        found = nxt
    return found


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"  # pragma: no cover - json.loads makes no other types


def _expected_type(expected: type | tuple[type, ...]) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "a number", bool: "a boolean"}
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def app_path(name: str) -> tuple[str, dict[str, str]]:
    """``/api/v1/applications/{name}`` and the ``appNamespace`` query for ``ns/name``."""
    if not name or name.count("/") > 1 or name.startswith("/") or name.endswith("/"):
        raise UsageError(f"not an Argo CD application name: {name!r}")
    params: dict[str, str] = {}
    if "/" in name:
        namespace, name = name.split("/", 1)
        params["appNamespace"] = namespace
    return f"/api/v1/applications/{quote(name, safe='')}", params


def resource_body(r: Mapping[str, str]) -> dict[str, str]:
    """One resource of a sync request as Argo CD's API takes it; kind and name required."""
    if not r.get("kind") or not r.get("name"):
        raise UsageError(f"a sync resource needs kind and name, got {dict(r)!r}")
    return {
        "group": r.get("group") or "",
        "kind": r["kind"],
        "name": r["name"],
        "namespace": r.get("namespace") or "",
    }


def decode_state(value: Any, what: str) -> Obj | None:
    """A state Argo CD sends as an object or as JSON text (a stream's), decoded; checked."""
    if value is None or isinstance(value, dict):
        return value
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError) as e:
        raise UnexpectedAnswer(f"Argo CD sent an undecodable {what}") from e
    if decoded is not None and not isinstance(decoded, dict):
        raise UnexpectedAnswer(f"Argo CD sent a {what} that is not an object")
    return decoded
