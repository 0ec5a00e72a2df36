"""Live versus desired: pure comparisons and the verdicts built from them.

The comparison here only decides whether a server-side dry run is worth sending and
which immutable fields to show; the dry run's answer is the verdict (see
:mod:`fracctl.flows.drift`). Desired values are compared the way an apply would use
them: a field git does not set is the server's to default, so only fields git sets
count, except inside plain string maps (label selectors, ``nodeSelector``), which an
apply replaces as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.drift.immutability import FieldRule, expand, get_path, join, without
from fracctl.core.kube.resources import split_api_version
from fracctl.errors import Cause

IN_SYNC = "in-sync"
NEEDS_RECREATE = "needs-recreate"
APPLIES_IN_PLACE = "applies-in-place"
# Applies in place, but the operator rolls the MPS daemons with it (the config's spec).
RESTARTS_DAEMONS = "restarts-daemons"
MISSING_LIVE = "missing-live"
MISSING_DESIRED = "missing-desired"
REJECTED = "rejected"  # the dry run failed for a reason that recreating does not fix
HOOK = "hook"  # live, not rendered, a chart's hook: whoever runs the chart owns it

_CHANGES = (IN_SYNC, NEEDS_RECREATE, RESTARTS_DAEMONS, APPLIES_IN_PLACE)
VERDICTS: tuple[str, ...] = (*_CHANGES, MISSING_LIVE, MISSING_DESIRED, REJECTED, HOOK)

# Metadata an apply does not carry, or the server owns.
_SERVER_METADATA = tuple(
    "managedFields resourceVersion generation uid creationTimestamp selfLink "
    "deletionTimestamp deletionGracePeriodSeconds ownerReferences".split()
)
_MAX_CHANGES = 20


@dataclass
class FieldDiff:
    """One field whose live and desired values differ."""

    path: str
    live: Any
    desired: Any
    constraint: str = ""  # "immutable" | "transition-constrained" | "" (mutable)
    message: str = ""  # the rule's message, when one guards the field
    source: str = ""  # "crd" | "built-in" | "api-server" | ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "path": self.path,
            "live": self.live,
            "desired": self.desired,
            "constraint": self.constraint,
            "message": self.message,
            "source": self.source,
        }


@dataclass
class Location:
    """Where a desired object was written in git."""

    file: str
    line: int = 1


@dataclass
class ObjectDrift:
    """The verdict for one object, with the evidence behind it."""

    api_version: str
    kind: str
    namespace: str
    name: str
    verdict: str
    fields: list[FieldDiff] = field(default_factory=list)  # immutable fields that differ
    changes: list[FieldDiff] = field(default_factory=list)  # what an update would change
    message: str = ""  # the API server's rejection, verbatim
    causes: list[Cause] = field(default_factory=list)
    live: dict[str, Any] | None = None
    desired: dict[str, Any] | None = None
    location: Location | None = None
    argocd: dict[str, Any] | None = None  # what Argo CD claims about this resource
    note: str = ""
    next_step: str = ""  # what to do about it, when it depends on more than the verdict
    procedure: dict[str, Any] | None = None  # needs-recreate: how fracctl recreates it, or not
    # The object is a chart's hook (git's or the engine's rendering, or the live object
    # says so): its annotations, what recreates it, and carried_by when fracctl does.
    hook: dict[str, Any] | None = None
    unfinished: str = ""  # a fracctl run left it half-done: what stopped where
    # restarts-daemons: the daemons, the nodes, the fractional pods there, the fields.
    restarts: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        """``Kind/name`` or ``Kind/namespace/name``."""
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"

    @property
    def group(self) -> str:
        """The API group."""
        return split_api_version(self.api_version)[0]

    @property
    def drifted(self) -> bool:
        """Not in sync, a hook fracctl does not carry, or left half-done by a fracctl run."""
        uncarried = bool(self.hook and not self.hook.get("carried_by"))
        return self.verdict != IN_SYNC or uncarried or bool(self.unfinished)

    @property
    def argocd_claims_synced(self) -> bool:
        """Whether Argo CD says this resource is synced although it drifted."""
        differs = self.verdict not in (IN_SYNC, HOOK)  # a hook is not Argo CD's to sync
        return bool(differs and self.argocd and self.argocd.get("status") == "Synced")

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "verdict": self.verdict,
            "fields": [f.to_dict() for f in self.fields],
            "changes": [f.to_dict() for f in self.changes],
            "message": self.message,
            "causes": [
                {"reason": c.reason, "message": c.message, "field": c.field} for c in self.causes
            ],
            "file": self.location.file if self.location else None,
            "line": self.location.line if self.location else None,
            "argocd": self.argocd,
            "note": self.note,
            "procedure": self.procedure,
            "hook": self.hook,
            "unfinished": self.unfinished,
            "restarts": self.restarts,
            "next_step": self.next_step,
        }


@dataclass
class DriftReport:
    """Verdicts for a set of objects, and what Argo CD claimed about them."""

    objects: list[ObjectDrift] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)  # repo/revision/commit/path or app
    argocd: dict[str, Any] | None = None  # the application's claims
    warnings: list[str] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        """Whether any object is not in sync."""
        return any(o.drifted for o in self.objects)

    def counts(self) -> dict[str, int]:
        """How many objects got each verdict."""
        out = dict.fromkeys(VERDICTS, 0)
        for o in self.objects:
            out[o.verdict] = out.get(o.verdict, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "drifted": self.drifted,
            "summary": self.counts(),
            "source": self.source,
            "argocd": self.argocd,
            "warnings": list(self.warnings),
            "objects": [o.to_dict() for o in self.objects],
        }


# --- comparing values --------------------------------------------------------------------


def _is_empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def _scalar_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        not isinstance(v, (Mapping, list)) for v in value.values()
    )


def _scalar_equal(live: Any, desired: Any) -> bool:
    if isinstance(live, bool) or isinstance(desired, bool):
        return isinstance(live, bool) and isinstance(desired, bool) and live == desired
    if isinstance(live, (int, float)) and isinstance(desired, (int, float)):
        return float(live) == float(desired)
    return bool(live == desired)


def subset_equal(live: Any, desired: Any, *, exact_maps: bool = True) -> bool:
    """Whether ``live`` already has every value ``desired`` sets.

    Fields ``desired`` leaves out are the server's to default. Plain string maps (label
    selectors) are compared whole when ``exact_maps`` is set.
    """
    if _is_empty(desired):
        return True if desired is None else _is_empty(live)
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return False
        if exact_maps and _scalar_map(desired) and _scalar_map(live):
            return set(live) == set(desired) and all(
                _scalar_equal(live[k], desired[k]) for k in desired
            )
        return all(subset_equal(live.get(k), v, exact_maps=exact_maps) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        return all(
            subset_equal(a, b, exact_maps=exact_maps) for a, b in zip(live, desired, strict=True)
        )
    return _scalar_equal(live, desired)


def diff_paths(
    live: Any, desired: Any, path: str = "", *, subset: bool = True, limit: int = _MAX_CHANGES
) -> list[FieldDiff]:
    """The paths where ``live`` and ``desired`` differ (at most ``limit``).

    With ``subset`` only values ``desired`` sets count; without it both sides count.
    """
    out: list[FieldDiff] = []
    _diff(live, desired, path, subset, out, limit)
    return out


def _diff(
    live: Any, desired: Any, path: str, subset: bool, out: list[FieldDiff], limit: int
) -> None:
    if len(out) >= limit:
        return
    if subset and desired is None:
        return
    if isinstance(live, Mapping) and isinstance(desired, Mapping):
        keys = list(desired) if subset else list(dict.fromkeys([*live, *desired]))
        for k in keys:
            _diff(live.get(k), desired.get(k), join(path, str(k)), subset, out, limit)
        return
    if isinstance(live, list) and isinstance(desired, list) and len(live) == len(desired):
        for i, (a, b) in enumerate(zip(live, desired, strict=True)):
            _diff(a, b, f"{path}[{i}]", subset, out, limit)
        return
    same = (
        subset_equal(live, desired, exact_maps=False)
        if subset
        else (_is_empty(live) and _is_empty(desired)) or live == desired
    )
    if not same:
        out.append(FieldDiff(path, live, desired))


def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An object as an apply sees it: no status, no server-owned metadata."""
    out = {k: v for k, v in obj.items() if k not in ("status", "apiVersion", "kind")}
    meta = dict(out.get("metadata") or {})
    for k in _SERVER_METADATA:
        meta.pop(k, None)
    annotations = dict(meta.get("annotations") or {})
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out


def changed_fields(live: Mapping[str, Any], desired: Mapping[str, Any]) -> list[FieldDiff]:
    """Fields ``desired`` sets that ``live`` does not have (apply semantics)."""
    return diff_paths(comparable(live), comparable(desired), subset=True)


def spec_changes(live: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> list[FieldDiff]:
    """The spec fields ``desired`` sets that ``live`` does not have (apply semantics)."""
    before, after = (live or {}).get("spec") or {}, desired.get("spec") or {}
    return changed_fields({"spec": before}, {"spec": after})


def update_changes(live: Mapping[str, Any], after: Mapping[str, Any]) -> list[FieldDiff]:
    """What an accepted (dry-run) update would change: live versus the server's answer."""
    return diff_paths(comparable(live), comparable(after), subset=False)


def immutable_diffs(
    live: Mapping[str, Any], desired: Mapping[str, Any], rules: Iterable[FieldRule]
) -> list[FieldDiff]:
    """The guarded fields whose desired value differs from the live one."""
    out: list[FieldDiff] = []
    seen: set[str] = set()
    for rule in rules:
        if not rule.applies_to(live):
            continue
        for path in expand(rule.path, live, desired):
            if path in seen:
                continue
            lv = without(get_path(live, path), path, rule.except_paths)
            dv = without(get_path(desired, path), path, rule.except_paths)
            if rule.except_paths and isinstance(dv, Mapping) and not dv:
                continue  # desired sets only fields an update may change
            if subset_equal(lv, dv):
                continue
            seen.add(path)
            out.append(FieldDiff(path, lv, dv, rule.constraint, rule.message, rule.source))
    return out


def narrow(fields: Iterable[FieldDiff]) -> list[FieldDiff]:
    """Each field whose values are objects, down to the values git sets that differ.

    A rule or an API server cause may name a whole ``spec`` (a StatefulSet's) or a
    ``spec.template`` (a Job's): the live side then holds what the server defaulted or
    added (``podManagementPolicy``, ``revisionHistoryLimit``, the Job controller's
    ``controller-uid`` labels), which git never changed. A plain string map (a node
    selector) and a label selector stay whole: a key git removed from one is a change too.
    """
    out: list[FieldDiff] = []
    for f in fields:
        live, desired = f.live, f.desired
        objects = isinstance(live, Mapping) and isinstance(desired, Mapping)
        whole = f.path.rsplit(".", 1)[-1] == "selector"
        if objects and not whole and not (_scalar_map(live) and _scalar_map(desired)):
            opened = diff_paths(live, desired, f.path, subset=True)
            if opened:
                out += [
                    FieldDiff(o.path, o.live, o.desired, f.constraint, f.message, f.source)
                    for o in opened
                ]
                continue
        out.append(f)
    return out


def unapplied(after: Mapping[str, Any], fields: Iterable[FieldDiff]) -> list[FieldDiff]:
    """The guarded fields an accepted apply left different from git.

    A server-side apply keeps the values other field managers own: a key that git
    dropped from a selector map stays, and the apply "succeeds" without the change.
    """
    return [f for f in fields if not subset_equal(get_path(after, f.path), f.desired)]


def json_pointer(path: str) -> str:
    """``spec.items[2].name`` as the JSON pointer ``/spec/items/2/name``."""
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    escaped = (
        p[1:-1] if p.startswith("[") else p.replace("~", "~0").replace("/", "~1") for p in parts
    )
    return "".join("/" + p for p in escaped)


def set_fields_patch(fields: Iterable[FieldDiff]) -> list[dict[str, Any]]:
    """A JSON patch (RFC 6902) that sets each field to git's value, nothing else."""
    return [{"op": "add", "path": json_pointer(f.path), "value": f.desired} for f in fields]


def object_identity(
    obj: Mapping[str, Any], default_namespace: str = ""
) -> tuple[str, str, str, str]:
    """``(apiVersion, kind, namespace, name)`` of a manifest."""
    meta = obj.get("metadata") or {}
    return (
        str(obj.get("apiVersion") or ""),
        str(obj.get("kind") or ""),
        str(meta.get("namespace") or default_namespace),
        str(meta.get("name") or ""),
    )


def apply_body(desired: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The desired object as a server-side apply body (no status or server metadata)."""
    meta = dict(comparable(desired).get("metadata") or {})
    if namespace:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    body = {k: v for k, v in desired.items() if k not in ("status", "metadata")}
    body["metadata"] = meta
    return body
