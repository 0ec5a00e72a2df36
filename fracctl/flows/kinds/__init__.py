"""``fracctl recreate KIND/NAME``: a built-in object by its kind's safe procedure.

The object is judged against git as ``drift`` judges it; its kind's procedure (or
refusal) is chosen by :mod:`fracctl.core.procedures`; every call the procedure will make
is rehearsed read-only (permissions, and the API server's own dry run of each delete,
create and patch); only then, under the same lock as every recreate, with a backup and
a journal, does it run. A rerun after any failure reads the journal and the cluster and
goes on from where the cluster is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.core.outcome import Outcome
from fracctl.errors import ExternalError, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import for_run, select
from fracctl.flows.engines import journal as journals
from fracctl.flows.engines.steps import Creator
from fracctl.flows.kinds.plan import Planned, find_desired, plan, prove
from fracctl.flows.kinds.result import ObjectResult
from fracctl.flows.recreate.lock import LeaseLock, NoLock
from fracctl.flows.recreate.state import audit_entry, record
from fracctl.flows.signals import interrupt_on_sigterm

Obj = dict[str, Any]
Boundary = Callable[[str], None]

__all__ = ["ObjectResult", "recreate_object"]


def recreate_object(
    ctx: Context,
    spec: str,
    *,
    namespace: str | None = None,
    dry_run: bool = False,
    yes: bool = False,
    backend: str | None = None,
    allow_active: bool = False,
    allow_new_ip: bool = False,
    confirm: Callable[[ObjectResult], bool] | None = None,
    boundary: Boundary | None = None,
    desired_objects: list[Obj] | None = None,
) -> ObjectResult:
    """Plan, prove and run the procedure for the object ``spec`` (``Kind/name``).

    Raises:
        UsageError: a bad ``spec``, or no confirmation.
        Refused: the kind's rules refuse this change (nothing changed).
    """
    from fracctl.flows.recreate import require_confirmation
    from fracctl.flows.render import render_desired

    at = boundary or (lambda _step: None)
    engine = for_run(ctx, backend)
    engine.require_objects()
    backend = engine.name
    require_confirmation(ctx, f"recreate {spec}", dry_run=dry_run, yes=yes, confirm=confirm)
    objects = desired_objects if desired_objects is not None else render_desired(ctx)
    desired = find_desired(ctx, objects, spec, namespace)
    lock: LeaseLock | NoLock = NoLock() if dry_run else LeaseLock(ctx)
    entry = audit_entry(ctx, "recreate", who=lock.me, backend=backend)
    with interrupt_on_sigterm(), lock:
        at("locked")
        p = plan(ctx, desired, allow_active=allow_active, allow_new_ip=allow_new_ip,
                 dry_run=dry_run)  # fmt: skip
        result = ObjectResult(p.key, p.outcome, p.procedure, p.refusal, resumed=p.resumed)
        entry["object"] = p.key
        if p.refusal is not None:
            raise Refused(f"{p.key}: {p.refusal.reason}; nothing changed", hint=p.refusal.fix)
        if p.procedure is None:
            return result
        p.chosen = _creator(ctx, backend, p)
        result.proofs = prove(ctx, p)
        at("proven")
        if dry_run:
            result.outcome = Outcome.DRY_RUN
            return result
        if p.procedure.loses and not yes and (confirm is None or not confirm(result)):
            raise Refused(f"not confirmed ({p.procedure.loses}); nothing changed")
        _run(ctx, p, result, lock, at, entry)
        return result


def _creator(ctx: Context, backend: str, p: Planned) -> Creator:
    """The backend's creator, its target the object and the immutable fields git changes.

    The engine's second half makes it (:func:`fracctl.flows.engines.select`); with
    ``flux``, an object a HelmRelease installs goes through that HelmRelease.
    """
    from fracctl.core.procedures import ORPHAN_ADOPT
    from fracctl.core.recreate.sync_target import SyncTarget

    fields = tuple(f.path for f in p.drift.fields)
    desired = p.drift.desired or {}
    target = SyncTarget.of_object(desired, p.ref, fields, p.drift.message)
    holds = p.procedure is not None and p.procedure.name == ORPHAN_ADOPT
    suspended = bool(p.journal and p.journal.suspended)
    engine = select(ctx, backend)
    return engine.objects(ctx, target, live=p.live, holds=holds, suspended=suspended, stuck=stuck)


def stuck(ctx: Context, objects: list[Obj], namespace: str) -> list[str]:
    """The keys of ``objects`` that git changes on an immutable field, as drift judges them."""
    from fracctl.core import drift as d
    from fracctl.flows.drift import check_objects

    report = check_objects(ctx, objects, default_namespace=namespace)
    return [o.key for o in report.objects if o.verdict == d.NEEDS_RECREATE]


def _verify(ctx: Context, p: Planned, result: ObjectResult) -> None:
    """After a backend's create: the live object is git's, judged as ``drift`` judges it."""
    from fracctl.core import drift as d
    from fracctl.flows.drift import check_objects

    (o,) = check_objects(ctx, [p.drift.desired or {}]).objects
    if o.verdict not in (d.IN_SYNC, d.APPLIES_IN_PLACE):
        why = o.message or o.note or o.verdict
        raise ExternalError(
            f"the {p.creator.name} backend reported {p.key} done, but the live object is "
            f"not git's: {o.verdict} ({why})",
            hint=f"see `fracctl drift --all`; the backup is {result.backup}",
        )
    result.notes.append(f"verified: drift judges the live {p.key} {o.verdict} with git")
    ctx.info(result.notes[-1])


def _run(
    ctx: Context, p: Planned, result: ObjectResult, lock: LeaseLock | NoLock, at: Boundary,
    entry: dict[str, Any],
) -> None:  # fmt: skip
    from fracctl.flows.kinds.run import execute

    try:
        execute(ctx, p, result, lock, at)
        if p.creator.verifies:
            _verify(ctx, p, result)
        result.outcome = Outcome.RECREATED
        entry.update(outcome=Outcome.RECREATED, procedure=p.procedure and p.procedure.name)
    except BaseException as e:
        where = journals.path_for(ctx, p.key)
        said = (
            f"{p.key}: the {p.procedure and p.procedure.name} procedure stopped; "
            f"its journal is {where}"
            + (f", the backup {p.journal.backup}" if p.journal and p.journal.backup else "")
            + (
                f"; {journals.suspended_label(p.journal.suspended)} until the rerun "
                "releases the hold"
                if p.journal and p.journal.suspended
                else ""
            )
            + f"; rerun `{ctx.rerun(f'recreate {p.spec}')}` to resume"
        )
        if isinstance(e, Refused | UsageError) or not hasattr(e, "add_context"):
            ctx.warn(said)
        else:
            e.add_context(said)
        entry.update(outcome=f"{Outcome.FAILED}: {e}" if str(e) else Outcome.INTERRUPTED)
        raise
    finally:
        entry["time"] = utc_timestamp()
        record(ctx, live=None, entry=entry)
