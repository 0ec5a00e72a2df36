"""Files fracctl keeps (journals, backups): written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


def write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it.

    A reader, or a run killed mid-write, sees the old file or the new one, never half of
    one. The folder is created if needed. Raises OSError as the file system does.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
