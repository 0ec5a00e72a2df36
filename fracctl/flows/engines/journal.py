"""What a procedure must remember across a crash: written before its first change.

One JSON file per object under ``recreate.state_dir``/objects, beside the backups: the
procedure, the old object's uid, and what it owned (each pod's uid and restart count,
the Deployment's ReplicaSets, the claims, the bridge). A rerun reads it to know that the
object it finds missing (or new) is its own work, and what the new object must adopt.
It is removed once the procedure ends.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fracctl.adapters.files import write_whole
from fracctl.errors import ExternalError
from fracctl.flows.context import Context
from fracctl.flows.unfinished import objects_folder


@dataclass
class ObjectJournal:
    """One object's procedure in progress."""

    key: str  # Kind/namespace/name
    procedure: str
    uid: str  # the original object's
    pods: dict[str, int] = field(default_factory=dict)  # uid -> restart count
    pod_names: dict[str, str] = field(default_factory=dict)  # uid -> name, for messages
    replicasets: list[str] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    bridge: str = ""
    backup: str = ""
    # What this run suspended: a Flux Kustomization ("namespace/name"), a HelmRelease
    # ("HelmRelease namespace/name") or an Argo CD application's automated sync
    # ("Application name", "… (enabled: true)" where that was written).
    suspended: str = ""
    phase: str = ""  # the last step done: deleted, created, adopted, released
    # The command that resumes it, as the run that wrote the journal was given it: what
    # the stopped run prints, and what drift and doctor name (fracctl.flows.unfinished).
    rerun: str = ""


def path_for(ctx: Context, key: str) -> Path:
    """The journal file of ``key`` (``Kind/namespace/name``)."""
    return objects_folder(ctx) / (key.replace("/", "_") + ".json")


def read(ctx: Context, key: str) -> ObjectJournal | None:
    """The journal of ``key``, or None."""
    return read_path(path_for(ctx, key))


def read_path(path: Path) -> ObjectJournal | None:
    """The journal in ``path``, or None when there is none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ExternalError(
            f"cannot read the journal {path}: {e}",
            hint="inspect it; remove it only once the object and its pods are as they should be",
        ) from None
    try:
        return ObjectJournal(**data)
    except TypeError:
        raise ExternalError(
            f"the journal {path} is not one fracctl wrote",
            hint="inspect it; remove it only once the object and its pods are as they should be",
        ) from None


def pending(ctx: Context) -> list[ObjectJournal]:
    """Every journal on this machine: procedures that began and have not ended."""
    folder = objects_folder(ctx)
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        data = read_path(path)
        if data is not None:
            found.append(data)
    return found


def write(ctx: Context, journal: ObjectJournal) -> str:
    """Write the journal whole (a temporary file renamed over it); its path."""
    path = path_for(ctx, journal.key)
    try:
        write_whole(path, json.dumps(asdict(journal), indent=1, sort_keys=True))
    except OSError as e:
        raise ExternalError(
            f"cannot write the journal {path}: {e.strerror}; nothing was changed",
            hint="fix recreate.state_dir or its permissions",
        ) from None
    return str(path)


def remove(ctx: Context, key: str) -> None:
    """Remove the journal of ``key`` (gone already is fine)."""
    path_for(ctx, key).unlink(missing_ok=True)


def suspended_label(suspended: str) -> str:
    """What a journal's ``suspended`` holds, and that it stays so (for a failure message)."""
    if suspended.startswith("Application "):
        app = suspended.removeprefix("Application ").removesuffix(ENABLED)
        return f"Argo CD application {app}'s automated sync stays off"
    kind = "" if " " in suspended else "Kustomization "
    return f"Flux {kind}{suspended} stays suspended"


ENABLED = " (enabled: true)"  # the application's automated sync said enabled: true
