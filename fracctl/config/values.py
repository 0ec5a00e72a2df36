"""Value types and checks the configuration sections share.

A :class:`Duration` is a number of seconds that the file may write as ``90``, ``90s``,
``10m`` or ``1h``; :func:`parse_duration` reads one. ``names_given`` is the check every
section with object names runs: a blank name would address a whole collection.
"""

from __future__ import annotations

import re


class Duration(float):
    """Seconds, written in config as ``90``, ``90s``, ``10m`` or ``1h``."""


DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def parse_duration(value: object) -> Duration:
    """Parse a duration; raise ValueError with a readable message."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 10m or 600s, got {value!r}")
    if isinstance(value, (int, float)):
        return Duration(value)
    m = DURATION.match(str(value))
    if not m:
        raise ValueError(f"expected a duration like 10m or 600s, got {value!r}")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    return Duration(float(m.group(1)) * scale)


def names_given(section: object, *keys: str) -> None:
    """Object names cannot be blank: a blank name would address the whole collection."""
    for key in keys:
        if not str(getattr(section, key)).strip():
            raise ValueError(f"{key} cannot be empty")
