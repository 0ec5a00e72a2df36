"""fracctl.yaml for tests: written from its sections, changed by key, never by editing text.

A test that needs other settings names them (``timeouts={"sync": "1ms"}``); the helpers
merge them into the file's sections, key by key, so a change cannot silently miss the
line it meant (as a string replacement does when the file is written differently).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

#: fracctl.yaml's content: each section's keys and values.
Sections = Mapping[str, Mapping[str, Any]]


def merged(base: Sections, changes: Sections) -> dict[str, dict[str, Any]]:
    """``base`` with ``changes`` merged in: each changed key replaces the base's, the other
    keys of its section stay, and a new section is added."""
    out = {section: dict(keys) for section, keys in base.items()}
    for section, keys in changes.items():
        out.setdefault(section, {}).update(keys)
    return out


def write_config(path: Path, sections: Sections) -> Path:
    """Write ``sections`` to ``path`` as a fracctl.yaml (paths as strings); returns ``path``."""
    doc = {section: {k: _plain(v) for k, v in keys.items()} for section, keys in sections.items()}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def read_config(path: Path) -> dict[str, dict[str, Any]]:
    """The sections of the fracctl.yaml at ``path``."""
    return yaml.safe_load(path.read_text()) or {}


def edit_config(path: Path, *, to: Path | None = None, **changes: Mapping[str, Any]) -> Path:
    """``path``'s sections with ``changes`` (by section) merged in, written to ``to`` or
    back to ``path``; returns the file written."""
    return write_config(to or path, merged(read_config(path), changes))


def _plain(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
