"""The drain's part in a ``recreate`` run: started before the backup, finished or undone.

:mod:`fracctl.flows.recreate` calls these with its run; the drain itself (plan, fence,
evictions, journal) is this package's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from fracctl.core.drain import DELETING, REFUSAL_FIX
from fracctl.errors import FracctlError
from fracctl.flows import drain
from fracctl.flows.context import Context

if TYPE_CHECKING:
    from fracctl.flows.guards.preflight import PreflightReport


class Run(Protocol):
    """What these steps read and write of a recreate run.

    That is :class:`fracctl.flows.recreate.pipeline.Run`.
    """

    ctx: Context
    result: Any
    live: dict[str, Any] | None
    desired: dict[str, Any]
    journal: drain.Journal | None
    lock: Any
    force: bool

    @property
    def desired_selector(self) -> dict[str, str]:
        """Git's selector."""
        ...


def start(run: Run, at: Callable[[str], None]) -> None:
    """With --drain, before the backup: journal, fence, evict, wait (nothing once deleted)."""
    planned = run.result.drain
    if planned is None or run.live is None:
        return
    if run.journal is not None and run.journal.phase == DELETING:
        return
    run.journal = drain.start(
        run.ctx, planned, live=run.live, desired=run.desired, journal=run.journal
    )
    at("journaled")
    drain.execute(run.ctx, planned, run.journal)
    at("drained")


def finish(run: Run) -> None:
    """After the recreate: reopen fractional scheduling and end the journal."""
    if run.journal is not None:
        drain.finish(run.ctx, run.journal, run.desired_selector)
        run.journal = None


def undo(run: Run, e: BaseException) -> None:
    """Before the delete, a failure or Ctrl-C lifts the fence; after it, forward only."""
    if run.journal is None or run.journal.phase == DELETING:
        return
    try:
        said = drain.undo(run.ctx, run.journal)
    except FracctlError as undo_failed:
        said = (
            f"the fence of run {run.journal.run_id} could not be lifted ({undo_failed}); "
            "lift it with: fracctl recreate --abort"
        )
    run.journal = None
    if isinstance(e, FracctlError):
        e.add_context(said)
    else:
        run.ctx.warn(said)


def guards(run: Run, report: PreflightReport) -> PreflightReport:
    """With the drain: plan it, and let its refusals stand in for the fractional-pod guard."""
    from dataclasses import replace

    if run.live is not None and not (run.journal and run.journal.phase == DELETING):
        run.result.drain = drain.plan(
            run.ctx,
            live=run.live,
            desired=run.desired,
            force=run.force,
            journal=run.journal,
            run_id=run.lock.run_id,
        )
    planned = run.result.drain
    checks = []
    for c in report.checks:
        if c.name == "fractional-pods" and not c.ok:
            n = len(planned.pods) if planned else 0
            c = replace(
                c,
                ok=True,
                fix="",  # the drain is the fix now
                evidence=f"{c.evidence}; the drain evicts {n} pod(s) first",
            )
        checks.append(c)
    for why in planned.refusals if planned else ():
        checks.append(
            replace(report.checks[0], name="drain", ok=False, evidence=why, fix=REFUSAL_FIX)
        )
    return replace(report, checks=checks)
