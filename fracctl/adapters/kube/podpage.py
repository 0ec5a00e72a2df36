"""Pods read from the pages of a pod list, protobuf or JSON: only the fields named.

Listing every pod is the slowest read fracctl makes, and most of each pod (its spec, its
status, its ``managedFields``) is of no interest to a reader. A reader names the fields
it reads as JSON paths (``spec.containers[].resources.limits``); :func:`compile_pod`
turns those into a :class:`Pick`: a walk of the protobuf wire format (:mod:`.wire`) that
decodes only those fields and steps over every other one by its length, so an unwanted
field costs a couple of integer reads however large it is, and a pruning of a JSON
object (a server that answers JSON) to the same fields. Both give the same plain dicts,
shaped like the object's JSON: the fields named, nothing else, an empty string left out
(JSON leaves most of them out), a message that is present kept even when empty.

The scan (preflight, the recreate guards, ``nodes unlabel``) reads a pod's name,
namespace, annotations, node and phase, each pod as :class:`PodFields`
(:mod:`.podscan`), on the same wire module and field numbers but with a walk of its
own, which a pick does not match for speed.

Field numbers are those of ``k8s.io/api`` ``core/v1/generated.proto``; only the fields
fracctl reads are in :data:`POD_FIELDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.adapters.kube.wire import (
    BYTES,
    MAP_KEY,
    MAP_VALUE,
    VARINT,
    ProtoError,
    entry,
    fields,
    skip,
    tag,
    unwrap,
    unwrap_head,
    varint,
)

# A field's kind: a string, a signed integer, a bool, a map<string, string>, a
# map<string, Quantity> (read as {name: quantity string}), a message or repeated message.
STR, INT, BOOL, MAP, QMAP, MSG, LIST = "str", "int", "bool", "map", "qmap", "msg", "list"
# Not a kind of field but a way to pick one: where each occurrence lies in the body.
WHERE = "where"
# The kinds read from a varint
_NUMBERS = (INT, BOOL)

Table = Mapping[str, tuple[int, str, "Table | None"]]

_OWNER: Table = {"kind": (1, STR, None), "name": (3, STR, None), "controller": (6, BOOL, None)}
_META: Table = {
    "name": (1, STR, None),
    "namespace": (3, STR, None),
    "labels": (11, MAP, None),
    "annotations": (12, MAP, None),
    "ownerReferences": (13, LIST, _OWNER),
}
_SECURITY: Table = {"runAsUser": (4, INT, None), "runAsNonRoot": (5, BOOL, None)}
_POD_SECURITY: Table = {"runAsUser": (2, INT, None), "runAsNonRoot": (3, BOOL, None)}
_RESOURCES: Table = {"limits": (1, QMAP, None), "requests": (2, QMAP, None)}
_CONTAINER: Table = {
    "name": (1, STR, None),
    "image": (2, STR, None),
    "resources": (8, MSG, _RESOURCES),
    "securityContext": (15, MSG, _SECURITY),
}
_TOLERATION: Table = {
    "key": (1, STR, None),
    "operator": (2, STR, None),
    "value": (3, STR, None),
    "effect": (4, STR, None),
}
_SPEC: Table = {
    "containers": (2, LIST, _CONTAINER),
    "nodeName": (10, STR, None),
    "securityContext": (14, MSG, _POD_SECURITY),
    "initContainers": (20, LIST, _CONTAINER),
    "tolerations": (22, LIST, _TOLERATION),
    "runtimeClassName": (29, STR, None),
}
_CONDITION: Table = {
    "type": (1, STR, None),
    "status": (2, STR, None),
    "reason": (5, STR, None),
    "message": (6, STR, None),
}
_WAITING: Table = {"reason": (1, STR, None), "message": (2, STR, None)}
_TERMINATED: Table = {
    "exitCode": (1, INT, None),
    "reason": (3, STR, None),
    "message": (4, STR, None),
}
_STATE: Table = {"waiting": (1, MSG, _WAITING), "terminated": (3, MSG, _TERMINATED)}
_CONTAINER_STATUS: Table = {
    "name": (1, STR, None),
    "state": (2, MSG, _STATE),
    "lastState": (3, MSG, _STATE),
    "ready": (4, BOOL, None),
}
_STATUS: Table = {
    "phase": (1, STR, None),
    "conditions": (2, LIST, _CONDITION),
    "containerStatuses": (8, LIST, _CONTAINER_STATUS),
    "initContainerStatuses": (10, LIST, _CONTAINER_STATUS),
}
#: The pod fields a :class:`Pick` can name, by JSON key: (field number, kind, below).
POD_FIELDS: Table = {
    "metadata": (1, MSG, _META),
    "spec": (2, MSG, _SPEC),
    "status": (3, MSG, _STATUS),
}

# A Quantity's string
_QUANTITY_STRING = 1
#: A PodList's fields: its ListMeta and its items. The ListMeta's continue token and count:
LIST_META, LIST_ITEMS = 1, 2
_LIST_META_TAG = tag(LIST_META, BYTES)
_LIST_CONTINUE, _LIST_REMAINING = 3, 4


@dataclass(frozen=True)
class Pick:
    """The fields to read: by field number for protobuf, by key for JSON.

    The API server writes a message's fields in the order of their numbers (its
    generated marshallers do), so a walk stops past the last number it wants
    (:attr:`last`) rather than stepping over the rest: most of a pod spec, its status.
    Up to there, :attr:`numbered` holds :attr:`proto` by index, the cheapest look-up for
    every field walked.
    """

    proto: Mapping[int, tuple[str, str, Pick | None]] = field(default_factory=dict)
    keys: Mapping[str, tuple[str, Pick | None]] = field(default_factory=dict)
    last: int = field(init=False, compare=False)
    numbered: tuple[tuple[str, str, Pick | None] | None, ...] = field(
        init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        last = max(self.proto, default=0)
        object.__setattr__(self, "last", last)
        object.__setattr__(self, "numbered", tuple(map(self.proto.get, range(last + 1))))


def compile_pod(paths: Iterable[str]) -> Pick:
    """The :class:`Pick` of a pod's fields named by ``paths`` (``spec.containers[].name``).

    A message or list named with ``@`` (``spec.containers@``) is not decoded: the pod
    holds, under that key, where each occurrence lies in the protobuf body, as
    ``[(start, end), ...]``, for a reader that searches its bytes. A JSON answer has no
    bytes, and its pods leave such a key out.

    Raises:
        ValueError: a path names a field :data:`POD_FIELDS` does not know, stops at
            a message (name the fields below it), or names both a message and where
            it lies.
    """
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for step in path.replace("[]", "").split("."):
            node = node.setdefault(step, {})
    return _compile(tree, POD_FIELDS, "")


def _compile(tree: Mapping[str, Any], table: Table, where: str) -> Pick:
    proto: dict[int, tuple[str, str, Pick | None]] = {}
    keys: dict[str, tuple[str, Pick | None]] = {}
    for key, below in tree.items():
        named = key.removesuffix("@")
        if named not in table:
            raise ValueError(f"no pod field {where}{named} to pick")
        number, kind, sub = table[named]
        inner = None
        if named != key:
            if sub is None or below:
                raise ValueError(f"only where a message or list lies can be picked: {where}{key}")
            kind = WHERE
        elif sub is not None:
            if not below:
                raise ValueError(f"name the fields of {where}{key} to pick")
            inner = _compile(below, sub, f"{where}{key}.")
        elif below:
            raise ValueError(f"{where}{key} has no fields to pick")
        if number in proto:
            raise ValueError(f"pick {where}{named} or where it lies, not both")
        proto[number] = (key, kind, inner)
        keys[key] = (kind, inner)
    return Pick(proto, keys)


def _number(buf: bytes, i: int, kind: str) -> tuple[bool | int, int]:
    """The picked varint at ``buf[i]``, a bool or a signed integer: (value, index after it)."""
    value, i = varint(buf, i)
    if kind == BOOL:
        return bool(value), i
    return (value - (1 << 64) if value >= 1 << 63 else value), i


def _qmap_entry(buf: bytes, i: int, end: int) -> tuple[str, str]:
    """A ``map<string, Quantity>`` entry: (name, the quantity's string)."""
    key = value = ""
    for number, wire, start, stop in fields(buf, i, end):
        if wire != BYTES:
            continue
        if number == MAP_KEY:
            key = buf[start:stop].decode()
        elif number == MAP_VALUE:
            value = _quantity(buf, start, stop)
    return key, value


def _quantity(buf: bytes, i: int, end: int) -> str:
    """A Quantity's string."""
    for number, wire, start, stop in fields(buf, i, end):
        if number == _QUANTITY_STRING and wire == BYTES:
            return buf[start:stop].decode()
    return ""


def _message(buf: bytes, i: int, end: int, pick: Pick) -> dict[str, Any]:
    """The picked fields of the message in ``buf[i:end]``, as a JSON-shaped dict.

    Every pod of a cluster-wide list goes through here, three levels deep, so the loop
    reads each field's tag and length itself rather than through :func:`.wire.fields`:
    a generator step per field would cost more than the rest of the walk.
    """
    out: dict[str, Any] = {}
    wanted, last = pick.numbered, pick.last
    while i < end:
        t = buf[i]
        i += 1
        if t & 0x80:
            t, i = varint(buf, i - 1)
        number = t >> 3
        if number > last:
            return out  # past every field wanted: the rest is not read (see Pick)
        if t & 7 == BYTES:
            n = buf[i]
            i += 1
            if n & 0x80:
                n, i = varint(buf, i - 1)
            found = wanted[number]
            if found is None:
                i += n  # stepped over (one running past the message ends the loop, and fails)
                continue
            stop = i + n
            if stop > end:
                raise ProtoError("field runs past its message")
            key, kind, sub = found
            if kind == STR:
                if n:
                    out[key] = buf[i:stop].decode()
            elif kind == MSG and sub is not None:
                out[key] = _message(buf, i, stop, sub)
            elif kind == MAP or kind == QMAP:
                k, v = entry(buf, i, stop) if kind == MAP else _qmap_entry(buf, i, stop)
                entries = out.get(key)
                if entries is None:
                    entries = out[key] = {}
                entries[k] = v
            elif kind == LIST and sub is not None:
                out.setdefault(key, []).append(_message(buf, i, stop, sub))
            elif kind == WHERE:
                out.setdefault(key, []).append((i, stop))
            i = stop
        elif t & 7 == VARINT:
            found = wanted[number]
            if found is not None and found[1] in _NUMBERS:
                key, kind, _ = found
                out[key], i = _number(buf, i, kind)
            else:
                while buf[i] & 0x80:  # stepped over by its bytes, not decoded
                    i += 1
                i += 1
        else:
            i = skip(buf, i, t & 7)
    if i != end:
        raise ProtoError("field runs past its message")
    return out


class Reread:
    """The answer of a :class:`Refine` judge that wants a pod read again, wider."""

    def __repr__(self) -> str:
        return "REREAD"


#: A :class:`Refine` judge's answer for a pod to be read again with the wider pick.
REREAD = Reread()

#: A judge's answer: REREAD, what the page holds in the pod's place, or None to leave it out.
Verdict = Mapping[str, Any] | Reread | None


@dataclass(frozen=True)
class Refine:
    """A second look at every pod of a page: leave it out, keep it, or read it again wider.

    Every pod is first read with the page's own (narrow) pick; ``judge`` is given that
    pod, and the protobuf body with the pod's span in it (``None, 0, 0`` for a JSON
    page), and answers :data:`REREAD` to read the pod again with :attr:`pick`, ``None``
    to leave it out of the page, or what the page holds in its place: the pod itself, or
    a smaller record of it. A reader that needs a pod's containers only for some pods
    pays for them only there, judges each pod once, and holds only what it keeps.
    """

    pick: Pick
    judge: Callable[[dict[str, Any], bytes | None, int, int], Verdict]


@dataclass(slots=True)
class PickedPage:
    """One page of a pod list, each pod cut down to the picked fields (or as judged)."""

    pods: list[Mapping[str, Any]]
    continue_token: str = ""
    remaining: int | None = None


def pod_page(data: bytes, pick: Pick, refine: Refine | None = None) -> PickedPage:
    """The picked fields of every pod of a PodList page sent as protobuf.

    With ``refine``, each pod is what its judge made of it (:class:`Refine`).

    Raises:
        ProtoError: the body is not a protobuf PodList.
    """
    buf, i, end = unwrap(data)
    page = PickedPage(pods=[])
    pods = page.pods
    try:
        for number, wire, start, stop in fields(buf, i, end):
            if wire != BYTES:
                continue
            if number == LIST_ITEMS:
                pod = _message(buf, start, stop, pick)
                if refine is None:
                    pods.append(pod)
                else:
                    kept = refine.judge(pod, buf, start, stop)
                    if isinstance(kept, Reread):
                        pods.append(_message(buf, start, stop, refine.pick))
                    elif kept is not None:
                        pods.append(kept)
            elif number == LIST_META:
                page.continue_token, page.remaining = list_meta(buf, start, stop)
    except UnicodeDecodeError:  # the walk decodes strings in place
        raise ProtoError("a string is not UTF-8") from None
    except IndexError:  # a length or tag read past the end of the body
        raise ProtoError("the body ends inside a field") from None
    return page


def list_meta(buf: bytes, i: int, end: int) -> tuple[str, int | None]:
    """A list's ``continue`` token and ``remainingItemCount`` (None when absent)."""
    token, remaining = "", None
    for number, wire, start, stop in fields(buf, i, end):
        if number == _LIST_CONTINUE and wire == BYTES:
            token = buf[start:stop].decode()
        elif number == _LIST_REMAINING and wire == VARINT:
            remaining = start
    return token, remaining


def continue_token(data: bytes) -> str:
    """The ``continue`` token of a protobuf list page, read from the head of the body.

    The API server writes a list's ``metadata`` before its items, so the token is in
    the first few hundred bytes: this reads those and nothing else, and works on the
    first chunk of a body still arriving. A list laid out otherwise is walked whole,
    which needs the whole body.

    Raises:
        ProtoError: the body is not a protobuf list, or its head ends inside the list's
            metadata.
    """
    start, stop = unwrap_head(data)
    if start == stop:
        return ""
    t, i = varint(data, start)
    if t != _LIST_META_TAG:
        return pod_page(data, _NOTHING).continue_token
    n, i = varint(data, i)
    if i + n > len(data):
        raise ProtoError("the body ends inside the list's metadata")
    try:
        return list_meta(data, i, i + n)[0]
    except UnicodeDecodeError:
        raise ProtoError("a string is not UTF-8") from None


_NOTHING = Pick()
