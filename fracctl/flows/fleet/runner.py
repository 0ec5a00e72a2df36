"""Running a job for every cluster, ``parallel`` at a time, each failure its cluster's result.

A job is one cluster's share of a command: given that cluster's context, it runs the
single-cluster flow and says the state, exit code and result. The runner connects each
cluster, turns whatever the job raises into that cluster's result, stops clusters not
yet started once asked to (a failure in a rollout, Ctrl-C), and keeps fleet order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from fracctl.core.outcome import Outcome
from fracctl.errors import FracctlError, Refused, Unreachable
from fracctl.flows.context import Context
from fracctl.flows.fleet.contexts import member_context
from fracctl.flows.fleet.membership import Member
from fracctl.flows.fleet.progress import FleetProgress, PlainFleetProgress
from fracctl.flows.fleet.results import ClusterResult, FleetResult

# (context, member, step) -> (state, exit code, the flow's result)
Job = Callable[[Context, Member, Callable[[str], None]], tuple[Outcome, int, Any]]


class MemberRunner:
    """Runs a job for each cluster; each cluster's failure becomes its result."""

    def __init__(self, base: Context, progress: FleetProgress) -> None:
        self.base = base
        self.progress = progress
        self.cancel = threading.Event()  # Ctrl-C: running clusters stop at their next step
        self.contexts: dict[str, Context] = {}

    def connect(self, m: Member) -> Context:
        """The context of member ``m`` (made once)."""
        ctx = self.contexts.get(m.name)
        if ctx is None:
            ctx = member_context(self.base, m, self.progress)
            self.contexts[m.name] = ctx
        return ctx

    def one(self, m: Member, job: Job, stop: threading.Event | None) -> ClusterResult:
        """Run ``job`` on ``m``, unless cancelled or ``stop`` is set."""
        if self.cancel.is_set() or (stop is not None and stop.is_set()):
            return ClusterResult(m, Outcome.NOT_STARTED)
        start = time.monotonic()

        def step(name: str) -> None:
            self.progress.update(m.name, state=name)
            if self.cancel.is_set():
                raise KeyboardInterrupt

        self.progress.update(m.name, state="running")
        try:
            ctx = self.connect(m)
            ctx.kube  # noqa: B018 - connect (reads the kubeconfig) before the flow starts
            state, code, value = job(ctx, m, step)
            result = ClusterResult(m, state, code, value)
        except Unreachable as e:
            result = ClusterResult(m, Outcome.UNREACHABLE, int(e.exit_code), error=str(e))
        except Refused as e:  # a guard said no; nothing changed there
            result = ClusterResult(m, Outcome.REFUSED, int(e.exit_code), error=str(e))
        except FracctlError as e:
            result = ClusterResult(m, Outcome.FAILED, int(e.exit_code), error=str(e))
        except KeyboardInterrupt:
            self.cancel.set()  # no other cluster starts after Ctrl-C
            result = ClusterResult(m, Outcome.INTERRUPTED, int(Outcome.INTERRUPTED.exit_code))
        except Exception as e:  # one cluster's bug must not hide the others' results
            result = ClusterResult(
                m,
                Outcome.FAILED,
                int(Outcome.FAILED.exit_code),
                error=f"unexpected {type(e).__name__}: {e}",
            )
        result.seconds = time.monotonic() - start
        if stop is not None and result.exit_code != 0:
            stop.set()
        self.progress.update(m.name, state=result.state)
        return result

    def each(
        self,
        fleet: Sequence[Member],
        job: Job,
        *,
        parallel: int,
        stop: threading.Event | None = None,
    ) -> list[ClusterResult]:
        """Run ``job`` for every cluster, ``parallel`` at a time; results in fleet order.

        With ``stop``, a failure sets it and clusters not yet started are not started.
        One at a time runs on this thread, so Ctrl-C and SIGTERM reach the flow as in a
        single-cluster run.
        """
        if parallel <= 1 or len(fleet) <= 1:
            return [self.one(m, job, stop) for m in fleet]
        pool = ThreadPoolExecutor(max_workers=min(parallel, len(fleet)), thread_name_prefix="fleet")
        futures: list[Future[ClusterResult]] = [pool.submit(self.one, m, job, stop) for m in fleet]
        try:
            done = [f.result() for f in futures]
        except KeyboardInterrupt:
            self.cancel.set()  # running clusters stop at their next step boundary
            done = [f.result() for f in futures]
        finally:
            pool.shutdown(wait=True)
        return done

    def close(self) -> None:
        """Close every member's context."""
        for ctx in self.contexts.values():
            ctx.close()


def progress_for(base: Context, progress: FleetProgress | None) -> FleetProgress:
    """``progress``, or plain lines when none is given."""
    return progress if progress is not None else PlainFleetProgress(base)


def parallelism(base: Context, parallel: int | None) -> int:
    """How many members run at once: ``parallel``, else ``fleet.parallel``."""
    return parallel if parallel is not None else base.config.fleet.parallel


def run_all(
    base: Context,
    fleet: Sequence[Member],
    command: str,
    job: Job,
    *,
    parallel: int | None,
    progress: FleetProgress | None,
) -> FleetResult:
    """Run ``job`` on every member (``parallel`` at a time), showing ``progress``."""
    shown = progress_for(base, progress)
    runner = MemberRunner(base, shown)
    start = time.monotonic()
    shown.start(fleet)
    try:
        results = runner.each(fleet, job, parallel=parallelism(base, parallel))
    finally:
        shown.stop()
        runner.close()
    return FleetResult(command, results, seconds=time.monotonic() - start)
