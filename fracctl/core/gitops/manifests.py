"""Rendered manifests as a set of objects: each object at most once.

Git, kustomize, helm and Argo CD can all hand over two documents for one object. The
API server would keep only one of them, and which one depends on the order of applies;
every reader of the desired state (drift, recreate, preflight) would pick one too. So
two documents with the same identity (group, kind, namespace, name) are an error that
names both places, never a silent choice.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from fracctl.core.kube.resources import split_api_version
from fracctl.errors import UsageError

Identity = tuple[str, str, str, str]  # (group, kind, namespace, name)


class DuplicateObjects(UsageError):
    """Two or more documents declare the same object."""


def identity(
    obj: Mapping[str, Any],
    *,
    default_namespace: str = "",
    cluster_scoped: Collection[tuple[str, str]] = (),
) -> Identity | None:
    """``(group, kind, namespace, name)`` of a manifest; None without a kind or name.

    The version is left out: ``apps/v1`` and ``apps/v1beta1`` name the same object.

    Args:
        obj: the manifest.
        default_namespace: the namespace of an object that names none.
        cluster_scoped: ``(group, kind)`` pairs known to be cluster-scoped; their
            namespace is ignored, as the API server ignores it.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    kind, name = str(obj.get("kind") or ""), str(meta.get("name") or "")
    if not kind or not name:
        return None
    group, _ = split_api_version(str(obj.get("apiVersion") or ""))
    if (group, kind) in cluster_scoped:
        namespace = ""
    else:
        namespace = str(meta.get("namespace") or default_namespace)
    return group, kind, namespace, name


def describe_identity(key: Identity) -> str:
    """``GpuFractioningConfig/default (gpu-fractioning.kai.scheduler)``."""
    group, kind, namespace, name = key
    where = f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"
    return f"{where} ({group or 'core'} group)"


def duplicates(keys: Sequence[Identity | None]) -> list[tuple[Identity, list[int]]]:
    """Every identity given more than once, with the indexes giving it, in order."""
    seen: dict[Identity, list[int]] = {}
    for i, key in enumerate(keys):
        if key is not None:
            seen.setdefault(key, []).append(i)
    return [(key, idx) for key, idx in seen.items() if len(idx) > 1]


def check_unique_keys(
    keys: Sequence[Identity | None], origins: Sequence[str], *, source: str
) -> None:
    """Raise when an identity is given twice, naming where each one is.

    Args:
        keys: each object's identity (None for an object without one).
        origins: where each object was written (``file:line``, or its position in a
            rendered stream), same order as ``keys``.
        source: what the objects are, for the message.

    Raises:
        DuplicateObjects: an object is declared more than once.
    """
    found = duplicates(keys)
    if not found:
        return
    parts = []
    for key, idx in found[:5]:
        places = " and ".join(
            origins[i] if i < len(origins) and origins[i] else f"object {i + 1}" for i in idx
        )
        times = "twice" if len(idx) == 2 else f"{len(idx)} times"
        parts.append(f"{describe_identity(key)} {times}: {places}")
    more = f"; and {len(found) - 5} more objects" if len(found) > 5 else ""
    raise DuplicateObjects(
        f"{source} declare " + "; ".join(parts) + more,
        hint="keep one document for each object: the API server holds one object per "
        "group, kind, namespace and name, and which document it ends up with depends on "
        "the order of applies",
    )


def check_unique(
    objects: Sequence[Mapping[str, Any]],
    origins: Sequence[str],
    *,
    source: str = "the desired manifests",
    default_namespace: str = "",
    cluster_scoped: Collection[tuple[str, str]] = (),
) -> None:
    """Raise when two documents declare the same object, naming where each one is.

    Args:
        objects: the rendered objects.
        origins: where each object was written (``file:line``, or its position in a
            rendered stream), same order as ``objects``.
        source: what the objects are, for the message.
        default_namespace: the namespace of an object that names none.
        cluster_scoped: ``(group, kind)`` pairs known to be cluster-scoped.

    Raises:
        DuplicateObjects: an object is declared more than once.
    """
    keys = [
        identity(o, default_namespace=default_namespace, cluster_scoped=cluster_scoped)
        for o in objects
    ]
    check_unique_keys(keys, origins, source=source)
