"""Fleets: the single-cluster flows, run once per cluster, concurrently or in waves.

A fleet is a list of clusters addressed by kubeconfig context, each optionally with its
own Argo CD application, git path (an overlay) and wave (``fleet:`` in fracctl.yaml,
``--context`` given more than once, or ``--all-contexts``). For every cluster this
module builds a :class:`~fracctl.flows.context.Context` of its own (that cluster's
client, overrides and state folder) and runs the existing flow with it; nothing here
decides anything about one cluster that the single-cluster flow does not.

Results are keyed by cluster. A failure in one cluster (unreachable, refused, timed
out) becomes that cluster's result with its exit code, never an exception that hides
the others. ``drift`` and ``preflight`` look at every cluster at once (bounded by
``parallel``); ``recreate`` goes wave by wave, lowest first (wave 0 is the canary), and
stops before the next cluster and the next wave once one fails.
"""

from __future__ import annotations

import dataclasses
import io
import re
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fracctl.config import Config
from fracctl.core.clock import utc_timestamp
from fracctl.errors import ExitCode, FracctlError, Refused, Unreachable, UsageError
from fracctl.flows.context import Context, redacting_console
from fracctl.flows.signals import interrupt_on_sigterm

# Cluster states, as the summary shows them.
NOT_STARTED = "not-started"
INTERRUPTED = "interrupted"
UNREACHABLE = "unreachable"
FAILED = "failed"
REFUSED = "refused"


@dataclass(frozen=True)
class Member:
    """One cluster of the fleet: its name in reports, its context, wave and overrides."""

    name: str
    context: str | None
    wave: int = 0
    app: str | None = None
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {"context": self.context, "wave": self.wave, "app": self.app, "path": self.path}


def members(
    config: Config,
    *,
    contexts: Sequence[str] = (),
    all_contexts: bool = False,
    env: Mapping[str, str] | None = None,
) -> list[Member] | None:
    """The clusters this run addresses, or ``None`` for one cluster as before.

    ``--all-contexts`` takes every context of the kubeconfig; ``--context`` given more
    than once takes those; otherwise ``fleet.clusters``. A context that is also listed in
    ``fleet.clusters`` keeps that entry's name, wave and overrides. One ``--context``
    without a ``fleet:`` section is the single-cluster run it always was.
    """
    entries = {c.context: c for c in config.fleet.clusters}
    if all_contexts:
        from fracctl.adapters.kube import kubeconfig_contexts

        names = kubeconfig_contexts(config.kube.kubeconfig, env)
        if not names:
            raise UsageError("--all-contexts: the kubeconfig names no context")
    elif contexts:
        names = list(dict.fromkeys(contexts))
        if len(names) == 1 and not entries:
            return None
    elif entries:
        names = list(entries)
    else:
        return None
    out = []
    for name in names:
        e = entries.get(name)
        if e is None:
            out.append(Member(name=name, context=name))
        else:
            out.append(Member(name=e.name, context=name, wave=e.wave, app=e.app, path=e.path))
    return out


# --- results -------------------------------------------------------------------------


@dataclass
class ClusterResult:
    """What one cluster's run gave: a state, its exit code, and the flow's own result."""

    member: Member
    state: str
    exit_code: int = 0
    value: Any = None  # DriftReport, PreflightReport or RecreateResult
    error: str | None = None
    seconds: float = 0.0

    @property
    def name(self) -> str:
        """The cluster's name in reports."""
        return self.member.name

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        value = self.value.to_dict() if hasattr(self.value, "to_dict") else None
        return {
            **self.member.to_dict(),
            "state": self.state,
            "exit_code": self.exit_code,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "result": value,
        }


@dataclass
class FleetResult:
    """Every cluster's result, in fleet order, and what to run next (recreate)."""

    command: str
    results: list[ClusterResult] = field(default_factory=list)
    resume: str | None = None  # the command that resumes a stopped rollout
    stopped: str | None = None  # why a rollout stopped before every cluster ran
    seconds: float = 0.0
    audit_file: str | None = None
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped the run

    @property
    def exit_code(self) -> int:
        """The worst of the clusters' exit codes (130 when the run was interrupted)."""
        worst = max((r.exit_code for r in self.results), default=0)
        return max(worst, int(ExitCode.INTERRUPTED)) if self.interrupted else worst

    def by_name(self) -> dict[str, ClusterResult]:
        """Results keyed by cluster name."""
        return {r.name: r for r in self.results}

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output: keyed by cluster."""
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 2),
            "stopped": self.stopped,
            "resume": self.resume,
            "audit_file": self.audit_file,
            "clusters": {r.name: r.to_dict() for r in self.results},
        }


# --- progress ------------------------------------------------------------------------


class FleetProgress(Protocol):
    """Shows how every cluster of the fleet stands."""

    def start(self, fleet: Sequence[Member]) -> None:
        """The clusters about to run."""

    def update(
        self,
        cluster: str,
        *,
        state: str | None = None,
        note: str | None = None,
        nodes: tuple[int, int] | None = None,
    ) -> None:
        """A cluster moved to ``state``, said ``note``, or has ``nodes`` (ready, total)."""

    def stop(self) -> None:
        """The run ended."""


class PlainFleetProgress:
    """A line on stderr per change, each naming its cluster (the default off a terminal)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lock = threading.Lock()
        self.nodes: dict[str, tuple[int, int]] = {}

    def start(self, fleet: Sequence[Member]) -> None:
        """Nothing to draw before the first change."""

    def update(
        self,
        cluster: str,
        *,
        state: str | None = None,
        note: str | None = None,
        nodes: tuple[int, int] | None = None,
    ) -> None:
        """One line for a note or a change in nodes ready; states are shown by notes."""
        with self.lock:
            if note is not None:
                self.ctx.info(f"[{cluster}] {note}")
            if nodes is not None and self.nodes.get(cluster) != nodes:
                self.nodes[cluster] = nodes
                self.ctx.info(f"[{cluster}] nodes ready {nodes[0]}/{nodes[1]}")

    def stop(self) -> None:
        """Nothing to tear down."""


class _Lines(io.TextIOBase):
    """A text stream that hands each complete line to ``emit`` (a member's console)."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        super().__init__()
        self.emit = emit
        self.buffer_ = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.buffer_ += text
        while "\n" in self.buffer_:
            line, self.buffer_ = self.buffer_.split("\n", 1)
            if line.strip():
                self.emit(line.rstrip())
        return len(text)


class _MemberNodes:
    """A member's node progress: readiness counts go to the fleet's progress."""

    def __init__(self, progress: FleetProgress, cluster: str, condition: str) -> None:
        self.progress = progress
        self.cluster = cluster
        self.condition = condition

    def show(self, nodes: dict[str, Any]) -> None:
        from fracctl.core.nodes import is_ready

        ready = sum(1 for o in nodes.values() if is_ready(o, self.condition))
        self.progress.update(self.cluster, nodes=(ready, len(nodes)))

    def stop(self) -> None:
        """The fleet's progress outlives one wait."""


# --- contexts ------------------------------------------------------------------------


def _folder_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "cluster"


def member_config(config: Config, m: Member) -> Config:
    """``config`` for one cluster: its context, its overrides, its own state folder.

    Each cluster keeps its backups and audit log under ``<state_dir>/clusters/<name>``:
    the object has the same name in every cluster, so a shared folder would offer one
    cluster's backup as another's.
    """
    state = Path(config.recreate.state_dir) / "clusters" / _folder_name(m.name)
    return dataclasses.replace(
        config,
        kube=dataclasses.replace(config.kube, context=m.context, in_cluster=False),
        argocd=dataclasses.replace(config.argocd, app=m.app or config.argocd.app),
        git=dataclasses.replace(config.git, path=m.path or config.git.path),
        recreate=dataclasses.replace(config.recreate, state_dir=str(state)),
    )


# Builds a cluster's context from its configuration; tests may replace it.
build_context: Callable[[Config], Context] = Context.build


def member_context(base: Context, m: Member, progress: FleetProgress) -> Context:
    """The context of one cluster: its own client; its messages go to the fleet's progress."""
    ctx = build_context(member_config(base.config, m))
    ctx.clock = base.clock
    ctx.env = base.env
    ctx.interactive = False
    sink = _Lines(lambda line: progress.update(m.name, note=line))
    width = base.err.width
    ctx._err = redacting_console(file=sink, highlight=False, color_system=None, width=width)
    ctx._out = ctx._err
    ctx.node_progress = lambda _ctx, condition: _MemberNodes(progress, m.name, condition)
    return ctx


# --- running every cluster -----------------------------------------------------------

# (context, member, step) -> (state, exit code, the flow's result)
Job = Callable[[Context, Member, Callable[[str], None]], tuple[str, int, Any]]


class _Run:
    """Runs a job for each cluster; each cluster's failure becomes its result."""

    def __init__(self, base: Context, progress: FleetProgress) -> None:
        self.base = base
        self.progress = progress
        self.cancel = threading.Event()  # Ctrl-C: running clusters stop at their next step
        self.contexts: dict[str, Context] = {}

    def connect(self, m: Member) -> Context:
        ctx = self.contexts.get(m.name)
        if ctx is None:
            ctx = member_context(self.base, m, self.progress)
            self.contexts[m.name] = ctx
        return ctx

    def one(self, m: Member, job: Job, stop: threading.Event | None) -> ClusterResult:
        if self.cancel.is_set() or (stop is not None and stop.is_set()):
            return ClusterResult(m, NOT_STARTED)
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
            result = ClusterResult(m, UNREACHABLE, int(e.exit_code), error=str(e))
        except Refused as e:  # a guard said no; nothing changed there
            result = ClusterResult(m, REFUSED, int(e.exit_code), error=str(e))
        except FracctlError as e:
            result = ClusterResult(m, FAILED, int(e.exit_code), error=str(e))
        except KeyboardInterrupt:
            self.cancel.set()  # no other cluster starts after Ctrl-C
            result = ClusterResult(m, INTERRUPTED, int(ExitCode.INTERRUPTED))
        except Exception as e:  # one cluster's bug must not hide the others' results
            result = ClusterResult(
                m, FAILED, int(ExitCode.EXTERNAL), error=f"unexpected {type(e).__name__}: {e}"
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
        for ctx in self.contexts.values():
            ctx.close()


def _progress(base: Context, progress: FleetProgress | None) -> FleetProgress:
    return progress if progress is not None else PlainFleetProgress(base)


def _parallel(base: Context, parallel: int | None) -> int:
    return parallel if parallel is not None else base.config.fleet.parallel


def _run_all(
    base: Context,
    fleet: Sequence[Member],
    command: str,
    job: Job,
    *,
    parallel: int | None,
    progress: FleetProgress | None,
) -> FleetResult:
    shown = _progress(base, progress)
    runner = _Run(base, shown)
    start = time.monotonic()
    shown.start(fleet)
    try:
        results = runner.each(fleet, job, parallel=_parallel(base, parallel))
    finally:
        shown.stop()
        runner.close()
    return FleetResult(command, results, seconds=time.monotonic() - start)


# --- drift and preflight --------------------------------------------------------------


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

    def job(ctx: Context, m: Member, step: Callable[[str], None]) -> tuple[str, int, Any]:
        report = flow.run(ctx, **options)
        code = flow.exit_code(report)
        return ("drifted" if code else "in-sync"), code, report

    return _run_all(base, fleet, "drift", job, parallel=parallel, progress=progress)


def preflight(
    base: Context,
    fleet: Sequence[Member],
    *,
    selector: dict[str, str] | None = None,
    parallel: int | None = None,
    progress: FleetProgress | None = None,
) -> FleetResult:
    """``fracctl preflight`` on every cluster at once: each cluster's own guards."""
    from fracctl.flows.preflight import preflight as flow

    def job(ctx: Context, m: Member, step: Callable[[str], None]) -> tuple[str, int, Any]:
        report = flow(ctx, selector=selector)
        return ("passed", 0, report) if report.ok else ("refused", 1, report)

    return _run_all(base, fleet, "preflight", job, parallel=parallel, progress=progress)


# --- recreate in waves ----------------------------------------------------------------


def waves(fleet: Sequence[Member]) -> list[tuple[int, list[Member]]]:
    """The clusters grouped by wave, lowest first, fleet order kept within a wave."""
    grouped: dict[int, list[Member]] = {}
    for m in fleet:
        grouped.setdefault(m.wave, []).append(m)
    return sorted(grouped.items())


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

    def job(dry: bool) -> Job:
        def run(ctx: Context, m: Member, step: Callable[[str], None]) -> tuple[str, int, Any]:
            def at(name: str) -> None:
                step(name)
                if boundary is not None:
                    boundary(m.name, name)

            result = flow.recreate(ctx, dry_run=dry, yes=True, backend=backend, boundary=at)
            return result.outcome, (1 if result.outcome == "refused" else 0), result

        return run

    shown = _progress(base, progress)
    runner = _Run(base, shown)
    start = time.monotonic()
    out = FleetResult("recreate")
    try:
        for m in fleet:  # every cluster's kubeconfig entry is checked before anything runs
            runner.connect(m).kube  # noqa: B018
        # Every cluster is planned first, --yes or not: its backend proven and its guards
        # run read-only, so that a later wave's wrong token stops the rollout before the
        # canary is touched.
        shown.start(fleet)
        out.results = runner.each(fleet, job(True), parallel=max(parallel, _parallel(base, None)))
        if dry_run:
            return out
        done: dict[str, ClusterResult] = {}
        to_run: Sequence[Member] = fleet
        if out.exit_code != 0 and not continue_on_failure:
            # Nothing starts: the clusters whose plan failed say why, the rest wait.
            done = {r.name: r for r in out.results if r.exit_code != 0}
            to_run = []
        else:
            shown.stop()
            if not yes and (confirm is None or not confirm(out)):
                raise Refused("not confirmed; nothing changed")
            shown.start(fleet)
        _waves(base, runner, to_run, job(False), done, parallel, continue_on_failure)
        out.results = [done.get(m.name) or ClusterResult(m, NOT_STARTED) for m in fleet]
    finally:
        shown.stop()
        runner.close()
        out.seconds = time.monotonic() - start
    _summarise(out, resume_args, backend, parallel, continue_on_failure)
    # Stopped by Ctrl-C or SIGTERM, maybe between two clusters: the run exits 130.
    out.interrupted = runner.cancel.is_set()
    out.audit_file = _audit(base, out)
    return out


def _waves(
    base: Context,
    runner: _Run,
    to_run: Sequence[Member],
    job: Job,
    done: dict[str, ClusterResult],
    parallel: int,
    continue_on_failure: bool,
) -> None:
    """Run the clusters wave by wave into ``done``; stop at the first failure unless told."""
    stop = None if continue_on_failure else threading.Event()
    # SIGTERM (a cancelled CI job) between two clusters stops the rollout as Ctrl-C
    # does: no further cluster starts, and the summary and audit line still come.
    with interrupt_on_sigterm():
        for wave, group in waves(to_run):
            if runner.cancel.is_set() or (stop is not None and stop.is_set()):
                continue
            base.info(f"wave {wave}: {', '.join(m.name for m in group)}")
            try:
                for r in runner.each(group, job, parallel=parallel, stop=stop):
                    done[r.name] = r
            except KeyboardInterrupt:
                runner.cancel.set()


def _summarise(
    out: FleetResult,
    resume_args: Sequence[str],
    backend: str | None,
    parallel: int,
    continue_on_failure: bool,
) -> None:
    """Where the rollout stopped, and the command that resumes it."""
    failed = [r for r in out.results if r.exit_code != 0]
    waiting = [r for r in out.results if r.state == NOT_STARTED]
    if failed or waiting:
        first = failed[0] if failed else None
        out.stopped = (
            f"{first.name} (wave {first.member.wave}) {first.state}" if first else "interrupted"
        )
        out.resume = resume_command(
            resume_args,
            backend=backend,
            parallel=parallel,
            continue_on_failure=continue_on_failure,
        )


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
    from fracctl.flows.lock import identity
    from fracctl.flows.recreate_state import record

    entry = {
        "time": utc_timestamp(),
        "who": identity(),
        "action": "recreate-fleet",
        "outcome": "stopped" if out.stopped else "done",
        "stopped": out.stopped,
        "clusters": {
            r.name: {"wave": r.member.wave, "context": r.member.context, "state": r.state,
                     "exit_code": r.exit_code}
            for r in out.results
        },
    }  # fmt: skip
    return record(base, live=None, entry=entry)
