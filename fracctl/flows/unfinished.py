"""Runs of ``fracctl recreate KIND/NAME`` that stopped half-way on this machine.

Each object's procedure keeps a journal under ``recreate.state_dir``/objects
(:mod:`fracctl.flows.kinds.journal`) from before its first change until it ends, and the
journal names the command that resumes it, as the run was given it. While one is open
the object is not done, whatever the cluster looks like (a HelmRelease may still be
suspended, a StatefulSet deleted): drift and doctor read the journals here and name
that same command, the one the stopped run printed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fracctl.flows.context import Context


@dataclass(frozen=True)
class Unfinished:
    """One open journal: which object, how far its procedure got, and how to finish."""

    key: str  # Kind/namespace/name
    procedure: str
    phase: str  # the last step done ("" before the first)
    path: str
    rerun: str  # the command that resumes it
    suspended: str = ""  # what the run holds suspended until its rerun releases it

    def said(self) -> str:
        """One sentence: what stopped where, and what it still holds."""
        held = f"; {self.suspended} is suspended until the rerun" if self.suspended else ""
        return (
            f"a fracctl recreate of it stopped in its {self.procedure} procedure (last step "
            f"done: {self.phase or 'journaled'}; journal {self.path}{held})"
        )


def objects_folder(ctx: Context) -> Path:
    """Where the object journals are (``recreate.state_dir``/objects)."""
    return Path(ctx.expand(ctx.config.recreate.state_dir)) / "objects"


def rerun_of(key: str) -> str:
    """The plain command that resumes ``key``'s procedure, when its journal names none."""
    kind, _, rest = key.partition("/")
    namespace, _, name = rest.rpartition("/")
    return f"fracctl recreate {kind}/{name}" + (f" -n {namespace}" if namespace else "")


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
