"""Sizes and pinned device-memory limits, read into whole MiB.

``parse_mib`` reads a size given on the command line (``4096M``, ``4g``, ``256``).
``parse_pinned_limits`` is the one reader of the pinned-memory-limit list
(``mps.pinned_mem_limits``, ``--pinned-mem-limit``, ``FRACCTL_MPS_PINNED_MEM_LIMITS``):
the configuration validates with it and the node agent parses with it, so both accept
and refuse the same items.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

MIB = 1024 * 1024

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)


def parse_mib(value: str | int) -> int:
    """Parse ``4096M``, ``4G``, ``4096MiB`` or a bare number (MiB) into whole MiB.

    Raises:
        ValueError: not a size, or not a whole, positive number of MiB.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a size like 4096M or 4G, got {value!r}")
    if isinstance(value, int):
        mib = float(value)
    else:
        m = _SIZE.match(value)
        if not m:
            raise ValueError(f"expected a size like 4096M or 4G, got {value!r}")
        scale = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024}
        mib = float(m.group(1)) * scale[m.group(2).upper()]
    if mib <= 0 or mib != int(mib):
        raise ValueError(f"expected a positive whole number of MiB, got {value!r}")
    return int(mib)


# One item of the list: ``<device>=<size>``, the size a whole number with MPS's own
# qualifiers. ``nvidia-cuda-mps-control`` takes an integer followed by ``M`` or ``G``
# (upper case), as ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4096M,1=4096M`` shows; ``MiB`` and
# ``GiB`` are the same units spelled out, and a bare number is MiB. A lower-case
# qualifier (``4096m``) is refused rather than guessed at, and so is a size of zero.
_PINNED = re.compile(r"([0-9]+)=([0-9]+)(M|G|MiB|GiB)?")
_PINNED_SCALE = {None: 1, "M": 1, "MiB": 1, "G": 1024, "GiB": 1024}


def parse_pinned_limits(items: Iterable[str]) -> dict[int, int]:
    """``["0=4096M", "1=8G"]`` -> ``{0: 4096, 1: 8192}`` (device -> MiB).

    Raises:
        ValueError: an item is not ``<device>=<size>`` with a size above zero, or a
            device is listed twice.
    """
    out: dict[int, int] = {}
    for item in items:
        m = _PINNED.fullmatch(item.strip())
        if not m or int(m.group(2)) == 0:
            raise ValueError(f"expected <device>=<size> like 0=4096M, got {item!r}")
        index = int(m.group(1))
        if index in out:
            raise ValueError(f"device {index} is listed twice (two pinned memory limits)")
        out[index] = int(m.group(2)) * _PINNED_SCALE[m.group(3)]
    return out


def pinned_limit_value(limits: Mapping[int, int]) -> str:
    """The client variable's form: ``{0: 4096, 1: 4096}`` -> ``0=4096M,1=4096M``."""
    return ",".join(f"{d}={mib}M" for d, mib in sorted(limits.items()))
