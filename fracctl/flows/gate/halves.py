"""The two halves of :mod:`fracctl.flows.gate`, built from ``recreate``'s own steps."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from fracctl.core.clock import utc_timestamp
from fracctl.core.kube.nodes import selector_of
from fracctl.core.outcome import Outcome
from fracctl.core.recreate import plan as recreate_plan
from fracctl.errors import ExternalError, FracctlError, UsageError
from fracctl.flows.context import Context
from fracctl.flows.drain import steps as drain_steps
from fracctl.flows.engines import Obj
from fracctl.flows.gate.common import (
    FIRST_HALF,
    POST_SYNC,
    PRE_SYNC,
    GateResult,
    SyncBackend,
    differences,
    gate_identity,
    gate_lease_held,
    sync_backend,
)
from fracctl.flows.recreate import drain_first, initial_outcome, plan_run, read_only
from fracctl.flows.recreate.lock import LeaseLock
from fracctl.flows.recreate.pipeline import STEPS, Run, Step
from fracctl.flows.recreate.state import audit_entry, record
from fracctl.flows.signals import interrupt_on_sigterm

Boundary = Callable[[str], None]


@contextlib.contextmanager
def held(lock: LeaseLock, *, hand_on: Callable[[], bool]) -> Iterator[LeaseLock]:
    """Hold ``lock``; on the way out release it, or leave it held for the next half.

    ``hand_on`` says, once the block is over (whether it ended or raised), whether the
    cluster is mid-recreate: then the Lease stays held, unrenewed, for the half that
    follows (or the retry), which takes it as the same holder.
    """
    lock.acquire()
    try:
        yield lock
    finally:
        if hand_on():
            lock.stop()
        else:
            lock.release()


def run_first_half(
    ctx: Context,
    objects: list[Obj],
    *,
    drain: bool,
    force: bool,
    at: Boundary,
    fleet: Path | None = None,
    tracking: str = "",
) -> GateResult:
    """The PreSync half: nothing (and no lock) unless the revision needs the gate.

    A revision that deletes the config, or restarts the daemons, needs it; in a fleet it
    then goes on only once every earlier step's cluster runs the revision.
    """
    from fracctl.flows.drain import journal as journals
    from fracctl.flows.gate.order import check_order

    me = gate_identity(ctx)
    entry = audit_entry(ctx, f"gate {PRE_SYNC}", who=me, backend=SyncBackend.name)
    plan = plan_run(ctx, objects, sync_backend(ctx), entry, dry_run=False).result.plan
    result = GateResult(PRE_SYNC, initial_outcome(plan), plan.reason)
    if not _first(plan.steps) and not (drain and journals.read(ctx)):
        result.lines.append(
            f"nothing for the gate to do before the sync ({plan.reason}): the sync "
            "applies this revision as it is; the lock was not taken"
        )
        return result
    ordered = check_order(ctx, fleet, tracking)  # Refused: a step ahead does not run it yet
    if ordered:
        result.lines.append(ordered)
    run: Run | None = None
    proven = False

    def mid_recreate() -> bool:  # past the proofs, the object absent: the sync creates it
        # (or armed for an update that rolls the daemons: the sync applies it)
        return run is not None and (_deleted(run) or (proven and run.live is None) or run.armed)

    with held(LeaseLock(ctx, me=me), hand_on=mid_recreate) as lock, interrupt_on_sigterm():
        at("locked")
        result.locked = True
        run = plan_run(
            ctx, objects, sync_backend(ctx), entry, dry_run=False
        )  # again, under the lock
        run.lock = lock
        if drain:
            drain_first(run, force=force)
        at("planned")
        steps = [STEPS[name] for name in _first(run.result.plan.steps)]
        read_only(run, steps, at)  # the guards raise Refused: nothing was changed
        proven = True
        _act(run, [s for s in steps if s.acts], lock, at)
        result.outcome, result.reason = Outcome.PLANNED, run.result.plan.reason
        result.backup = run.result.backup
        result.lines.append(_handed_on(ctx, run))
    return result


def _handed_on(ctx: Context, run: Run) -> str:
    """What the first half leaves to the sync and the PostSync half."""
    t = ctx.config.target
    if run.armed:
        return (
            f"{t.kind}/{t.name} is armed for this revision's update: the sync applies it in "
            "place, the operator rolls the daemons, and the PostSync hook waits for the rollout"
        )
    return (
        f"{t.kind}/{t.name} is gone; the sync creates this revision's object and the PostSync "
        "hook waits for the nodes"
    )


def _first(steps: tuple[str, ...] | list[str]) -> list[str]:
    return [name for name in steps if name in FIRST_HALF]


def _deleted(run: Run) -> bool:
    """Whether the run's original object is gone or going (the Lease must stay held)."""
    if run.live is None:
        return run.journal is not None
    t = run.ctx.config.target
    now = run.ctx.kube.get_or_none(t.ref, t.name)
    return (
        now is None
        or now["metadata"]["uid"] != run.live["metadata"]["uid"]
        or bool(now["metadata"].get("deletionTimestamp"))
    )


def _act(run: Run, steps: list[Step], lock: LeaseLock, at: Boundary) -> None:
    """The first half's changes; a failure says what changed and what converges it."""
    from fracctl.flows.gate.backup import KEY, latest, to_cluster

    saved: str | None = None  # this try's backup; on a failure without one, an earlier try's
    try:
        drain_steps.start(run, at)
        for step in steps:
            if step.renew_lock:
                lock.check()
            step.run(run)
            if step.name == recreate_plan.BACKUP and run.live is not None:
                saved = to_cluster(run.ctx, run.live)
                run.ctx.info(f"backed up to {saved}")
                lock.note(
                    before=json.dumps(run.live_selector or {}, sort_keys=True), backup=saved
                )  # what the PostSync half records
            at(step.boundary)
    except (FracctlError, KeyboardInterrupt) as e:
        drain_steps.undo(run, e)
        if isinstance(e, FracctlError) and (_deleted(run) or run.live is None):
            t = run.ctx.config.target
            saved = saved or latest(run.ctx, t.name) or "no backup: it was already gone"
            e.add_context(
                f"{t.kind}/{t.name} was deleted (its copy: {saved}, key {KEY}) and the "
                "lock stays held by the gate; Argo CD's retry (or the next sync: "
                "argocd app sync APP) runs this hook again and converges; to go back "
                "instead, revert the commit: the next sync creates the old object"
            )
        raise


def run_second_half(ctx: Context, objects: list[Obj], *, at: Boundary) -> GateResult:
    """The PostSync half: verify the live object against the revision, then the nodes."""
    from fracctl.flows.drain import journal as journals
    from fracctl.flows.recreate.wait import wait_ready

    t = ctx.config.target
    journal = journals.read(ctx)
    ours = gate_lease_held(ctx) or journal is not None
    result = GateResult(POST_SYNC, Outcome.READY, "verify")
    failed = False
    lock = LeaseLock(ctx, me=gate_identity(ctx))
    with held(lock, hand_on=lambda: failed) if ours else contextlib.nullcontext():
        result.locked = ours
        try:
            live = _verify(ctx, objects)
            selector = selector_of(live, t.selector_field) or {}
            at("verified")
            result.lines.append(f"verified: live nodeSelector is {selector}")
            result.ready = sorted(wait_ready(ctx, selector=selector).nodes)
            at("ready")
            if journal is not None:  # the fence of a PreSync half's drain comes down
                from fracctl.flows import drain

                drain.finish(ctx, journal, selector)
                result.lines.append(f"fractional scheduling resumed (run {journal.run_id})")
            if ours:
                _record(ctx, live, selector)
        except BaseException as e:
            failed = True
            if isinstance(e, FracctlError) and ours:
                fenced = " and fractional scheduling stays fenced" if journal else ""
                e.add_context(
                    f"the lock stays held by the gate{fenced}; Argo CD's retry (or the next "
                    "sync: argocd app sync APP) runs the sync and this hook again"
                )
            raise
    result.lines.append(f"{len(result.ready)} node(s) ready: {', '.join(result.ready)}")
    return result


def _verify(ctx: Context, objects: list[Obj]) -> Obj:
    """The live object, held to the revision's on every field the revision writes."""
    from fracctl.flows.render import select

    t = ctx.config.target
    found = [objects[i] for i in select(objects, kind=t.kind, name=t.name)]
    if len(found) != 1:
        raise UsageError(f"the revision's manifests hold {len(found)} {t.kind}/{t.name}, not one")
    live = ctx.kube.get_or_none(t.ref, t.name)
    if live is None or live["metadata"].get("deletionTimestamp"):
        state = "is absent" if live is None else "is being deleted"
        raise ExternalError(
            f"the sync ran but {t.kind}/{t.name} {state}",
            hint="sync again: the sync creates it (never trust the sync status)",
        )
    diff = differences(found[0], live)
    if diff:
        raise ExternalError(
            f"the sync ran but the live {t.kind}/{t.name} is not the revision's: "
            + "; ".join(diff[:5]),
            hint="sync again; with an immutable change the PreSync hook recreates it",
        )
    return live


def _record(ctx: Context, live: Obj, selector: dict[str, str]) -> None:
    from fracctl.core.kube.resources import LEASES
    from fracctl.core.recreate.guard_policy import UPDATE_ARMED
    from fracctl.flows.recreate.lock import NOTES

    r = ctx.config.recreate
    lease = ctx.kube.get_or_none(LEASES, r.lock_name, r.lock_namespace) or {}
    notes = (lease.get("metadata") or {}).get("annotations") or {}
    armed = notes.get(UPDATE_ARMED)
    saved = notes.get(NOTES["backup"])
    who = f"fracctl gate, backup {saved}" if saved else "fracctl gate"
    entry = audit_entry(ctx, f"gate {POST_SYNC}", who=who, backend="sync")
    try:
        before: object = json.loads(notes[NOTES["before"]])
    except (KeyError, ValueError):
        before = "the PreSync hook's backup"
    done = Outcome.UPDATED if armed == live["metadata"]["uid"] else Outcome.RECREATED
    entry.update(time=utc_timestamp(), outcome=done, before=before, after=selector)
    record(ctx, live=live, entry=entry)
