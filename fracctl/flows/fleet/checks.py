"""``drift`` and ``preflight`` across the fleet: every cluster looked at, at once.

Both only read: each cluster runs the single-cluster flow with its own context, bounded
by ``parallel``, and the results come back keyed by cluster whatever any one of them
gave.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fracctl.core.outcome import Outcome
from fracctl.flows.context import Context
from fracctl.flows.fleet.membership import Member
from fracctl.flows.fleet.progress import FleetProgress
from fracctl.flows.fleet.results import FleetResult
from fracctl.flows.fleet.runner import run_all


def drift(
    base: Context,
    fleet: Sequence[Member],
    *,
    parallel: int | None = None,
    progress: FleetProgress | None = None,
    **options: Any,
) -> FleetResult:
    """``fracctl drift`` on every cluster at once; ``options`` as for :func:`drift.run`."""
    from fracctl.flows import drift as flow

    def job(ctx: Context, m: Member, step: Callable[[str], None]) -> tuple[Outcome, int, Any]:
        report = flow.run(ctx, **options)
        state = Outcome.DRIFTED if report.drifted else Outcome.IN_SYNC
        return state, int(state.exit_code), report

    return run_all(base, fleet, "drift", job, parallel=parallel, progress=progress)


def preflight(
    base: Context,
    fleet: Sequence[Member],
    *,
    selector: dict[str, str] | None = None,
    parallel: int | None = None,
    progress: FleetProgress | None = None,
) -> FleetResult:
    """``fracctl preflight`` on every cluster at once: each cluster's own guards."""
    from fracctl.flows.guards.preflight import preflight as flow

    def job(ctx: Context, m: Member, step: Callable[[str], None]) -> tuple[Outcome, int, Any]:
        report = flow(ctx, selector=selector)
        state = Outcome.PASSED if report.ok else Outcome.REFUSED
        return state, int(state.exit_code), report

    return run_all(base, fleet, "preflight", job, parallel=parallel, progress=progress)
