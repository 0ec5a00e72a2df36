"""The helm backend's release id and its journal.

The journal says which upgrade a fracctl on this machine started, so that a rerun
recognises the revision a killed run left pending.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fracctl.adapters.files import write_whole
from fracctl.adapters.process import alive
from fracctl.core.gitops import helm_release
from fracctl.core.gitops.helm_release import Release
from fracctl.errors import ExternalError
from fracctl.flows.context import Context


@dataclass(frozen=True)
class ReleaseId:
    """One release: its name and namespace."""

    name: str
    namespace: str

    @classmethod
    def configured(cls, ctx: Context) -> ReleaseId:
        """The configured release.

        ``git.helm_release`` (else the chart folder's name, as ``render``) in
        ``git.helm_namespace`` (else ``default``, helm's own).
        """
        g = ctx.config.git
        return cls(helm_release.release_of(g.helm_release, g.path), g.helm_namespace or "default")

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def journal_path(ctx: Context, rid: ReleaseId) -> Path:
    """Where the journal of this release's upgrade lives (``recreate.state_dir``)."""
    state = Path(ctx.expand(ctx.config.recreate.state_dir))
    return state / f"helm-{rid.namespace}-{rid.name}.json"


def read_journal(ctx: Context, rid: ReleaseId) -> dict[str, Any] | None:
    """The journal of an upgrade begun here and not finished, if any."""
    path = journal_path(ctx, rid)
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ExternalError(f"cannot read the helm journal {path}: {e}") from None
    return found if isinstance(found, dict) else None


def write_journal(ctx: Context, rid: ReleaseId, entry: dict[str, Any]) -> None:
    """Write the journal whole (a temporary file renamed over it)."""
    path = journal_path(ctx, rid)
    try:
        write_whole(path, json.dumps(entry, sort_keys=True))
    except OSError as e:
        raise ExternalError(
            f"cannot write the helm journal {path}: {e.strerror}; nothing was changed",
            hint="fix recreate.state_dir or its permissions",
        ) from None


def left_by_us(ctx: Context, rid: ReleaseId, release: Release) -> str:
    """Why ``release``'s pending revision is one a killed fracctl here left ("" if not).

    The journal names the revision the upgrade started from, the host and helm's pid; the
    pending revision must be the next one, started on this host, with that helm gone
    (it dies with the fracctl that ran it). The recreate Lease, held now, keeps any other
    fracctl out; nothing can keep a person's own helm out, which is why anything else
    pending is refused.
    """
    entry = read_journal(ctx, rid)
    if not entry or int(entry.get("from_revision", -1)) + 1 != release.version:
        return ""
    if entry.get("host") != socket.gethostname():
        return ""
    pid = int(entry.get("pid") or 0)
    if pid and alive(pid):
        return ""
    return (
        f"revision {release.version} was left {release.status} by fracctl run "
        f"{entry.get('run', '?')} on this host (its helm, pid {pid or '?'}, is gone)"
    )
