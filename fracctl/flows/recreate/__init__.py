"""``fracctl recreate``: guarded, resumable delete → sync → wait.

Every run decides from the cluster as observed now (see :mod:`fracctl.core.recreate.plan`),
so a rerun after any partial failure converges: an object already deleted is not
deleted again, an object already terminating is waited for, an object already
recreated is only verified and waited on. The only thing kept locally is the backup of
the live object, written before any delete.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.core.drift import HOOK, IN_SYNC, MISSING_DESIRED, REJECTED
from fracctl.core.kube.nodes import selector_of
from fracctl.core.outcome import Outcome
from fracctl.core.recreate import plan as recreate_plan
from fracctl.core.recreate.plan import Plan
from fracctl.errors import (
    FracctlError,
    Refused,
    UsageError,
)
from fracctl.flows import engines
from fracctl.flows.context import Context
from fracctl.flows.drain import steps as drain_steps
from fracctl.flows.engines import Backend
from fracctl.flows.recreate.live_object import unready_nodes
from fracctl.flows.recreate.lock import LeaseLock, NoLock
from fracctl.flows.recreate.pipeline import (
    BOUNDARIES,
    STEP_TEXT,
    STEPS,
    RecreateResult,
    Run,
    Step,
    done_outcome,
)
from fracctl.flows.recreate.rollout import pending
from fracctl.flows.recreate.state import (
    audit_entry,
    deleted_since,
    latest_backup,
    record,
    state_after_failure,
    way_back,
)
from fracctl.flows.recreate.window import expected
from fracctl.flows.signals import interrupt_on_sigterm

__all__ = [
    "BOUNDARIES",
    "STEP_TEXT",
    "RecreateResult",
    "abort_drain",
    "recreate",
    "require_confirmation",
    "initial_outcome",
]

Obj = dict[str, Any]
Boundary = Callable[[str], None]


def require_confirmation(
    ctx: Context, action: str, *, dry_run: bool, yes: bool, confirm: object | None
) -> None:
    """Refuse (exit 2) a change that nobody can confirm: no ``--yes`` and no terminal."""
    if not dry_run and not yes and (confirm is None or not ctx.interactive):
        raise UsageError(
            f"refusing to {action} without confirmation: stdin is not a terminal",
            hint="review the plan with --dry-run, then pass --yes",
        )


def initial_outcome(plan: Plan) -> Outcome:
    """The outcome of ``plan`` before any step runs: final when it has no steps."""
    if plan.steps:
        return Outcome.PLANNED
    return {
        recreate_plan.NOTHING_TO_DO: Outcome.NOTHING_TO_DO,
        recreate_plan.IN_PLACE: Outcome.APPLIES_IN_PLACE,
    }.get(plan.reason, Outcome.PLANNED)


def check_backend(ctx: Context, backend: str | None) -> Backend:
    """This run's backend, its configuration checked (exit 2) before any I/O.

    ``backend`` (else ``recreate.backend``) is fixed on the run for every flow that asks.
    """
    return engines.for_run(ctx, backend).config(ctx)


def recreate(
    ctx: Context,
    *,
    dry_run: bool = False,
    yes: bool = False,
    backend: str | None = None,
    confirm: Callable[[RecreateResult], bool] | None = None,
    boundary: Boundary | None = None,
    desired_objects: list[Obj] | None = None,
    drain: bool = False,
    force: bool = False,
) -> RecreateResult:
    """Run (or plan) the guarded delete → recreate → wait.

    The plan (:func:`fracctl.core.recreate.plan.decide`) names the steps still needed; each
    runs from :data:`PIPELINE`. Every read-only step (the backend's proofs, the guards)
    runs before the first change, and ``--dry-run`` runs them too and fails the same way.

    Args:
        ctx: the context.
        dry_run: print the plan and change nothing (no lock either).
        yes: do not ask for confirmation.
        backend: a name from the backend registry (default from config).
        confirm: shown the plan, says whether to go on (needed without ``yes`` on a tty).
        boundary: called with each step boundary name (fault injection in tests).
        desired_objects: rendered manifests (default: render ``ctx.config.git``).
        drain: fence fractional scheduling and evict the fractional pods first
            (:mod:`fracctl.flows.drain`); resumes a journaled drain.
        force: with ``drain``, evict bare pods too.
    """
    from fracctl.flows.render import render_desired

    at = boundary or (lambda _step: None)
    chosen = check_backend(ctx, backend)
    backend = engines.select(ctx).name
    require_confirmation(ctx, "recreate", dry_run=dry_run, yes=yes, confirm=confirm)
    objects = desired_objects if desired_objects is not None else render_desired(ctx)

    lock: LeaseLock | NoLock = NoLock() if dry_run else LeaseLock(ctx)
    entry = audit_entry(ctx, "recreate", who=lock.me, backend=backend)
    with interrupt_on_sigterm(), lock:
        at("locked")
        run = plan_run(ctx, objects, chosen, entry, dry_run=dry_run)
        run.lock, run.announce = lock, yes and not dry_run  # else the plan lists the proofs
        if drain:
            drain_first(run, force=force)
        at("planned")
        result = run.result
        if recreate_plan.DELETE in result.plan.steps:
            result.expected_window = expected(backend, drain=drain)
        steps = [STEPS[name] for name in result.plan.steps]
        if not read_only(run, steps, at):
            return result
        if not steps:
            if run.journal is not None and not dry_run:  # done but for the journal
                drain_steps.finish(run)
            return result
        if go_on(result, dry_run=dry_run, yes=yes, confirm=confirm):
            _act(run, [s for s in steps if s.acts], lock, at)
        return result


def drain_first(run: Run, *, force: bool) -> None:
    """Drain before the delete; a drain a journal says did not finish is resumed."""
    from fracctl.flows.drain import journal as journals

    run.drain, run.force, run.journal = True, force, journals.read(run.ctx)
    if run.journal is not None:
        run.ctx.info(f"resuming the drain of run {run.journal.run_id} ({run.journal.phase})")


def go_on(
    result: RecreateResult,
    *,
    dry_run: bool,
    yes: bool,
    confirm: Callable[[RecreateResult], bool] | None,
) -> bool:
    """Whether to act: not on a dry run (its outcome says so); refused when not confirmed."""
    if dry_run:
        result.outcome = Outcome.DRY_RUN
        return False
    if not yes and confirm is not None and not confirm(result):
        raise Refused("not confirmed; nothing changed")
    return True


def read_only(run: Run, steps: list[Step], at: Boundary) -> bool:
    """The plan's read-only steps (proofs, guards), in order; False once one refuses."""
    for step in (s for s in steps if not s.acts):
        step.run(run)
        if run.result.outcome is Outcome.REFUSED:
            return False
        at(step.boundary)
    return True


def plan_run(ctx: Context, objects: list[Obj], chosen: Backend, entry: dict[str, Any], *,
          dry_run: bool) -> Run:  # fmt: skip
    """Judge the target against git and decide the steps still needed."""
    from fracctl.flows.drift import check_target

    t = ctx.config.target
    # A backend that renders git's chart itself (helm-controller: its chart version carries
    # the source's revision) is judged by its own rendering, as verify judges it later.
    drift = check_target(ctx, desired_objects=chosen.rendering(ctx, objects))
    if drift.verdict in (MISSING_DESIRED, HOOK):
        hook = " (the live one is a chart's hook: its chart recreates it)" * (drift.verdict == HOOK)
        raise Refused(
            f"git has no {t.kind}/{t.name} at {ctx.config.git.revision} under "
            f"{ctx.config.git.path}{hook}; refusing to delete the live one",
            hint="point git.path at the operator's chart and use recreate.backend helm "
            "(runbooks/operator-upgrades.md)"
            if drift.verdict == HOOK
            else "check git.repo, git.path and git.revision",
        )
    if drift.verdict == REJECTED or drift.desired is None:
        raise Refused(
            f"the API server rejects git's {t.kind}/{t.name} for a reason a recreate does "
            f"not fix: {drift.message}",
            hint="fix the manifest in git",
        )
    live, desired = drift.live, drift.desired
    live_sel, desired_sel = (
        selector_of(live, t.selector_field),
        selector_of(desired, t.selector_field),
    )
    plan = recreate_plan.decide(
        verdict=drift.verdict,
        terminating=bool(live and live["metadata"].get("deletionTimestamp")),
        live_selector=live_sel,
        desired_selector=desired_sel or {},
        unready_nodes=unready_nodes(ctx, live_sel) if drift.verdict == IN_SYNC else [],
        release=chosen.release_state(ctx, desired),  # its own run recreates (helm's hook)
        rolling=pending(ctx, live) if drift.verdict == IN_SYNC else [],
    )
    entry.update(before=live_sel, after=desired_sel or {})
    result = RecreateResult(plan=plan, outcome=initial_outcome(plan), backend=chosen.name)
    return Run(ctx, result, chosen, live, desired, entry, dry_run=dry_run)


def _act(run: Run, steps: list[Step], lock: LeaseLock | NoLock, at: Boundary) -> None:
    """Run the steps that change something; a failure says what changed and the way back."""
    ctx, result = run.ctx, run.result
    plan = result.plan
    # Whether the original is gone (deleted now, or by an earlier run) and git's
    # object not yet verified: a failure then must say so and how to get back.
    gone = plan.reason in (
        recreate_plan.RESUME_GONE,
        recreate_plan.RESUME_MISSING,
        recreate_plan.RESUME_UPGRADE,
    )
    upgrading = updated = False
    try:
        drain_steps.start(run, at)
        for step in steps:
            if step.renew_lock:
                lock.check()
            upgrading = step.name == recreate_plan.UPGRADE  # the backend's run deletes
            updated = updated or step.name == recreate_plan.UPDATE
            step.run(run)
            deletes = step.name in (recreate_plan.DELETE, recreate_plan.UPGRADE)
            gone = (gone or deletes) and step.name != recreate_plan.VERIFY
            at(step.boundary)
        drain_steps.finish(run)
        result.outcome = done_outcome(plan)
    except (FracctlError, KeyboardInterrupt) as e:
        drain_steps.undo(run, e)
        gone = gone or (upgrading and deleted_since(ctx, run.live))
        backup_path = result.backup or (latest_backup(ctx) if gone else None)
        said = ""
        if gone:
            said = way_back(state_after_failure(ctx, run.desired_selector), backup_path,
                            ctx.rerun("recreate", "--yes"))  # fmt: skip
        elif updated:  # the object was updated in place: nothing is gone
            said = updated_but(ctx, backup_path)
        elif upgrading:  # the release's upgrade began; the object is still the original
            said = (
                f"{run.backend.name}'s upgrade of the release stopped before it deleted "
                f"{ctx.config.target.kind}/{ctx.config.target.name}, which is unchanged; "
                f"finish it: {ctx.rerun('recreate', '--yes')}"
            )
        if said and isinstance(e, FracctlError):
            e.add_context(said)
        elif said:  # interrupted: the CLI only says "Interrupted.", so say the rest here
            ctx.warn(said)
        run.entry.update(
            outcome=f"{Outcome.FAILED}: {e}"
            if isinstance(e, FracctlError)
            else Outcome.INTERRUPTED,
            time=utc_timestamp(),
            backup=backup_path,
        )
        with contextlib.suppress(Exception):
            record(ctx, live=None, entry=run.entry)
        raise


def updated_but(ctx: Context, backup: str | None) -> str:
    """What a failure after an in-place update says: what changed, the way on and back."""
    t = ctx.config.target
    kept = f"the original is backed up in {backup}" if backup else "no backup was written"
    return (
        f"{t.kind}/{t.name} may already be updated in place (its uid is unchanged) and its "
        f"daemons rolling; {kept}. Finish: {ctx.rerun('recreate', '--yes')} (it waits for the "
        "rollout); go back: revert the commit in git, then the same command"
    )


def abort_drain(ctx: Context) -> str:
    """``recreate --abort``: under the lock, undo a journaled drain not yet at the delete."""
    from fracctl.flows import drain

    with LeaseLock(ctx):
        return drain.abort(ctx)
