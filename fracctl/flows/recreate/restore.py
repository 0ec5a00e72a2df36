"""``fracctl recreate --restore-from BACKUP``: put a deleted object back as it was.

The way back when a recreate failed after its delete: the backup that ``recreate`` wrote
before deleting is created again directly (server-side apply), under the same lock,
after the same read-only proofs, then read back and waited on like a recreate. It only
ever creates a missing object; it never deletes one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.core.gitops.backends import DIRECT
from fracctl.core.kube.nodes import field_at, selector_of
from fracctl.core.outcome import Outcome
from fracctl.core.recreate import plan as recreate_plan
from fracctl.core.recreate.plan import Plan
from fracctl.errors import ConfigError, FracctlError, Refused, UsageError
from fracctl.flows import engines
from fracctl.flows.context import Context
from fracctl.flows.engines.rehearse import prove
from fracctl.flows.recreate import RecreateResult, go_on, initial_outcome, require_confirmation
from fracctl.flows.recreate.live_object import verify, wait_gone
from fracctl.flows.recreate.lock import LeaseLock, NoLock
from fracctl.flows.recreate.state import audit_entry, record
from fracctl.flows.recreate.wait import wait_ready
from fracctl.flows.signals import interrupt_on_sigterm

Obj = dict[str, Any]

RESTORE = "restore"


def read_backup(ctx: Context, path: str) -> Obj:
    """The object in a backup file; a usage error unless it is the configured target."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    file = Path(path).expanduser()
    if not file.is_file():
        raise UsageError(f"--restore-from {path}: no such file")
    try:
        docs = [d for d in YAML(typ="safe").load_all(file.read_text(encoding="utf-8")) if d]
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--restore-from {path}: cannot read it: {e}") from None
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{line}: not a YAML backup: {getattr(e, 'problem', e)}") from None
    t = ctx.config.target
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise UsageError(f"{path}: a backup holds exactly one object, found {len(docs)}")
    obj: Obj = docs[0]
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    found = f"{obj.get('apiVersion')} {obj.get('kind')}/{(meta or {}).get('name')}"
    if (
        obj.get("apiVersion") != t.api_version
        or obj.get("kind") != t.kind
        or (meta or {}).get("name") != t.name
    ):
        raise UsageError(
            f"{path} holds {found}, not the target {t.api_version} {t.kind}/{t.name}",
            hint="pass a backup that fracctl recreate wrote under recreate.state_dir/backups",
        )
    value = field_at(obj, t.selector_field)
    if not isinstance(value, dict) or not value:
        raise UsageError(f"{path}: the backed-up object has no {t.selector_field}")
    return obj


def _restorable(obj: Obj) -> Obj:
    """The backup without what the server or the operator sets again."""
    body = engines.clean_desired(obj)
    meta = dict(body["metadata"])
    meta.pop("finalizers", None)  # the operator adds its own finalizer to what it manages
    meta.pop("ownerReferences", None)
    body["metadata"] = meta
    return body


def _already_there(ctx: Context, live_sel: Any, want: dict[str, str]) -> RecreateResult:
    """The object exists: nothing to do when it has the backup's selector, else refuse."""
    t = ctx.config.target
    if live_sel == want:
        plan = Plan(
            recreate_plan.NOTHING_TO_DO,
            [],
            "the live object already has the backup's nodeSelector",
            live_sel,
            want,
        )
        return RecreateResult(plan=plan, outcome=initial_outcome(plan), backend=DIRECT)
    raise Refused(
        f"{t.kind}/{t.name} exists with nodeSelector {live_sel}; --restore-from only "
        f"creates a missing object and never deletes one (the backup has {want})",
        hint="to change the live object, change git and run fracctl recreate",
    )


def restore(
    ctx: Context,
    path: str,
    *,
    dry_run: bool = False,
    yes: bool = False,
    confirm: Callable[[RecreateResult], bool] | None = None,
) -> RecreateResult:
    """Create the target again from a backup, if (and only if) it is missing.

    Args:
        ctx: the context.
        path: a backup file written by ``recreate``.
        dry_run: prove and plan, change nothing.
        yes: do not ask for confirmation.
        confirm: asks the operator; required when not ``yes`` on a terminal.
    """
    t = ctx.config.target
    obj = read_backup(ctx, path)
    want = selector_of(obj, t.selector_field) or {}
    require_confirmation(ctx, "restore", dry_run=dry_run, yes=yes, confirm=confirm)
    lock: LeaseLock | NoLock = NoLock() if dry_run else LeaseLock(ctx)
    entry = audit_entry(ctx, "restore", who=lock.me, backend=DIRECT, backup=str(path))
    with interrupt_on_sigterm(), lock:
        live = ctx.kube.get_or_none(t.ref, t.name)
        live_sel = selector_of(live, t.selector_field)
        terminating = bool(live and live["metadata"].get("deletionTimestamp"))
        entry.update(before=live_sel, after=want)
        if live is not None and not terminating:
            return _already_there(ctx, live_sel, want)
        steps = [recreate_plan.WAIT_GONE] if terminating else []
        steps += [RESTORE, recreate_plan.VERIFY, recreate_plan.WAIT_READY, recreate_plan.RECORD]
        plan = Plan(
            RESTORE,
            steps,
            f"the object is {'terminating' if terminating else 'absent'}: create it from {path}",
            live_sel,
            want,
        )
        result = RecreateResult(
            plan=plan, outcome=initial_outcome(plan), backend=DIRECT, backup=path
        )
        applier = engines.select(ctx, DIRECT).config(ctx)
        result.proofs = prove(ctx, applier, _restorable(obj), deletes=False).evidence
        if go_on(result, dry_run=dry_run, yes=yes, confirm=confirm):
            gone = live["metadata"]["uid"] if terminating and live is not None else ""
            _put_back(ctx, result, _restorable(obj), gone=gone, applier=applier, entry=entry)
        return result


def _put_back(
    ctx: Context,
    result: RecreateResult,
    obj: Obj,
    *,
    gone: str,
    applier: engines.Backend,
    entry: dict[str, Any],
) -> None:
    """Wait for the terminating one (uid ``gone``) to go, create ``obj``, verify, wait."""
    want = result.plan.after or {}
    try:
        if gone:
            wait_gone(ctx, gone)
        said = applier.recreate(ctx, obj)
        restored = f"restored from {result.backup}: {said}"
        result.notes.append(restored)
        ctx.info(restored)
        verify(ctx, want, applier, said)
        result.ready = wait_ready(ctx, selector=want)
    except (FracctlError, KeyboardInterrupt) as e:
        entry.update(
            time=utc_timestamp(),
            outcome=f"{Outcome.FAILED}: {e}" if str(e) else Outcome.INTERRUPTED,
        )
        with contextlib.suppress(Exception):
            record(ctx, live=None, entry=entry)
        raise
    result.outcome = Outcome.RESTORED
    t = ctx.config.target
    final = ctx.kube.get_or_none(t.ref, t.name)
    result.audit_file = record(ctx, live=final, entry={**entry, "outcome": Outcome.RESTORED})
