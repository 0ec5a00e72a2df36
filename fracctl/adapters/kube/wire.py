"""The protobuf wire format, as the API server sends it, read without a schema compiler.

A protobuf message is a run of fields. Each is a tag (a varint: the field's number and
its wire type, :func:`tag`) and a value: a varint (:data:`VARINT`), 8 or 4 fixed bytes
(:data:`FIXED64`, :data:`FIXED32`), or a length and that many bytes (:data:`BYTES`: a
string, or a message or map entry nested inside). Every body the API server sends as
:data:`PROTOBUF` is :data:`MAGIC` and then a ``runtime.Unknown`` envelope around the
object's own bytes (:func:`unwrap`); an error comes as a ``Status`` (:func:`status`).

Field numbers are those of ``k8s.io/apimachinery`` and ``k8s.io/api`` ``generated.proto``
(stable: protobuf field numbers are never reused). Anything malformed raises
:class:`ProtoError`; the caller treats it like a response that is not JSON.
"""

from __future__ import annotations

from collections.abc import Iterator

#: The four bytes in front of every protobuf body the API server sends.
MAGIC = b"k8s\x00"

#: The protobuf media type; a pod list asks for it, with JSON where the server cannot.
PROTOBUF = "application/vnd.kubernetes.protobuf"

#: Wire types: what follows a field's tag.
VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


def tag(number: int, wire: int) -> int:
    """The tag in front of field ``number`` of ``wire`` type."""
    return number << 3 | wire


#: A ``map<K, V>`` entry is a message: its key is field 1, its value field 2.
MAP_KEY, MAP_VALUE = 1, 2
_KEY_TAG, _VALUE_TAG = tag(MAP_KEY, BYTES), tag(MAP_VALUE, BYTES)


class ProtoError(ValueError):
    """The bytes are not the protobuf message they should be."""


def varint(buf: bytes, i: int) -> tuple[int, int]:
    """The varint at ``buf[i]``: (value, index after it)."""
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


def skip(buf: bytes, i: int, wire: int) -> int:
    """The index after the value at ``buf[i]`` of a field that is not :data:`BYTES`."""
    if wire == VARINT:
        return varint(buf, i)[1]
    if wire == FIXED64:
        return i + 8
    if wire == FIXED32:
        return i + 4
    raise ProtoError(f"unsupported wire type {wire}")


def fields(buf: bytes, i: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Each field of the message in ``buf[i:end]``: (number, wire type, start, stop).

    For a :data:`BYTES` field, ``buf[start:stop]`` is its payload; for a :data:`VARINT`,
    ``start`` is its value and ``stop`` the index after it. Fixed-size fields are
    stepped over.
    """
    while i < end:
        t = buf[i]
        if t < 0x80:
            i += 1
        else:
            t, i = varint(buf, i)
        wire = t & 7
        if wire == BYTES:
            n = buf[i] if i < end else 0x80
            if n < 0x80:
                i += 1
            else:
                n, i = varint(buf, i)
            stop = i + n
            if stop > end:
                raise ProtoError("field runs past its message")
            yield t >> 3, wire, i, stop
            i = stop
        elif wire == VARINT:
            value, i = varint(buf, i)
            yield t >> 3, wire, value, i
        else:
            i = skip(buf, i, wire)
    if i != end:
        raise ProtoError("field runs past its message")


def text(buf: bytes, start: int, stop: int) -> str:
    """The string in ``buf[start:stop]``."""
    try:
        return buf[start:stop].decode()
    except UnicodeDecodeError:
        raise ProtoError("a string is not UTF-8") from None


def entry(buf: bytes, i: int, end: int) -> tuple[str, str]:
    """A ``map<string, string>`` entry in ``buf[i:end]``: (key, value).

    A string is decoded in place: a caller walking many of them turns the
    :class:`UnicodeDecodeError` and :class:`IndexError` of a broken body into a
    :class:`ProtoError` once, around the walk.
    """
    key = value = ""
    # Inlined rather than through fields(): an annotation is read per entry per pod.
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
        if t == _KEY_TAG:
            key = buf[i : i + n].decode()
        elif t == _VALUE_TAG:
            value = buf[i : i + n].decode()
        i += n
    if i != end:
        raise ProtoError("field runs past its message")
    return key, value


# runtime.Unknown: the envelope around every object
_UNKNOWN_RAW, _UNKNOWN_ENCODING = 2, 3


def unwrap(data: bytes) -> tuple[bytes, int, int]:
    """The object inside the API server's envelope: (buffer, start, end).

    Raises:
        ProtoError: no ``k8s`` + NUL prefix, a content encoding (none is ever set), or
            a malformed envelope.
    """
    if not data.startswith(MAGIC):
        raise ProtoError("not a Kubernetes protobuf body")
    raw: tuple[int, int] | None = None
    for number, wire, start, stop in fields(data, len(MAGIC), len(data)):
        if wire != BYTES:
            continue
        if number == _UNKNOWN_RAW:
            raw = (start, stop)
        elif number == _UNKNOWN_ENCODING and stop > start:
            raise ProtoError(f"content encoding {data[start:stop]!r} is not supported")
    if raw is None:
        raise ProtoError("the envelope holds no object")
    return data, raw[0], raw[1]


def unwrap_head(data: bytes) -> tuple[int, int]:
    """Where the object lies inside the envelope of a body that may still be arriving.

    Reads the envelope's fields up to the object and nothing after, so it works on the
    first chunk of a body: (start, stop), where ``stop`` may lie past the chunk.

    Raises:
        ProtoError: no ``k8s`` + NUL prefix, no object in the envelope, or a chunk that
            ends inside the envelope's fields.
    """
    if not data.startswith(MAGIC):
        raise ProtoError("not a Kubernetes protobuf body")
    i = len(MAGIC)
    while i < len(data):
        t, i = varint(data, i)
        if t & 7 != BYTES:
            i = skip(data, i, t & 7)
            continue
        n, i = varint(data, i)
        if t >> 3 == _UNKNOWN_RAW:
            return i, i + n
        i += n
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
    for number, wire, start, stop in fields(buf, i, end):
        if number == _STATUS_CODE and wire == VARINT:
            out["code"] = start
        elif wire != BYTES:
            continue
        elif number == _STATUS_MESSAGE:
            out["message"] = text(buf, start, stop)
        elif number == _STATUS_REASON:
            out["reason"] = text(buf, start, stop)
        elif number == _STATUS_DETAILS:
            for n, w, s, e in fields(buf, start, stop):
                if n == _DETAILS_CAUSES and w == BYTES:
                    causes.append(
                        {
                            _CAUSE_FIELDS[cn]: text(buf, cs, ce)
                            for cn, cw, cs, ce in fields(buf, s, e)
                            if cn in _CAUSE_FIELDS and cw == BYTES
                        }
                    )
    if causes:
        out["details"] = {"causes": causes}
    return out
