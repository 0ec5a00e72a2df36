"""The pinned-memory-limit list: one parser, the same rules for the config and the agent.

An item is ``<device>=<size>``: a whole number with MPS's own qualifiers (``M`` or
``G``, upper case, as in ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M,1=4096M``), the
spelled-out ``MiB``/``GiB``, or none (MiB). A size of zero is an error.
"""

from __future__ import annotations

import pytest

from fracctl import config as cfg
from fracctl.core.mps import parse_pinned_limits
from fracctl.errors import ConfigError


@pytest.mark.parametrize(
    ("item", "mib"),
    [
        ("0=4096M", 4096),
        ("0=4G", 4096),
        ("0=4096MiB", 4096),
        ("0=4GiB", 4096),
        ("0=4096", 4096),
        ("  0=4096M\n", 4096),
        ("00=1M", 1),
    ],
)
def test_accepted_sizes(item: str, mib: int) -> None:
    assert parse_pinned_limits([item]) == {0: mib}


def test_several_devices() -> None:
    assert parse_pinned_limits(["0=4096M", "1=8G", "7=512"]) == {0: 4096, 1: 8192, 7: 512}
    assert parse_pinned_limits([]) == {}


@pytest.mark.parametrize(
    "item",
    [
        "0=0",  # zero
        "0=0M",
        "0=000G",
        "0=4096m",  # MPS's qualifiers are upper case
        "0=4g",
        "0=4096mib",
        "0=4096MB",
        "0=4096K",
        "0=1T",
        "0=1.5G",  # whole numbers only
        "0=-1M",
        "-1=4096M",
        "0 = 4096M",
        "0=4096 M",
        "4096M",
        "x=1G",
        "0=",
        "=4096M",
        "0=4096M,1=4096M",  # one item per device: the list is already split
        "0=4096M;rm -rf /",
        "\u0663=4096M",  # a digit, but not an ASCII one
    ],
)
def test_refused_items(item: str) -> None:
    with pytest.raises(ValueError, match="^expected <device>=<size> like 0=4096M"):
        parse_pinned_limits([item])


@pytest.mark.parametrize("items", [["0=1G", "0=2G"], ["0=1G", "00=1G"]])
def test_a_device_listed_twice(items: list[str]) -> None:
    with pytest.raises(ValueError, match="^device 0 is listed twice"):
        parse_pinned_limits(items)


@pytest.mark.parametrize("item", ["0=0", "0=4096m", "0=4096MB", "0=1.5G"])
def test_the_config_refuses_what_the_parser_refuses(item: str) -> None:
    with pytest.raises(ValueError, match="^pinned_mem_limits: expected <device>=<size>"):
        cfg.MPSConfig(pinned_mem_limits=[item])
    with pytest.raises(ConfigError, match="pinned_mem_limits"):
        cfg.load(None, env={"FRACCTL_MPS_PINNED_MEM_LIMITS": item})


def test_the_config_accepts_what_the_parser_accepts() -> None:
    items = ["0=4096M", "1=8G", "2=4096MiB", "3=4GiB", "4=256"]
    assert cfg.MPSConfig(pinned_mem_limits=items).pinned_mem_limits == items
    assert cfg.load(None, env={"FRACCTL_MPS_PINNED_MEM_LIMITS": ",".join(items)}).mps == (
        cfg.MPSConfig(pinned_mem_limits=items)
    )


def test_the_config_names_a_device_listed_twice() -> None:
    with pytest.raises(ValueError, match="^pinned_mem_limits: device 1 is listed twice"):
        cfg.MPSConfig(pinned_mem_limits=["1=1G", "1=2G"])
