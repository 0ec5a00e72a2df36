"""``recreate`` across the fleet, wave by wave: the canary wave first, stop on a failure.

Every cluster is planned first, read-only, so that a later wave's problem stops the
rollout before the canary is touched; then the waves run lowest first, each cluster with
its own lock, guards, backup and audit line. A failure, Ctrl-C or SIGTERM stops the
rollout before the next cluster and the next wave; the summary says where it stopped and
the command that resumes it, and one audit line records the fleet run.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.core.outcome import Outcome
from fracctl.errors import Refused
from fracctl.flows.context import Context
from fracctl.flows.fleet.membership import Member
from fracctl.flows.fleet.progress import FleetProgress
from fracctl.flows.fleet.results import ClusterResult, FleetResult
from fracctl.flows.fleet.runner import Job, MemberRunner, parallelism, progress_for
from fracctl.flows.signals import interrupt_on_sigterm


def waves(fleet: Sequence[Member]) -> list[tuple[int, list[Member]]]:
    """The clusters grouped by wave, lowest first, fleet order kept within a wave."""
    grouped: dict[int, list[Member]] = {}
    for m in fleet:
        grouped.setdefault(m.wave, []).append(m)
    return sorted(grouped.items())


@dataclass(frozen=True)
class _Options:
    """The options of a rollout that its waves follow and its resume command repeats."""

    backend: str | None
    parallel: int
    continue_on_failure: bool


def recreate(
    base: Context,
    fleet: Sequence[Member],
    *,
    dry_run: bool = False,
    yes: bool = False,
    backend: str | None = None,
    parallel: int = 1,
    continue_on_failure: bool = False,
    confirm: Callable[[FleetResult], bool] | None = None,
    progress: FleetProgress | None = None,
    boundary: Callable[[str, str], None] | None = None,
    resume_args: Sequence[str] = (),
) -> FleetResult:
    """``fracctl recreate`` wave by wave: the canary wave first, stop on the first failure.

    Within a wave clusters run one at a time (``parallel`` at a time when asked), each
    with its own Lease lock, guards, backup and audit line. A cluster whose guards
    refuse, whose nodes do not become ready, or that fails otherwise stops the rollout:
    no further cluster starts (``continue_on_failure`` goes on with the others). A rerun
    resumes: clusters already done plan ``nothing-to-do`` and are not touched.
    ``dry_run`` plans every cluster at once and changes nothing.

    Args:
        base: the context of the invocation (configuration, consoles, clock).
        fleet: the clusters.
        dry_run: plan every cluster; change nothing.
        yes: do not ask for confirmation.
        backend: as for :func:`fracctl.flows.recreate.recreate`.
        parallel: clusters at a time within a wave.
        continue_on_failure: go on with other clusters and waves after a failure.
        confirm: shown every cluster's plan, says whether to go on (without ``yes``).
        progress: where the clusters' states go (default: plain lines on stderr).
        boundary: called with (cluster, step boundary) as each step ends (tests).
        resume_args: the arguments that address this fleet, for the resume command.
    """
    from fracctl.flows import recreate as flow

    flow.require_confirmation(base, "recreate", dry_run=dry_run, yes=yes, confirm=confirm)

    how = _Options(backend, parallel, continue_on_failure)
    job = partial(_job, backend=backend, boundary=boundary)
    shown = progress_for(base, progress)
    runner = MemberRunner(base, shown)
    start = time.monotonic()
    out = FleetResult("recreate")
    try:
        out.results = _plan_every(base, runner, shown, fleet, job(True), parallel)
        if dry_run:
            return out
        done, to_run = _go_ahead(out, shown, fleet, yes, confirm, continue_on_failure)
        out.results = _waves(base, runner, fleet, to_run, job(False), done, how)
    finally:
        shown.stop()
        runner.close()
        out.seconds = time.monotonic() - start
    _summarise(out, resume_args, how, interrupted=runner.cancel.is_set())
    out.audit_file = _audit(base, out)
    return out


def _plan_every(
    base: Context,
    runner: MemberRunner,
    shown: FleetProgress,
    fleet: Sequence[Member],
    job: Job,
    parallel: int,
) -> list[ClusterResult]:
    """Every cluster planned, read-only, after its kubeconfig entry is checked.

    The plans run ``parallel`` at a time, or as many as the configuration allows.
    """
    for m in fleet:  # every cluster's kubeconfig entry is checked before anything runs
        runner.connect(m).kube  # noqa: B018
    # Every cluster is planned first, --yes or not: its backend proven and its guards
    # run read-only, so that a later wave's wrong token stops the rollout before the
    # canary is touched.
    shown.start(fleet)
    return runner.each(fleet, job, parallel=max(parallel, parallelism(base, None)))


def _go_ahead(
    out: FleetResult,
    shown: FleetProgress,
    fleet: Sequence[Member],
    yes: bool,
    confirm: Callable[[FleetResult], bool] | None,
    continue_on_failure: bool,
) -> tuple[dict[str, ClusterResult], Sequence[Member]]:
    """After the plans: the results already final, and the clusters to run (confirmed)."""
    if out.exit_code != 0 and not continue_on_failure:
        # Nothing starts: the clusters whose plan failed say why, the rest wait.
        return {r.name: r for r in out.results if r.exit_code != 0}, []
    shown.stop()
    if not yes and (confirm is None or not confirm(out)):
        raise Refused("not confirmed; nothing changed")
    shown.start(fleet)
    return {}, fleet


def _job(dry: bool, *, backend: str | None, boundary: Callable[[str, str], None] | None) -> Job:
    """One cluster's recreate: planned only when ``dry``; ``boundary`` sees each step end."""
    from fracctl.flows import recreate as flow

    def run(ctx: Context, m: Member, step: Callable[[str], None]) -> tuple[Outcome, int, Any]:
        def at(name: str) -> None:
            step(name)
            if boundary is not None:
                boundary(m.name, name)

        result = flow.recreate(ctx, dry_run=dry, yes=True, backend=backend, boundary=at)
        return result.outcome, int(result.outcome.exit_code), result

    return run


def _waves(
    base: Context,
    runner: MemberRunner,
    fleet: Sequence[Member],
    to_run: Sequence[Member],
    job: Job,
    done: dict[str, ClusterResult],
    how: _Options,
) -> list[ClusterResult]:
    """Run ``to_run`` wave by wave; stop at the first failure unless told.

    Returns every cluster's result in fleet order: ``done``'s, those of the clusters
    run, and not-started for the rest.
    """
    stop = None if how.continue_on_failure else threading.Event()
    # SIGTERM (a cancelled CI job) between two clusters stops the rollout as Ctrl-C
    # does: no further cluster starts, and the summary and audit line still come.
    with interrupt_on_sigterm():
        for wave, group in waves(to_run):
            if runner.cancel.is_set() or (stop is not None and stop.is_set()):
                continue
            base.info(f"wave {wave}: {', '.join(m.name for m in group)}")
            try:
                for r in runner.each(group, job, parallel=how.parallel, stop=stop):
                    done[r.name] = r
            except KeyboardInterrupt:
                runner.cancel.set()
    return [done.get(m.name) or ClusterResult(m, Outcome.NOT_STARTED) for m in fleet]


def _summarise(
    out: FleetResult, resume_args: Sequence[str], how: _Options, *, interrupted: bool
) -> None:
    """Where the rollout stopped, and the command that resumes it.

    ``interrupted``: Ctrl-C or SIGTERM stopped it, maybe between two clusters.
    """
    failed = [r for r in out.results if r.exit_code != 0]
    waiting = [r for r in out.results if r.state is Outcome.NOT_STARTED]
    if failed or waiting:
        first = failed[0] if failed else None
        out.stopped = (
            f"{first.name} (wave {first.member.wave}) {first.state}" if first else "interrupted"
        )
        out.resume = resume_command(
            resume_args,
            backend=how.backend,
            parallel=how.parallel,
            continue_on_failure=how.continue_on_failure,
        )
    # Stopped by Ctrl-C or SIGTERM, maybe between two clusters: the run exits 130.
    out.interrupted = interrupted


def resume_command(
    args: Sequence[str],
    *,
    backend: str | None = None,
    parallel: int = 1,
    continue_on_failure: bool = False,
) -> str:
    """The command that resumes a stopped rollout: the same fleet and options, ``--yes``."""
    words = ["fracctl", *args, "recreate", "--yes"]
    if backend:
        words += ["--backend", backend]
    if parallel > 1:
        words += ["--parallel", str(parallel)]
    if continue_on_failure:
        words.append("--continue-on-failure")
    return " ".join(shlex.quote(w) for w in words)


def _audit(base: Context, out: FleetResult) -> str:
    """One audit line for the fleet run, beside the clusters' own."""
    from fracctl.flows.recreate.lock import identity
    from fracctl.flows.recreate.state import record

    entry = {
        "time": utc_timestamp(),
        "who": identity(),
        "action": "recreate-fleet",
        "outcome": "stopped" if out.stopped else "done",
        "stopped": out.stopped,
        "clusters": {
            r.name: {
                "wave": r.member.wave,
                "context": r.member.context,
                "state": r.state,
                "exit_code": r.exit_code,
            }
            for r in out.results
        },
    }
    return record(base, live=None, entry=entry)
