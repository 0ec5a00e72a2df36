"""The effective configuration, each value with where it came from (``fracctl config view``).

:func:`effective` loads the configuration as every command does (so a bad value is the
same one-line error), then says for every key of every section, the backends' own
included, which layer its value came from: a flag, a ``FRACCTL_<SECTION>_<KEY>``
variable, a line of the file, or the default. The value of a key whose name says it
holds a secret (a token, a password…) is shown only as :data:`~fracctl.redact.MASK`,
even when it names a file: the view is made to be pasted into tickets and chat.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fracctl.config.loader import layer_from_env, load, read_file, section_types, sections
from fracctl.config.values import Duration
from fracctl.redact import MASK

#: Key names whose values are secrets, or lead to one.
SECRET_KEY = re.compile(r"token|passw(or)?d|secret|credential|private_?key|api_?key", re.I)

#: Where a value came from, strongest first.
SOURCES = ("flag", "env", "file", "default")


@dataclass(frozen=True)
class Setting:
    """One key's effective value and where it came from."""

    key: str  # section.key
    value: Any  # as the configuration holds it (a Duration is seconds)
    source: str  # one of SOURCES
    origin: str | None  # the flag, the variable or file:line; None for a default

    @property
    def secret(self) -> bool:
        """Whether the key's name says it holds (or leads to) a secret."""
        return bool(SECRET_KEY.search(self.key.split(".", 1)[1]))

    @property
    def shown(self) -> Any:
        """The value as plain data (a Duration as seconds), masked when it is a secret."""
        if self.secret and self.value not in (None, ""):
            return MASK
        return plain(self.value)

    def to_dict(self) -> dict[str, Any]:
        """The setting as plain data."""
        return {"key": self.key, "value": self.shown, "source": self.source, "origin": self.origin}


@dataclass(frozen=True)
class View:
    """Every setting of the effective configuration, in the file's order of sections."""

    file: str | None  # the fracctl.yaml read, if any
    settings: list[Setting]

    def to_dict(self) -> dict[str, Any]:
        """The view as plain data (``-o json``, ``-o yaml``)."""
        return {"file": self.file, "settings": [s.to_dict() for s in self.settings]}


def plain(value: Any) -> Any:
    """A configuration value as JSON-ready data: a Duration as seconds, entries as mappings."""
    if isinstance(value, Duration):
        return float(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def effective(
    path: str | None = None,
    *,
    env: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> View:
    """The effective configuration and each value's source; arguments as for :func:`load`.

    Raises:
        ConfigError: the file or a value is invalid (as :func:`load` does).
    """
    config = load(path, env=env, overrides=overrides, flags=flags)
    file = config.source
    from_file = read_file(Path(file)) if file else {}
    from_env = layer_from_env(env)
    given = {k for k, v in (overrides or {}).items() if v is not None}
    own = {f.name for f in dataclasses.fields(config)}
    settings = []
    for section, cls in sections().items():
        values = getattr(config, section) if section in own else config.section(section)
        for key in section_types(cls):
            dotted = f"{section}.{key}"
            source, origin = "default", None
            if dotted in given:
                source, origin = "flag", (flags or {}).get(dotted) or "a command-line flag"
            elif key in from_env.get(section, {}):
                source, origin = "env", f"FRACCTL_{section}_{key}".upper()
            elif key in from_file.get(section, {}):
                line = from_file[section][key].line
                source, origin = "file", f"{file}:{line}" if line else file
            settings.append(Setting(dotted, getattr(values, key), source, origin))
    return View(file, settings)
