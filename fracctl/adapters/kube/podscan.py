"""The scan: a pod's name, namespace, annotations, node and phase, from a pod list page.

Preflight, the recreate guards and ``nodes unlabel`` read only these of every pod. The
scan uses the field numbers of :mod:`.podpage` and the wire module, with a walk of its
own (:func:`scan_page` says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.adapters.kube.podpage import LIST_ITEMS, LIST_META, POD_FIELDS, list_meta
from fracctl.adapters.kube.wire import BYTES, ProtoError, entry, fields, skip, unwrap, varint

_META = POD_FIELDS["metadata"][2] or {}
_SPEC = POD_FIELDS["spec"][2] or {}
_STATUS = POD_FIELDS["status"][2] or {}


@dataclass(slots=True)
class PodFields:
    """The parts of one pod the scan reads."""

    name: str = ""
    namespace: str = ""
    annotations: dict[str, str] = field(default_factory=dict)
    node: str = ""
    phase: str = ""


@dataclass(slots=True)
class PodPage:
    """One page of a pod list, each pod as the scan reads it."""

    pods: list[PodFields]
    continue_token: str = ""
    remaining: int | None = None


# The scan's fields, numbered as the pick numbers them
_POD_META, _POD_SPEC, _POD_STATUS = (POD_FIELDS[k][0] for k in ("metadata", "spec", "status"))
_META_NAME, _META_NAMESPACE, _META_ANNOTATIONS = (
    _META[k][0] for k in ("name", "namespace", "annotations")
)
_SPEC_NODE_NAME = _SPEC["nodeName"][0]
_STATUS_PHASE = _STATUS["phase"][0]


def scan_page(data: bytes) -> PodPage:
    """The scan's fields of every pod of a PodList page sent as protobuf.

    The scan walks pods its own way rather than as a :class:`Pick` of its five fields.
    As a pick (2026-12-03, on 10,000 of ``benchmarks/bench_preflight.py``'s pods) it
    decoded them in 1.08x the time (114 ms against 105 ms) and the whole scan took 1.08x
    to 1.17x the CPU (431 against 398 ms, 469 against 402 ms): more than the 5% it was
    allowed. Each of its three loops reads a field's tag and length itself: a call or a
    generator step per field would cost more than the rest of the walk.

    Raises:
        ProtoError: the body is not a protobuf PodList.
    """
    buf, i, end = unwrap(data)
    page = PodPage(pods=[])
    pods = page.pods
    try:
        for number, wire, start, stop in fields(buf, i, end):
            if wire != BYTES:
                continue
            if number == LIST_ITEMS:
                pods.append(_scanned_pod(buf, start, stop))
            elif number == LIST_META:
                page.continue_token, page.remaining = list_meta(buf, start, stop)
    except UnicodeDecodeError:  # the walk decodes strings in place
        raise ProtoError("a string is not UTF-8") from None
    except IndexError:  # a length or tag read past the end of the body
        raise ProtoError("the body ends inside a field") from None
    return page


def _scanned_pod(buf: bytes, i: int, end: int) -> PodFields:
    pod = PodFields()
    while i < end:
        t = buf[i]
        i += 1
        if t & 0x80:
            t, i = varint(buf, i - 1)
        if t & 7 != BYTES:
            i = skip(buf, i, t & 7)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = varint(buf, i - 1)
        stop = i + n
        if stop > end:
            raise ProtoError("field runs past its message")
        number = t >> 3
        if number == _POD_META:
            _scanned_meta(buf, i, stop, pod)
        elif number == _POD_SPEC:
            pod.node = _first_string(buf, i, stop, _SPEC_NODE_NAME)
        elif number == _POD_STATUS:
            pod.phase = _first_string(buf, i, stop, _STATUS_PHASE)
        i = stop
    if i != end:
        raise ProtoError("field runs past its message")
    return pod


def _scanned_meta(buf: bytes, i: int, end: int, pod: PodFields) -> None:
    annotations = pod.annotations
    while i < end:
        t = buf[i]
        i += 1
        if t & 0x80:
            t, i = varint(buf, i - 1)
        if t & 7 != BYTES:
            i = skip(buf, i, t & 7)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = varint(buf, i - 1)
        number = t >> 3
        if number == _META_ANNOTATIONS:
            key, value = entry(buf, i, i + n)
            annotations[key] = value
        elif number == _META_NAME:
            pod.name = buf[i : i + n].decode()
        elif number == _META_NAMESPACE:
            pod.namespace = buf[i : i + n].decode()
        i += n
    if i != end:
        raise ProtoError("field runs past its message")


def _first_string(buf: bytes, i: int, end: int, wanted: int) -> str:
    """The string field numbered ``wanted`` in ``buf[i:end]`` ("" when absent).

    The first occurrence: the API server writes a singular field once, so the walk stops
    there (for ``status.phase``, field 1, that is at once).
    """
    while i < end:
        t = buf[i]
        i += 1
        if t & 0x80:
            t, i = varint(buf, i - 1)
        if t & 7 != BYTES:
            i = skip(buf, i, t & 7)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = varint(buf, i - 1)
        if t >> 3 == wanted:
            if i + n > end:
                break
            return buf[i : i + n].decode()
        i += n
    if i != end:
        raise ProtoError("field runs past its message")
    return ""


def scan_page_json(page: Mapping[str, Any]) -> PodPage:
    """The same page from a PodList (or PartialObjectMetadataList) decoded from JSON."""
    pods = []
    items = page.get("items")
    for item in items if isinstance(items, list) else ():
        meta = item.get("metadata") or {}
        pods.append(
            PodFields(
                str(meta.get("name") or ""),
                str(meta.get("namespace") or ""),
                dict(meta.get("annotations") or {}),
                str((item.get("spec") or {}).get("nodeName") or ""),
                str((item.get("status") or {}).get("phase") or ""),
            )
        )
    list_meta = page.get("metadata")
    list_meta = list_meta if isinstance(list_meta, dict) else {}
    remaining = list_meta.get("remainingItemCount")
    return PodPage(
        pods,
        str(list_meta.get("continue") or ""),
        remaining if isinstance(remaining, int) else None,
    )
