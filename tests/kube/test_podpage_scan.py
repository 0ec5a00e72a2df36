"""The protobuf walker on hand-built messages: every field it reads, every way a body
can be wrong. Its agreement with the real API server is tests/kube/test_pod_pages_cluster.py."""

from __future__ import annotations

import pytest

from fracctl.adapters.kube import podpage, podscan, wire
from fracctl.adapters.kube.podscan import PodFields
from fracctl.adapters.kube.wire import ProtoError


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, payload: bytes | str | int) -> bytes:
    """One field: a varint for an int, length-delimited for bytes or a string."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(raw: bytes, *, encoding: str = "") -> bytes:
    type_meta = field(1, "v1") + field(2, "PodList")
    body = field(1, type_meta) + field(2, raw)
    if encoding:
        body += field(3, encoding)
    return wire.MAGIC + body + field(4, "application/vnd.kubernetes.protobuf")


def pod(
    name: str,
    namespace: str,
    annotations: dict[str, str] | None = None,
    node: str = "",
    phase: str = "",
) -> bytes:
    meta = field(1, name) + field(2, "gen-") + field(3, namespace) + field(7, 3)
    meta += field(11, field(1, "app") + field(2, "x"))  # a label: not read
    for k, v in (annotations or {}).items():
        meta += field(12, field(1, k) + field(2, v))
    meta += field(17, field(1, "kubectl") + field(7, b'{"f:spec":{}}' * 50))  # managedFields
    spec = field(2, field(1, "main") + field(2, "busybox")) + field(8, "default")
    if node:
        spec += field(10, node)
    spec += field(26, 30)  # a varint after nodeName
    status = (field(1, phase) if phase else b"") + field(4, "10.0.0.1")
    return field(1, meta) + field(2, spec) + field(3, status)


def page(*pods: bytes, token: str = "", remaining: int | None = None) -> bytes:
    list_meta = field(2, "123") + (field(3, token) if token else b"")
    if remaining is not None:
        list_meta += field(4, remaining)
    return envelope(field(1, list_meta) + b"".join(field(2, p) for p in pods))


def test_reads_name_namespace_annotations_node_and_phase() -> None:
    body = page(
        pod("a", "team-a", {"gpu-fraction": "0.5", "x": ""}, "node-1", "Running"),
        pod("b", "team-b"),
        token="next-please",
        remaining=7,
    )
    got = podscan.scan_page(body)
    assert got.pods == [
        PodFields("a", "team-a", {"gpu-fraction": "0.5", "x": ""}, "node-1", "Running"),
        PodFields("b", "team-b", {}, "", ""),
    ]
    assert (got.continue_token, got.remaining) == ("next-please", 7)
    assert podpage.continue_token(body) == "next-please"


def test_the_token_is_read_from_the_head_of_a_body_still_arriving() -> None:
    body = page(*(pod(f"p{i}", "ns") for i in range(50)), token="t-1")
    assert podpage.continue_token(body[:80]) == "t-1"
    with pytest.raises(ProtoError, match="list's metadata"):
        podpage.continue_token(body[:30])
    # items before the list's metadata: the whole body is walked
    odd = envelope(field(2, pod("a", "ns")) + field(1, field(3, "t-2")))
    assert podpage.continue_token(odd) == "t-2"
    assert podpage.continue_token(envelope(b"")) == ""
    for bad, why in ((b"{}", "not a Kubernetes"), (wire.MAGIC, "holds no object"),
                     (wire.MAGIC + b"\x12", "truncated")):  # fmt: skip
        with pytest.raises(ProtoError, match=why):
            podpage.continue_token(bad)


def test_the_last_page_has_no_token() -> None:
    body = page(pod("a", "ns"))
    assert podscan.scan_page(body).continue_token == ""
    assert podscan.scan_page(body).remaining is None
    assert podpage.continue_token(body) == ""


def test_long_fields_and_multibyte_lengths() -> None:
    value = "é" * 300  # a two-byte length, and UTF-8 that is not ASCII
    got = podscan.scan_page(page(pod("a" * 200, "ns", {"k": value}, "n" * 253)))
    assert got.pods[0].annotations == {"k": value}
    assert got.pods[0].name == "a" * 200 and got.pods[0].node == "n" * 253


def test_fixed_width_fields_are_stepped_over() -> None:
    fixed64 = varint(20 << 3 | 1) + b"\x00" * 8
    fixed32 = varint(21 << 3 | 5) + b"\x00" * 4
    body = page(pod("a", "ns") + fixed64 + fixed32)
    assert podscan.scan_page(body).pods[0].name == "a"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"kind":"PodList"}', "not a Kubernetes protobuf body"),
        (b"", "not a Kubernetes protobuf body"),
        (wire.MAGIC + field(1, field(1, "v1")), "holds no object"),
        (envelope(b"", encoding="gzip"), "content encoding"),
        (page(pod("a", "ns"))[:-40], "runs past|ends inside"),
        (envelope(field(2, field(1, field(1, b"\xff\xfe")))), "not UTF-8"),
        (envelope(field(2, varint(1 << 3 | 3))), "wire type 3"),
        (envelope(field(2, b"\xff" * 11)), "varint too long|ends inside|runs past"),
        (envelope(field(2, field(1, varint(1 << 3 | 2) + varint(50) + b"ab"))), "runs past"),
    ],
)
def test_a_malformed_body_is_a_proto_error(body: bytes, why: str) -> None:
    with pytest.raises(ProtoError, match=why):
        podscan.scan_page(body)


def test_status_reads_an_error_like_its_json_form() -> None:
    cause = field(1, "FieldValueInvalid") + field(2, "bad value") + field(3, "spec.x")
    raw = (
        field(2, "Failure")
        + field(3, 'pods "x" is forbidden')
        + field(4, "Forbidden")
        + field(5, field(1, "x") + field(4, cause))
        + field(6, 403)
    )
    assert wire.status(envelope(raw)) == {
        "kind": "Status",
        "message": 'pods "x" is forbidden',
        "reason": "Forbidden",
        "code": 403,
        "details": {"causes": [{"reason": "FieldValueInvalid", "message": "bad value",
                                "field": "spec.x"}]},
    }  # fmt: skip


def test_a_json_page_reads_the_same() -> None:
    got = podscan.scan_page_json(
        {
            "metadata": {"continue": "t", "remainingItemCount": 3},
            "items": [
                {
                    "metadata": {"name": "a", "namespace": "ns", "annotations": {"k": "v"}},
                    "spec": {"nodeName": "n1"},
                    "status": {"phase": "Pending"},
                },
                {"metadata": {"name": "b", "namespace": "ns"}},
            ],
        }
    )
    assert got.pods == [PodFields("a", "ns", {"k": "v"}, "n1", "Pending"), PodFields("b", "ns")]
    assert (got.continue_token, got.remaining) == ("t", 3)
    assert podscan.scan_page_json({"items": None}).pods == []
