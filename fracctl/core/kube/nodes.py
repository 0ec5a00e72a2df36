"""Pure helpers on Node objects: labels, selectors, conditions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

Obj = dict[str, Any]

# A node's name is a DNS subdomain (RFC 1123), as the API server validates it.
_NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def node_name_problems(names: Iterable[str]) -> list[str]:
    """Why given node names cannot name a node (empty when they all can)."""
    out = []
    for name in names:
        if not name.strip():
            out.append("a node name cannot be empty")
        elif len(name) > 253 or not _NODE_NAME.fullmatch(name):
            out.append(f"{name!r} is not a node name (lower-case letters, digits, '-' and '.')")
    return list(dict.fromkeys(out))


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """An object's labels (empty when none)."""
    return dict((obj.get("metadata") or {}).get("labels") or {})


def matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Whether a plain ``nodeSelector`` map selects a node with ``labels``.

    An empty selector selects every node, as a DaemonSet's does.
    """
    return all(labels.get(k) == v for k, v in selector.items())


def selector_string(selector: Mapping[str, str]) -> str:
    """``{"a": "b"}`` -> ``a=b`` (a label selector for list calls)."""
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def condition(node: Mapping[str, Any], type_: str) -> Obj | None:
    """The condition of ``type_`` of an object (a node, a Kustomization…), if present."""
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def is_ready(node: Mapping[str, Any], type_: str) -> bool:
    """Whether the condition ``type_`` is ``True`` on the node."""
    c = condition(node, type_)
    return bool(c and c.get("status") == "True")


def describe_condition(node: Mapping[str, Any], type_: str) -> str:
    """``True (AllDaemonsReady)``, ``False (Reason: message)`` or ``missing``."""
    c = condition(node, type_)
    if c is None:
        return "missing (ConditionNotFound)"
    text = f"{c.get('status', '?')} ({c.get('reason') or 'no reason'}"
    if c.get("message"):
        text += f": {c['message']}"
    return text + ")"


def field_at(obj: Mapping[str, Any], field_path: str) -> Any:
    """The value at a dotted ``field_path`` (``spec.nodeSelector``); None where absent."""
    value: Any = obj
    for part in field_path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def selector_of(obj: Mapping[str, Any] | None, field_path: str) -> dict[str, str] | None:
    """The node selector at ``field_path`` (``spec.nodeSelector``); None without an object."""
    if obj is None:
        return None
    return dict(field_at(obj, field_path) or {})
