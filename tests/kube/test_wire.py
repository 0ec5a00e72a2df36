"""The protobuf wire format on hand-built bytes: varints, fields, map entries, the envelope."""

from __future__ import annotations

import pytest

from fracctl.adapters.kube import wire
from fracctl.adapters.kube.wire import BYTES, FIXED32, FIXED64, VARINT, ProtoError
from tests.kube.test_podpage_scan import envelope, field, varint


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 1 << 35, (1 << 64) - 1])
def test_a_varint_reads_back(n: int) -> None:
    data = b"x" + varint(n) + b"y"
    assert wire.varint(data, 1) == (n, len(data) - 1)


def test_a_broken_varint_is_a_proto_error() -> None:
    with pytest.raises(ProtoError, match="truncated"):
        wire.varint(b"\x80\x80", 0)
    with pytest.raises(ProtoError, match="too long"):
        wire.varint(b"\xff" * 11, 0)


def test_fields_give_number_wire_type_and_span_and_step_over_fixed_ones() -> None:
    body = (
        field(1, "ab")
        + field(2, 300)
        + varint(wire.tag(3, FIXED64)) + b"\x00" * 8
        + varint(wire.tag(4, FIXED32)) + b"\x00" * 4
        + field(20, b"")
    )  # fmt: skip
    got = list(wire.fields(body, 0, len(body)))
    assert got == [(1, BYTES, 2, 4), (2, VARINT, 300, 7), (20, BYTES, len(body), len(body))]
    assert wire.skip(body, 5, VARINT) == 7  # the value after the tag at 4
    with pytest.raises(ProtoError, match="wire type 3"):
        list(wire.fields(varint(wire.tag(1, 3)), 0, 1))
    with pytest.raises(ProtoError, match="runs past"):
        list(wire.fields(body, 0, 3))


def test_a_map_entry_is_its_key_and_value() -> None:
    data = field(1, "gpu-fraction") + field(2, "0.5")
    assert wire.entry(data, 0, len(data)) == ("gpu-fraction", "0.5")
    assert wire.tag(wire.MAP_KEY, BYTES) == 0x0A and wire.tag(wire.MAP_VALUE, BYTES) == 0x12


def test_the_head_of_a_body_says_where_the_object_lies() -> None:
    body = envelope(field(1, field(3, "token")) + field(2, b"x" * 500))
    start, stop = wire.unwrap_head(body[:40])
    assert (start, stop) == wire.unwrap(body)[1:]
    assert stop > 40
    with pytest.raises(ProtoError, match="holds no object"):
        wire.unwrap_head(wire.MAGIC + field(1, "v1"))
