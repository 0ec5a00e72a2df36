"""Runs of ``fracctl recreate KIND/NAME`` that stopped half-way on this machine.

Each object's procedure keeps a journal under ``recreate.state_dir``/objects
(:mod:`fracctl.flows.engines.journal`) from before its first change until it ends, and the
journal names the command that resumes it, as the run was given it. While one is open
the object is not done, whatever the cluster looks like (a HelmRelease may still be
suspended, a StatefulSet deleted): drift and doctor read the journals here and name
that same command, the one the stopped run printed.
"""

from __future__ import annotations

import json
from pathlib import Path

from fracctl.core.procedures.model import Unfinished, rerun_of
from fracctl.flows.context import Context


def objects_folder(ctx: Context) -> Path:
    """Where the object journals are (``recreate.state_dir``/objects)."""
    return Path(ctx.expand(ctx.config.recreate.state_dir)) / "objects"


def open_journals(ctx: Context) -> dict[str, Unfinished]:
    """Every readable journal on this machine, by object key.

    A broken file is left out: the recreate that reads it says what is wrong with it.
    """
    folder = objects_folder(ctx)
    if not folder.is_dir():
        return {}
    found: dict[str, Unfinished] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            key = str(data["key"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found[key] = Unfinished(
            key=key,
            procedure=str(data.get("procedure") or ""),
            phase=str(data.get("phase") or ""),
            path=str(path),
            rerun=str(data.get("rerun") or rerun_of(key)),
            suspended=str(data.get("suspended") or ""),
        )
    return found
