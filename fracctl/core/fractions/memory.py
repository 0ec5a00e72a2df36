"""The agents' GPU-memory annotations: which container a key names, and in which format.

A fractional pod asks for GPU memory per container with a key under the agents' prefix;
a key in another agent format, or under another prefix, is silently ignored by the
agents that read this one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from fracctl.core.fractions.fractional import AGENT_FORMATS, AgentFormat, Prefix


def unread_memory_keys(
    annotations: Mapping[str, str] | None, read: Prefix
) -> list[tuple[str, str]]:
    """GPU-memory keys in any known format that the agents reading ``read`` ignore.

    Returns:
        ``(key, the key the agents read instead)`` for each such annotation, sorted.
    """
    if not annotations:
        return []
    wanted = read.format
    out: list[tuple[str, str]] = []
    for fmt in AGENT_FORMATS.values():
        for prefix in {fmt.default_prefix, read.value}:
            for key in annotations:
                container = _memory_container(key, prefix, fmt)
                if container is None:
                    continue
                which = "request" if key.endswith("request") else "limit"
                instead = wanted.memory_key(read.value, container, which)
                if instead != key and instead not in annotations:
                    out.append((key, instead))
    return sorted(set(out))


def memory_key_container(key: str, prefixes: Iterable[Prefix]) -> str | None:
    """The container an agents' GPU-memory key names, under any of ``prefixes``; or None."""
    for p in prefixes:
        for fmt in AGENT_FORMATS.values():
            name = _memory_container(key, p.value, fmt)
            if name is not None:
                return name
    return None


_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|)\Z")
_SCALE = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_SCALE.update({f"{u}i": 1024 ** (i + 1) for i, u in enumerate("KMGTPE")})


def quantity_bytes(text: str) -> float | None:
    """A Kubernetes quantity in bytes (``4Gi``, ``2048Mi``, ``4096M``), or None.

    The forms the agents accept for a memory key (``resource.ParseQuantity``); the
    exponent form (``1e9``) and signs are left out as no memory limit is written so.
    """
    m = _QUANTITY.match(text.strip())
    return float(m.group(1)) * _SCALE[m.group(2)] if m else None


def _memory_container(key: str, prefix: str, fmt: AgentFormat) -> str | None:
    """The container a memory key of ``fmt`` under ``prefix`` names, or None."""
    if not key.startswith(prefix):
        return None
    rest = key[len(prefix) :]
    for suffix in fmt.memory:
        if rest.endswith("." + suffix):
            name = rest[: -len(suffix) - 1]
            if name and "." not in name and "/" not in name:
                return name
    return None
