"""Value types and checks the configuration sections share.

A :class:`Duration` is a number of seconds that the file may write as ``90``, ``90s``,
``10m`` or ``1h``; :func:`parse_duration` reads one. A section's checks raise
:class:`InvalidValue`, which names the key at fault, so the loader can say where that
value came from. ``names_given`` is the check every section with object names runs: a
blank name would address a whole collection.
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


class InvalidValue(ValueError):
    """A section refuses a value: raised by its checks with the key at fault.

    ``key`` is the section's field the complaint is about, or None when it is about a
    combination of keys (no one value is to blame). ``problem`` says what is wrong
    without naming the key (``must be 2 or 3, got 5``), as a flag's error says it.
    The message, ``str()``, is the key, ``sep`` and the problem (``protocol must be 2
    or 3, got 5``, or with ``sep=": "`` a list's ``tolerations: expected …``), unless a
    whole ``message`` is given.
    """

    def __init__(
        self, key: str | None, problem: str, *, sep: str = " ", message: str | None = None
    ) -> None:
        if message is None:
            message = problem if key is None else f"{key}{sep}{problem}"
        super().__init__(message)
        self.key = key
        self.problem = problem


def names_given(section: object, *keys: str) -> None:
    """Object names cannot be blank: a blank name would address the whole collection."""
    for key in keys:
        if not str(getattr(section, key)).strip():
            raise InvalidValue(key, "cannot be empty")
