"""The objects drift judges: what git renders, each with its identity and git location.

Each desired object becomes an item with its resource identity, where git has it and its
text; the items are checked for duplicates before any is judged, and once judged, each
drifted object's location is pointed at the line of its first differing field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fracctl.core import drift as d
from fracctl.core.gitops.manifests import Identity, check_unique_keys
from fracctl.core.kube.resources import ResourceRef, split_api_version
from fracctl.errors import UsageError
from fracctl.flows.render import Desired

Obj = dict[str, Any]


@dataclass
class Item:
    """One object to judge: its resource, identity, and what git and the cluster hold."""

    api_version: str
    kind: str
    namespace: str
    name: str
    desired: Obj | None
    location: d.Location | None = None
    text: str = ""
    ref: ResourceRef | None = None
    live: Obj | None = None
    unknown_kind: str = ""


def items_from(
    objects: Sequence[Obj],
    default_namespace: str,
    locations: Sequence[d.Location | None] = (),
    texts: Sequence[str] = (),
) -> list[Item]:
    """The items to judge: each desired object with its namespace, location and text."""
    items: list[Item] = []
    for i, obj in enumerate(objects):
        api_version, kind, ns, name = d.object_identity(obj, default_namespace)
        if not api_version or not kind or not name:
            raise UsageError(f"desired object #{i + 1} lacks apiVersion, kind or metadata.name")
        items.append(
            Item(
                api_version,
                kind,
                ns,
                name,
                obj,
                locations[i] if i < len(locations) else None,
                texts[i] if i < len(texts) else "",
            )
        )
    return items


def check_unique(items: Sequence[Item]) -> None:
    """Two desired objects for one live object: refuse rather than judge one of them.

    Runs after :meth:`~fracctl.flows.drift.judge.Judge.resolve`, so a namespace written
    on a cluster-scoped object no longer hides a duplicate.
    """
    keys: list[Identity | None] = [
        (split_api_version(it.api_version)[0], it.kind, it.namespace, it.name)
        if it.desired is not None
        else None
        for it in items
    ]
    origins = [
        f"{it.location.file}:{it.location.line}" if it.location else f"desired object #{i + 1}"
        for i, it in enumerate(items)
    ]
    check_unique_keys(keys, origins, source="the desired objects")


def origin(desired: Desired | None, index: int) -> str:
    """Where the desired object ``index`` comes from: its file and line, if known."""
    loc = desired.location_of(index) if desired is not None else None
    return f"{loc.file}:{loc.line}" if loc else f"desired object #{index + 1}"


def add_field_lines(report: d.DriftReport, items: Sequence[Item]) -> None:
    """Point each drifted object's location at its first differing field's line."""
    from fracctl.adapters.render import field_line

    for o, it in zip(report.objects, items, strict=True):
        if not o.drifted or o.location is None or not it.text:
            continue
        first = (o.fields or o.changes)[:1]
        if not first:
            continue
        line = field_line(it.text, first[0].path)
        if line is not None:
            o.location = d.Location(o.location.file, o.location.line + line - 1)
