"""Which fields of an object cannot be changed in place, and how to read them.

Two sources of knowledge:

* a CRD's schema: every ``x-kubernetes-validations`` rule that mentions ``oldSelf``
  is a transition rule. ``self == oldSelf`` makes the field *immutable*; any other
  such rule (``self >= oldSelf``, ``!has(oldSelf.x) || ...``) makes it
  *transition-constrained*. Either way, deleting and recreating the object is the only
  way past a rejection, because a new object has no ``oldSelf``.
* a built-in table for core kinds, written from the API server's validation code.

Paths are dotted (``spec.nodeSelector``); ``[*]`` stands for every item of a list and
``*`` for every value of a map, as in the schema they came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

IMMUTABLE = "immutable"
TRANSITION = "transition-constrained"

CRD_SOURCE = "crd"
BUILTIN_SOURCE = "built-in"

# A rule only applies while the live object says so (ConfigMap/Secret ``immutable: true``).
WHEN_IMMUTABLE_FLAG = "immutable: true"

_OLD_SELF = re.compile(r"\boldSelf\b")
_OLD_SELF_PATH = re.compile(r"\boldSelf((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_SAME_PATH = re.compile(
    r"^self((?:\.[A-Za-z_][A-Za-z0-9_]*)*)==oldSelf((?:\.[A-Za-z_][A-Za-z0-9_]*)*)$"
)
_WILDCARD_ITEM = "[*]"
_WILDCARD_VALUE = "*"


@dataclass(frozen=True)
class FieldRule:
    """One field that an update may not change (or may change only in some ways)."""

    path: str
    constraint: str  # IMMUTABLE | TRANSITION
    message: str
    rule: str = ""  # the CEL expression; empty for built-in rules
    source: str = CRD_SOURCE
    except_paths: tuple[str, ...] = ()  # sub-paths an update may change
    when: str = ""  # "" always, or WHEN_IMMUTABLE_FLAG

    def applies_to(self, live: Mapping[str, Any] | None) -> bool:
        """Whether the rule holds for this live object (``None``: no live object)."""
        if self.when == WHEN_IMMUTABLE_FLAG:
            return bool(live) and (live or {}).get("immutable") is True
        return True

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "path": self.path,
            "constraint": self.constraint,
            "message": self.message,
            "rule": self.rule,
            "source": self.source,
            "except": list(self.except_paths),
            "when": self.when,
        }


# --- rules from a CRD schema -------------------------------------------------------------


def rules_from_crd(crd: Mapping[str, Any], version: str | None = None) -> list[FieldRule]:
    """Every ``oldSelf`` rule in a CRD's schema for ``version`` (default: the storage one).

    Args:
        crd: a CustomResourceDefinition object.
        version: the served version whose schema to read.

    Returns:
        The rules, in schema order, with the path of the field each one guards.
    """
    versions = (crd.get("spec") or {}).get("versions") or []
    chosen: Mapping[str, Any] | None = None
    for v in versions:
        if version is not None and v.get("name") == version:
            chosen = v
            break
        if version is None and v.get("storage"):
            chosen = v
    if chosen is None and versions and version is None:
        chosen = versions[0]
    if chosen is None:
        return []
    schema = ((chosen.get("schema") or {}).get("openAPIV3Schema")) or {}
    return list(_walk_schema(schema, ""))


def _walk_schema(schema: Mapping[str, Any], path: str) -> Iterator[FieldRule]:
    for v in schema.get("x-kubernetes-validations") or []:
        rule = str(v.get("rule") or "")
        if not _OLD_SELF.search(rule):
            continue
        message = str(v.get("message") or v.get("messageExpression") or f"failed rule: {rule}")
        yield from _rules_for(rule, message, path)
    for name, child in (schema.get("properties") or {}).items():
        if isinstance(child, Mapping):
            yield from _walk_schema(child, join(path, name))
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _walk_schema(items, path + _WILDCARD_ITEM)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from _walk_schema(extra, join(path, _WILDCARD_VALUE))


def _rules_for(rule: str, message: str, path: str) -> Iterator[FieldRule]:
    compact = re.sub(r"\s+", "", rule)
    same = _SAME_PATH.match(compact)
    if same and same.group(1) == same.group(2):
        yield FieldRule(_root_to_spec(path + same.group(1)), IMMUTABLE, message, rule)
        return
    if compact == "oldSelf==self":
        yield FieldRule(_root_to_spec(path), IMMUTABLE, message, rule)
        return
    suffixes = sorted({m.group(1) for m in _OLD_SELF_PATH.finditer(rule)})
    if not suffixes:
        yield FieldRule(_root_to_spec(path), TRANSITION, message, rule)
        return
    for suffix in suffixes:
        yield FieldRule(_root_to_spec(path + suffix), TRANSITION, message, rule)


def _root_to_spec(path: str) -> str:
    # A rule on the whole object compares what a user controls: the spec.
    path = path.lstrip(".")
    return path or "spec"


def join(path: str, key: str) -> str:
    """``join("spec", "x")`` -> ``spec.x``; ``join("", "x")`` -> ``x``."""
    return f"{path}.{key}" if path else key


# --- built-in kinds ----------------------------------------------------------------------

_FIELD_IS_IMMUTABLE = "field is immutable"
_STS_UPDATABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_STS_MESSAGE = (
    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden"
)


def _b(path: str, message: str = _FIELD_IS_IMMUTABLE, **kw: Any) -> FieldRule:
    return FieldRule(path, IMMUTABLE, message, source=BUILTIN_SOURCE, **kw)


BUILTIN: dict[tuple[str, str], tuple[FieldRule, ...]] = {
    ("apps", "Deployment"): (_b("spec.selector"),),
    ("apps", "ReplicaSet"): (_b("spec.selector"),),
    ("apps", "DaemonSet"): (_b("spec.selector"),),
    ("apps", "StatefulSet"): (
        _b("spec", _STS_MESSAGE, except_paths=tuple(f"spec.{f}" for f in _STS_UPDATABLE)),
    ),
    ("batch", "Job"): (
        _b("spec.selector"),
        _b("spec.template"),
        _b("spec.completionMode"),
    ),
    ("", "Service"): (_b("spec.clusterIP"), _b("spec.clusterIPs")),
    ("", "PersistentVolumeClaim"): (
        _b(
            "spec",
            "spec is immutable after creation except resources.requests and "
            "volumeAttributesClassName for bound claims",
            except_paths=(
                "spec.resources.requests",
                "spec.volumeAttributesClassName",
                "spec.volumeName",
            ),
        ),
    ),
    ("", "ConfigMap"): (
        _b("data", when=WHEN_IMMUTABLE_FLAG),
        _b("binaryData", when=WHEN_IMMUTABLE_FLAG),
        _b("immutable", "field is immutable when `immutable` is set", when=WHEN_IMMUTABLE_FLAG),
    ),
    ("", "Secret"): (
        _b("data", when=WHEN_IMMUTABLE_FLAG),
        _b("stringData", when=WHEN_IMMUTABLE_FLAG),
        _b("type"),
        _b("immutable", "field is immutable when `immutable` is set", when=WHEN_IMMUTABLE_FLAG),
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): (_b("roleRef", "cannot change roleRef"),),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (_b("roleRef", "cannot change roleRef"),),
    ("storage.k8s.io", "StorageClass"): (
        _b("provisioner", "updates to provisioner are forbidden."),
        _b("parameters", "updates to parameters are forbidden."),
        _b("reclaimPolicy", "updates to reclaimPolicy are forbidden."),
        _b("volumeBindingMode", "field is immutable"),
    ),
}


def builtin_rules(group: str, kind: str) -> list[FieldRule]:
    """The built-in immutable fields of a core kind (empty for others)."""
    return list(BUILTIN.get((group, kind), ()))


def is_builtin_group(group: str) -> bool:
    """Whether ``group`` belongs to Kubernetes itself (so no CRD describes it)."""
    return group == "" or group.endswith(".k8s.io") or "." not in group


# --- reading values at a path ------------------------------------------------------------


def split_path(path: str) -> list[str]:
    """``spec.items[*].name`` -> ``["spec", "items", "[*]", "name"]``."""
    return re.findall(r"\[\*\]|[^.\[\]]+", path)


def _render_path(parts: Iterable[str | int]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out = join(out, p)
    return out


def expand(path: str, *objects: Mapping[str, Any] | None) -> list[str]:
    """Concrete paths for ``path`` over the objects (wildcards replaced by keys/indexes)."""
    found: list[str] = []
    seen: set[str] = set()
    for obj in objects:
        if obj is None:
            continue
        for concrete in _expand(obj, split_path(path), []):
            if concrete not in seen:
                seen.add(concrete)
                found.append(concrete)
    return found


def _expand(value: Any, parts: list[str], done: list[str | int]) -> Iterator[str]:
    if not parts:
        yield _render_path(done)
        return
    head, rest = parts[0], parts[1:]
    if head == _WILDCARD_ITEM:
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _expand(item, rest, [*done, i])
        return
    if head == _WILDCARD_VALUE:
        if isinstance(value, Mapping):
            for k in value:
                yield from _expand(value[k], rest, [*done, str(k)])
        return
    if isinstance(value, Mapping):
        yield from _expand(value.get(head), rest, [*done, head])
    elif value is None and _WILDCARD_ITEM not in rest and _WILDCARD_VALUE not in rest:
        yield _render_path([*done, head, *rest])


def get_path(obj: Mapping[str, Any] | None, path: str) -> Any:
    """The value at a concrete path (``spec.items[2].name``), or ``None``."""
    value: Any = obj
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            idx = int(part[1:-1])
            if not isinstance(value, list) or idx >= len(value):
                return None
            value = value[idx]
        else:
            if not isinstance(value, Mapping):
                return None
            value = value.get(part)
        if value is None:
            return None
    return value


def without(value: Any, base: str, except_paths: Iterable[str]) -> Any:
    """``value`` (found at ``base``) with the sub-paths an update may change removed."""
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = dict(value)
    for sub in except_paths:
        if not sub.startswith(base + ".") and base:
            continue
        rel = sub[len(base) + 1 :] if base else sub
        _drop(out, rel.split("."))
    return out


def _drop(obj: dict[str, Any], parts: list[str]) -> None:
    if len(parts) == 1:
        obj.pop(parts[0], None)
        return
    child = obj.get(parts[0])
    if isinstance(child, Mapping):
        copy = dict(child)
        _drop(copy, parts[1:])
        obj[parts[0]] = copy
