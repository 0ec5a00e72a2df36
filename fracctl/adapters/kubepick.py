"""Pick the named fields of a pod, or of a list item, from protobuf or from JSON.

A reader that needs more of a pod than the scan's name, namespace, annotations, node
and phase (:mod:`fracctl.adapters.kubeproto`) names the fields it reads as JSON paths
(``spec.containers[].resources.limits``). :func:`compile_pod` turns those into a
:class:`Pick`: a walk of the protobuf wire format that decodes only those fields and
steps over every other one by its length, and a pruning of a JSON object (a server
that answers JSON, or a list read as JSON) to the same fields. Both give the same
plain dicts, shaped like the object's JSON: the fields named, nothing else, an empty
string left out (JSON leaves most of them out), a message that is present kept even
when empty.

Field numbers are those of ``k8s.io/api`` ``core/v1/generated.proto``; only the fields
fracctl reads are in :data:`POD_FIELDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.adapters.kubeproto import ProtoError, map_entry, read_varint, skip_field, unwrap

# A field's kind: a string, a signed integer, a bool, a map<string, string>, a
# map<string, Quantity> (read as {name: quantity string}), a message or repeated message.
STR, INT, BOOL, MAP, QMAP, MSG, LIST = "str", "int", "bool", "map", "qmap", "msg", "list"
# Not a kind of field but a way to pick one: where each occurrence lies in the body.
WHERE = "where"

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

# map<string, X> entries; a Quantity's string
_KEY_TAG, _VALUE_TAG = 1 << 3 | 2, 2 << 3 | 2


@dataclass(frozen=True)
class Pick:
    """The fields to read: by field number for protobuf, by key for JSON.

    The API server writes a message's fields in the order of their numbers (its
    generated marshallers do), so a walk stops past the last number it wants
    (:attr:`last`) rather than stepping over the rest: most of a pod spec, its status.
    """

    proto: Mapping[int, tuple[str, str, Pick | None]] = field(default_factory=dict)
    keys: Mapping[str, tuple[str, Pick | None]] = field(default_factory=dict)
    last: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "last", max(self.proto, default=0))


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


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _qmap_entry(buf: bytes, i: int, end: int) -> tuple[str, str]:
    """A ``map<string, Quantity>`` entry: (name, the quantity's string)."""
    key = value = ""
    while i < end:
        tag, i = read_varint(buf, i)
        if tag & 7 != 2:
            i = skip_field(buf, i, tag & 7)
            continue
        n, i = read_varint(buf, i)
        if tag == _KEY_TAG:
            key = buf[i : i + n].decode()
        elif tag == _VALUE_TAG:
            value = _quantity(buf, i, i + n)
        i += n
    return key, value


def _quantity(buf: bytes, i: int, end: int) -> str:
    """A Quantity's string (its field 1)."""
    while i < end:
        tag, i = read_varint(buf, i)
        if tag & 7 != 2:
            i = skip_field(buf, i, tag & 7)
            continue
        n, i = read_varint(buf, i)
        if tag == _KEY_TAG:
            return buf[i : i + n].decode()
        i += n
    return ""


def _message(buf: bytes, i: int, end: int, pick: Pick) -> dict[str, Any]:
    """The picked fields of the message in ``buf[i:end]``, as a JSON-shaped dict."""
    out: dict[str, Any] = {}
    wanted, last = pick.proto, pick.last
    while i < end:
        tag = buf[i]
        i += 1
        if tag & 0x80:
            tag, i = read_varint(buf, i - 1)
        if tag >> 3 > last:
            return out  # past every field wanted: the rest is not read (see Pick)
        entry = wanted.get(tag >> 3)
        wire = tag & 7
        if wire == 0:
            if entry is None:  # stepped over by its bytes
                while buf[i] & 0x80:
                    i += 1
                i += 1
                continue
            value, i = read_varint(buf, i)
            key, kind, _ = entry
            out[key] = bool(value) if kind == BOOL else _signed(value)
            continue
        if wire != 2:
            i = skip_field(buf, i, wire)
            continue
        n = buf[i]
        i += 1
        if n & 0x80:
            n, i = read_varint(buf, i - 1)
        stop = i + n
        if stop > end:
            raise ProtoError("field runs past its message")
        if entry is not None:
            key, kind, sub = entry
            if kind == STR:
                if n:
                    out[key] = buf[i:stop].decode()
            elif kind == MAP:
                k, v = map_entry(buf, i, stop)
                out.setdefault(key, {})[k] = v
            elif kind == QMAP:
                k, v = _qmap_entry(buf, i, stop)
                out.setdefault(key, {})[k] = v
            elif kind == MSG and sub is not None:
                out[key] = _message(buf, i, stop, sub)
            elif kind == LIST and sub is not None:
                out.setdefault(key, []).append(_message(buf, i, stop, sub))
            elif kind == WHERE:
                out.setdefault(key, []).append((i, stop))
        i = stop
    if i != end:
        raise ProtoError("field runs past its message")
    return out


def prune(obj: Mapping[str, Any], pick: Pick) -> dict[str, Any]:
    """The picked fields of a JSON object, shaped as :func:`pod_page` gives them."""
    out: dict[str, Any] = {}
    for key, (kind, sub) in pick.keys.items():
        if kind == WHERE:
            continue  # no bytes to point into
        value = obj.get(key)
        if value is None or value == "":
            continue
        if sub is not None and kind == MSG:
            if isinstance(value, Mapping):
                out[key] = prune(value, sub)
        elif sub is not None and kind == LIST:
            listed = (
                [prune(v, sub) for v in value if isinstance(v, Mapping)]
                if isinstance(value, list)
                else []
            )
            if listed:
                out[key] = listed
        elif kind in (MAP, QMAP):
            if isinstance(value, Mapping) and value:
                out[key] = {str(k): str(v) for k, v in value.items()}
        else:
            out[key] = value
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
        while i < end:
            tag, i = read_varint(buf, i)
            if tag & 7 != 2:
                i = skip_field(buf, i, tag & 7)
                continue
            n, i = read_varint(buf, i)
            if i + n > end:
                raise ProtoError("field runs past its message")
            if tag >> 3 == 2:
                pod = _message(buf, i, i + n, pick)
                if refine is None:
                    pods.append(pod)
                else:
                    kept = refine.judge(pod, buf, i, i + n)
                    if isinstance(kept, Reread):
                        pods.append(_message(buf, i, i + n, refine.pick))
                    elif kept is not None:
                        pods.append(kept)
            elif tag >> 3 == 1:
                meta = _message(buf, i, i + n, _LIST_META)
                page.continue_token = str(meta.get("continue") or "")
                remaining = meta.get("remainingItemCount")
                page.remaining = remaining if isinstance(remaining, int) else None
            i += n
    except UnicodeDecodeError:
        raise ProtoError("a string is not UTF-8") from None
    except IndexError:
        raise ProtoError("the body ends inside a field") from None
    if i != end:
        raise ProtoError("field runs past its message")
    return page


_LIST_META = Pick({3: ("continue", STR, None), 4: ("remainingItemCount", INT, None)})


def pod_page_json(page: Mapping[str, Any], pick: Pick, refine: Refine | None = None) -> PickedPage:
    """The same page from a PodList decoded from JSON."""
    items = page.get("items")
    pods: list[Mapping[str, Any]] = []
    for p in items if isinstance(items, list) else ():
        if isinstance(p, Mapping):
            pod = prune(p, pick)
            if refine is None:
                pods.append(pod)
                continue
            kept = refine.judge(pod, None, 0, 0)
            if isinstance(kept, Reread):
                pods.append(prune(p, refine.pick))
            elif kept is not None:
                pods.append(kept)
    meta = page.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    remaining = meta.get("remainingItemCount")
    return PickedPage(
        pods,
        str(meta.get("continue") or ""),
        remaining if isinstance(remaining, int) else None,
    )
