"""What ``recreate`` keeps on the operator's machine: backups, the audit log, an Event.

The only local state of a recreate. A backup of the live object is written before any
delete (one file per incarnation, whole or absent); every run appends an audit line and,
once an object exists again, records an Event on it.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fracctl.adapters.files import write_whole
from fracctl.core.clock import utc_timestamp
from fracctl.core.kube.nodes import selector_of
from fracctl.core.kube.resources import EVENTS, EVENTS_NAMESPACE
from fracctl.core.outcome import Outcome
from fracctl.errors import ExternalError, FracctlError
from fracctl.flows.context import Context

Obj = dict[str, Any]


def state_dir(ctx: Context) -> Path:
    """Where backups and the audit log live."""
    return Path(ctx.expand(ctx.config.recreate.state_dir))


def backup(ctx: Context, live: Obj) -> str:
    """Write the live object as YAML before any delete; one file per object incarnation."""
    meta = live.get("metadata") or {}
    folder = state_dir(ctx) / "backups"
    try:
        return write_backup(folder, live, meta)
    except OSError as e:
        raise ExternalError(
            f"cannot write the backup under {folder}: {e.strerror}; nothing was deleted",
            hint="fix recreate.state_dir or its permissions",
        ) from None


def write_backup(folder: Path, live: Obj, meta: dict[str, Any]) -> str:
    """Write the live object (secrets redacted) into ``folder`` as YAML; its path."""
    from ruamel.yaml import YAML

    from fracctl.redact import redact_data

    stem = f"{live.get('kind', 'object').lower()}-{meta.get('name')}-{str(meta.get('uid', ''))[:8]}"
    existing = sorted(folder.glob(f"{stem}-*.yaml"))
    if existing:
        return str(existing[-1])
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = folder / f"{stem}-{stamp}.yaml"
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    text = io.StringIO()
    text.write(f"# Backup of {live.get('kind')}/{meta.get('name')} taken by fracctl at {stamp}\n")
    yaml.dump(redact_data(live), text)  # before dumping: YAML folds long strings
    write_whole(path, text.getvalue())  # a backup is either whole or absent
    return str(path)


def latest_backup(ctx: Context) -> str | None:
    """The newest backup of the target, if any."""
    t = ctx.config.target
    folder = state_dir(ctx) / "backups"
    found = sorted(
        folder.glob(f"{t.kind.lower()}-{t.name}-*.yaml"), key=lambda p: p.stat().st_mtime
    )
    return str(found[-1]) if found else None


def audit_entry(ctx: Context, action: str, *, who: str, **fields: Any) -> dict[str, Any]:
    """The start of an audit line: when, who, what, on which object, and ``fields``."""
    t = ctx.config.target
    return {
        "time": utc_timestamp(),
        "who": who,
        "action": action,
        "object": f"{t.kind}/{t.name}",
        **fields,
    }


def record(ctx: Context, *, live: Obj | None, entry: dict[str, Any]) -> str:
    """Append the audit line, and put an Event on the new object (best effort)."""
    from fracctl.redact import redact

    folder = state_dir(ctx)
    path = folder / "audit.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(redact(json.dumps(entry, sort_keys=True)) + "\n")
    except OSError as e:  # the cluster work is done; losing the log line must not undo that
        ctx.warn(f"could not write the audit line to {path}: {e.strerror}")
    if live is not None:
        t = ctx.config.target
        meta = live["metadata"]
        try:
            ctx.kube.create(
                EVENTS,
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {
                        "generateName": f"{meta['name']}.",
                        "namespace": EVENTS_NAMESPACE,
                    },
                    "involvedObject": {
                        "apiVersion": t.api_version,
                        "kind": t.kind,
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                    "reason": _REASONS.get(entry["outcome"], "RecreateChecked"),
                    "message": redact(
                        f"fracctl ({entry['who']}): {entry['outcome']}; nodeSelector "
                        f"{entry['before']} -> {entry['after']}"
                    )[:1000],
                    "type": "Normal",
                    "source": {"component": "fracctl"},
                    "reportingComponent": "fracctl",
                    "reportingInstance": entry["who"][:128],
                    "firstTimestamp": entry["time"],
                    "lastTimestamp": entry["time"],
                    "count": 1,
                },
            )
        except FracctlError as e:
            ctx.warn(f"could not record an Event: {e}")
    return str(path)


#: The Event's reason for each outcome that changed the object (others: checked).
_REASONS = {Outcome.RECREATED: "Recreated", Outcome.UPDATED: "UpdatedInPlace"}


def way_back(state: str, backup: str | None, resume: str = "fracctl recreate --yes") -> str:
    """What to tell after a failure that left the original deleted: state, backup, commands.

    ``resume`` is the command that goes on, as the failed run was given it.
    """
    restore = (
        f"restore the original: fracctl recreate --restore-from {backup} --yes; "
        if backup
        else "no backup of the original was found under recreate.state_dir; "
    )
    return f"{state}. {restore}or fix the cause and resume: {resume}"


def deleted_since(ctx: Context, original: Obj | None) -> bool:
    """Whether ``original`` was deleted since it was read, read fresh.

    Unknown counts as deleted: a failure never claims the object untouched when it cannot
    tell.
    """
    if original is None:
        return True
    t = ctx.config.target
    try:
        live = ctx.kube.get_or_none(t.ref, t.name)
    except FracctlError:
        return True
    meta = (live or {}).get("metadata") or {}
    return (
        live is None
        or bool(meta.get("deletionTimestamp"))
        or (meta.get("uid") != original["metadata"]["uid"])
    )


def state_after_failure(ctx: Context, desired_sel: dict[str, str]) -> str:
    """One phrase for what the cluster holds now, read fresh (best effort)."""
    t = ctx.config.target
    try:
        live = ctx.kube.get_or_none(t.ref, t.name)
    except FracctlError:
        return f"{t.kind}/{t.name} was deleted and may not have been recreated"
    if live is None:
        return (
            f"{t.kind}/{t.name} WAS DELETED and is not recreated: the cluster has none, "
            "so no node gets MPS daemons"
        )
    if live["metadata"].get("deletionTimestamp"):
        return f"{t.kind}/{t.name} WAS DELETED and is still terminating"
    got = selector_of(live, t.selector_field)
    if got != desired_sel:
        return f"{t.kind}/{t.name} WAS DELETED and came back with nodeSelector {got}, not git's"
    return f"{t.kind}/{t.name} was deleted and recreated with git's nodeSelector"
