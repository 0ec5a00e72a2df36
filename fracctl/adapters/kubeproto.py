"""Read just what the pod scan needs from the API server's protobuf lists.

The API server sends a PodList as protobuf far faster than as JSON, and most of each
pod (its spec, its status, its ``managedFields``) is of no interest to the scan. This
module walks the protobuf wire format without a schema compiler: it reads the few
fields it needs (name, namespace, annotations, ``spec.nodeName``, ``status.phase``,
the list's ``continue`` token) and steps over everything else by its length, so an
unwanted field costs a couple of integer reads however large it is.

Field numbers are those of ``k8s.io/apimachinery`` and ``k8s.io/api`` ``generated.proto``
(stable: protobuf field numbers are never reused). Anything malformed raises
:class:`ProtoError`; the caller treats it like a response that is not JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

#: The four bytes in front of every protobuf body the API server sends.
MAGIC = b"k8s\x00"

#: Accept header for a PodList as protobuf, JSON where the server cannot.
PROTOBUF = "application/vnd.kubernetes.protobuf"

# runtime.Unknown: the envelope around every object
_UNKNOWN_RAW, _UNKNOWN_ENCODING = 2, 3
# ListMeta and any XList
_LIST_META, _LIST_ITEMS = 1, 2
_LISTMETA_CONTINUE, _LISTMETA_REMAINING = 3, 4
# Pod, and the fields read from it
_POD_META, _POD_SPEC, _POD_STATUS = 1, 2, 3
_SPEC_NODE_NAME = 10
_STATUS_PHASE = 1
# ObjectMeta
_META_NAME, _META_NAMESPACE, _META_ANNOTATIONS = 1, 3, 12
# map<string, string> entries
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_ENTRY_KEY_TAG, _ENTRY_VALUE_TAG = 1 << 3 | _BYTES, 2 << 3 | _BYTES


class ProtoError(ValueError):
    """The bytes are not the protobuf message they should be."""


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
    """One page of a pod list."""

    pods: list[PodFields]
    continue_token: str = ""
    remaining: int | None = None


def read_varint(buf: bytes, i: int) -> tuple[int, int]:
    """The varint at ``buf[i]``; (value, index after it)."""
    result = 0
    shift = 0
    while True:
        try:
            b = buf[i]
        except IndexError:
            raise ProtoError("truncated varint") from None
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ProtoError("varint too long")


def _fields(buf: bytes, i: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Each field in ``buf[i:end]`` as (number, wire type, start, stop).

    For a length-delimited field, ``start:stop`` is its payload; for a varint, ``start``
    is its value and ``stop`` the index after it. Fixed-size fields are stepped over.
    """
    while i < end:
        tag = buf[i]
        if tag < 0x80:
            i += 1
        else:
            tag, i = read_varint(buf, i)
        wire = tag & 7
        if wire == _BYTES:
            n = buf[i] if i < end else 0x80
            if n < 0x80:
                i += 1
            else:
                n, i = read_varint(buf, i)
            stop = i + n
            if stop > end:
                raise ProtoError("field runs past its message")
            yield tag >> 3, wire, i, stop
            i = stop
        elif wire == _VARINT:
            value, i = read_varint(buf, i)
            yield tag >> 3, wire, value, i
        elif wire == _FIXED64:
            i += 8
        elif wire == _FIXED32:
            i += 4
        else:
            raise ProtoError(f"unsupported wire type {wire}")
    if i != end:
        raise ProtoError("field runs past its message")


def unwrap(data: bytes) -> tuple[bytes, int, int]:
    """The object inside the API server's envelope: (buffer, start, end).

    Raises:
        ProtoError: no ``k8s`` + NUL prefix, a content encoding (none is ever set), or
            a malformed envelope.
    """
    if not data.startswith(MAGIC):
        raise ProtoError("not a Kubernetes protobuf body")
    raw: tuple[int, int] | None = None
    for number, wire, start, stop in _fields(data, len(MAGIC), len(data)):
        if wire != _BYTES:
            continue
        if number == _UNKNOWN_RAW:
            raw = (start, stop)
        elif number == _UNKNOWN_ENCODING and stop > start:
            raise ProtoError(f"content encoding {data[start:stop]!r} is not supported")
    if raw is None:
        raise ProtoError("the envelope holds no object")
    return data, raw[0], raw[1]


def _text(buf: bytes, start: int, stop: int) -> str:
    try:
        return buf[start:stop].decode()
    except UnicodeDecodeError:
        raise ProtoError("a string is not UTF-8") from None


def skip_field(buf: bytes, i: int, wire: int) -> int:
    """The index after a field of ``wire`` type that is not length-delimited."""
    if wire == _VARINT:
        return read_varint(buf, i)[1]
    if wire == _FIXED64:
        return i + 8
    if wire == _FIXED32:
        return i + 4
    raise ProtoError(f"unsupported wire type {wire}")


# The three walkers below run for every pod of a cluster-wide scan, so each inlines the
# field loop of _fields (a tag, then a length) rather than calling it: a generator step
# per field would cost more than everything else the scan does.


def _find_string(buf: bytes, i: int, end: int, wanted: int) -> str:
    """The string field numbered ``wanted`` in ``buf[i:end]`` ("" when absent).

    The first occurrence: the API server writes a singular field once, so the walk stops
    there (for ``status.phase``, field 1, that is at once).
    """
    while i < end:
        tag = buf[i]
        i += 1
        if tag & 0x80:
            tag, i = read_varint(buf, i - 1)
        if tag & 7 != _BYTES:
            i = skip_field(buf, i, tag & 7)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = read_varint(buf, i - 1)
        if tag >> 3 == wanted:
            if i + n > end:
                break
            return buf[i : i + n].decode()
        i += n
    if i != end:
        raise ProtoError("field runs past its message")
    return ""


def map_entry(buf: bytes, i: int, end: int) -> tuple[str, str]:
    """A ``map<string, string>`` entry: (key, value)."""
    key = value = ""
    while i < end:
        tag = buf[i]
        i += 1
        if tag & 0x80:
            tag, i = read_varint(buf, i - 1)
        if tag & 7 != _BYTES:
            i = skip_field(buf, i, tag & 7)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = read_varint(buf, i - 1)
        if tag == _ENTRY_KEY_TAG:
            key = buf[i : i + n].decode()
        elif tag == _ENTRY_VALUE_TAG:
            value = buf[i : i + n].decode()
        i += n
    if i != end:
        raise ProtoError("field runs past its message")
    return key, value


def _meta(buf: bytes, i: int, end: int, pod: PodFields) -> None:
    annotations = pod.annotations
    while i < end:
        tag = buf[i]
        i += 1
        if tag & 0x80:
            tag, i = read_varint(buf, i - 1)
        if tag & 7 != _BYTES:
            i = skip_field(buf, i, tag & 7)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = read_varint(buf, i - 1)
        number = tag >> 3
        if number == _META_ANNOTATIONS:
            key, value = map_entry(buf, i, i + n)
            annotations[key] = value
        elif number == _META_NAME:
            pod.name = buf[i : i + n].decode()
        elif number == _META_NAMESPACE:
            pod.namespace = buf[i : i + n].decode()
        i += n
    if i != end:
        raise ProtoError("field runs past its message")


def _pod(buf: bytes, i: int, end: int) -> PodFields:
    pod = PodFields()
    while i < end:
        tag = buf[i]
        i += 1
        if tag & 0x80:
            tag, i = read_varint(buf, i - 1)
        if tag & 7 != _BYTES:
            i = skip_field(buf, i, tag & 7)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = read_varint(buf, i - 1)
        stop = i + n
        if stop > end:
            raise ProtoError("field runs past its message")
        number = tag >> 3
        if number == _POD_META:
            _meta(buf, i, stop, pod)
        elif number == _POD_SPEC:
            pod.node = _find_string(buf, i, stop, _SPEC_NODE_NAME)
        elif number == _POD_STATUS:
            pod.phase = _find_string(buf, i, stop, _STATUS_PHASE)
        i = stop
    if i != end:
        raise ProtoError("field runs past its message")
    return pod


def pod_page(data: bytes) -> PodPage:
    """Decode one page of a PodList sent as protobuf.

    Raises:
        ProtoError: the body is not a protobuf PodList.
    """
    buf, i, end = unwrap(data)
    page = PodPage(pods=[])
    try:
        for number, wire, start, stop in _fields(buf, i, end):
            if wire != _BYTES:
                continue
            if number == _LIST_ITEMS:
                page.pods.append(_pod(buf, start, stop))
            elif number == _LIST_META:
                for n, w, s, e in _fields(buf, start, stop):
                    if n == _LISTMETA_CONTINUE and w == _BYTES:
                        page.continue_token = _text(buf, s, e)
                    elif n == _LISTMETA_REMAINING and w == _VARINT:
                        page.remaining = s
    except UnicodeDecodeError:  # the walkers decode strings in place
        raise ProtoError("a string is not UTF-8") from None
    except IndexError:  # a length or tag read past the end of the body
        raise ProtoError("the body ends inside a field") from None
    return page


def continue_token(data: bytes) -> str:
    """The ``continue`` token of a protobuf list page, read from the head of the body.

    The API server writes a list's ``metadata`` before its items, so the token is in
    the first few hundred bytes: this reads those and nothing else, and works on the
    first chunk of a body still arriving. A list laid out otherwise is walked whole,
    which needs the whole body.
    """
    if not data.startswith(MAGIC):
        raise ProtoError("not a Kubernetes protobuf body")
    i = len(MAGIC)
    try:
        while i < len(data):
            tag, i = read_varint(data, i)
            if tag & 7 != _BYTES:
                i = skip_field(data, i, tag & 7)
                continue
            n, i = read_varint(data, i)
            if tag >> 3 != _UNKNOWN_RAW:
                i += n
                continue
            if n == 0:
                return ""
            tag, j = read_varint(data, i)
            if tag != _LIST_META << 3 | _BYTES:
                return pod_page(data).continue_token
            m, j = read_varint(data, j)
            if j + m > len(data):
                raise ProtoError("the body ends inside the list's metadata")
            return _find_string(data, j, j + m, _LISTMETA_CONTINUE)
    except IndexError:
        raise ProtoError("the body ends inside a field") from None
    raise ProtoError("the envelope holds no object")


# meta.k8s.io/v1 Status, StatusDetails, StatusCause
_STATUS_MESSAGE, _STATUS_REASON, _STATUS_DETAILS, _STATUS_CODE = 3, 4, 5, 6
_DETAILS_CAUSES = 4
_CAUSE_FIELDS = {1: "reason", 2: "message", 3: "field"}


def status(data: bytes) -> dict[str, object]:
    """An error the API server sent as a protobuf ``Status``, shaped like its JSON form.

    Raises:
        ProtoError: the body is not a protobuf Status.
    """
    buf, i, end = unwrap(data)
    out: dict[str, object] = {"kind": "Status"}
    causes: list[dict[str, str]] = []
    for number, wire, start, stop in _fields(buf, i, end):
        if number == _STATUS_CODE and wire == _VARINT:
            out["code"] = start
        elif wire != _BYTES:
            continue
        elif number == _STATUS_MESSAGE:
            out["message"] = _text(buf, start, stop)
        elif number == _STATUS_REASON:
            out["reason"] = _text(buf, start, stop)
        elif number == _STATUS_DETAILS:
            for n, w, s, e in _fields(buf, start, stop):
                if n == _DETAILS_CAUSES and w == _BYTES:
                    causes.append(
                        {
                            _CAUSE_FIELDS[cn]: _text(buf, cs, ce)
                            for cn, cw, cs, ce in _fields(buf, s, e)
                            if cn in _CAUSE_FIELDS and cw == _BYTES
                        }
                    )
    if causes:
        out["details"] = {"causes": causes}
    return out


def pod_page_json(page: dict[str, object]) -> PodPage:
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
