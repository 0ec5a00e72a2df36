"""The foreground supervisor: run the MPS control daemon and keep it running.

``supervise`` is the container entry point (``fracctl node mps install --foreground``):
it starts ``nvidia-cuda-mps-control -f``, waits for its control socket, applies the
configured defaults, health-checks it, restarts it with exponential backoff after a
crash, and on SIGTERM sends ``quit`` and waits a bounded grace period before killing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from fracctl.adapters.host import Host
from fracctl.adapters.mps import Daemon, MPSControl, Reply
from fracctl.config import MPSConfig
from fracctl.core.clock import Backoff
from fracctl.core.mps import (
    HEALTH_COMMAND,
    RestartPolicy,
    daemon_argv,
    default_commands,
)
from fracctl.errors import ExternalError, TimedOut, Unsafe
from fracctl.flows.context import Context
from fracctl.flows.node_agent.control import control_for, pinned_limits
from fracctl.flows.node_agent.manifest import Manifest, host_files, manifest_path

LOG_PREFIX = "mps-supervisor: "


@dataclass
class _Run:
    """State of one supervision."""

    ctx: Context
    cfg: MPSConfig
    control: MPSControl
    stop: threading.Event
    tick: float
    local: Host
    log: Callable[[str], None]
    signals: list[str] = field(default_factory=list)

    def now(self) -> float:
        return self.ctx.clock.monotonic()


def supervise(
    ctx: Context,
    *,
    stop: threading.Event | None = None,
    control: MPSControl | None = None,
    tick: float = 0.2,
) -> str:
    """Run and supervise the control daemon until stopped; the closing log line.

    Args:
        ctx: the context (``config.mps`` holds every duration, so tests shorten them).
        stop: set it to stop; when omitted, SIGTERM and SIGINT set it.
        control: the control binary (default: resolved from config).
        tick: how often the process and the stop request are looked at.

    Raises:
        Unsafe: a daemon already runs with this pipe directory (exit 5).
        ExternalError: the daemon kept failing past ``max_retries``, or refused the
            configured defaults (exit 3).
        TimedOut: ``quit`` did not finish within ``graceful_stop``; the daemon's
            process group was killed (exit 4).
    """
    cfg = ctx.config.mps
    limits = pinned_limits(cfg)
    control = control or control_for(ctx)
    local = ctx.host
    run = _Run(
        ctx,
        cfg,
        control,
        stop or threading.Event(),
        tick,
        local,
        lambda m: log_line(ctx, m),
    )
    _refuse_if_running(run)
    _prepare_dirs(run)
    restore = _install_signal_handlers(run) if stop is None else (lambda: None)
    try:
        message = _supervise(run, limits)
    finally:
        if not run.signals:
            # After a signal the process is on its way out: keep catching repeats
            # (a process-group kill) so they cannot cut the exit short.
            restore()
    run.log(message)
    return message


def log_line(ctx: Context, message: str) -> None:
    """One supervisor log line on stderr."""
    # One line per event, never wrapped: these lines end up in container and journal logs.
    ctx.err.print(LOG_PREFIX + message, markup=False, highlight=False, soft_wrap=True)


def _refuse_if_running(run: _Run) -> None:
    """Refuse when another daemon answers on this pipe dir.

    A live PID in the PID file is not enough: after a container restart the pipe dir (a
    hostPath) can hold the PID of a daemon from another PID namespace, reused here.
    """
    pid = run.control.recorded_pid()
    if pid is None or not run.local.pid_alive(pid):
        return
    if run.local.is_socket(run.control.socket):
        reply = run.control.command(HEALTH_COMMAND, timeout=float(run.cfg.command_timeout))
        if reply.ok:
            raise Unsafe(
                f"an MPS control daemon already runs (pid {pid}) with pipe dir {run.cfg.pipe_dir}",
                hint="stop it first (echo quit | nvidia-cuda-mps-control) or set mps.pipe_dir",
            )
    run.log(f"PID file names pid {pid} but its control socket does not answer: stale")


def _prepare_dirs(run: _Run) -> None:
    created: list[str] = []
    for d in (run.cfg.pipe_dir, run.cfg.log_dir):
        try:
            created += run.local.make_dirs(d)
        except OSError as e:
            raise ExternalError(f"cannot create {d}: {e.strerror or e}") from None
    if not created:
        return
    run.log(f"created {', '.join(created)}")
    host = host_files(run.ctx)
    path = manifest_path(run.cfg)
    try:
        manifest = Manifest.load(host, path) or Manifest()
        manifest.runtime_dirs += [d for d in created if d not in manifest.runtime_dirs]
        manifest.save(host, path)
    except (OSError, ExternalError) as e:
        run.log(f"could not record the created folders in {host.path(path)}: {e}")


def _install_signal_handlers(run: _Run) -> Callable[[], None]:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, _frame: object) -> None:
        run.signals.append(signal.Signals(signum).name)
        run.stop.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore


def _supervise(run: _Run, limits: dict[int, int]) -> str:
    cfg = run.cfg
    argv = daemon_argv(run.control.binary, protocol=cfg.protocol, multi_user=cfg.multi_user)
    commands = default_commands(
        active_thread_percentage=cfg.default_active_thread_percentage, pinned_limits=limits
    )
    policy = RestartPolicy(
        backoff=Backoff(first=float(cfg.backoff), factor=2.0, cap=float(cfg.max_backoff)),
        max_retries=cfg.max_retries,
        stable_threshold=float(cfg.stable_threshold),
    )
    number = 0
    while True:
        number += 1
        stale = run.control.remove_stale()
        if stale:
            run.log(f"removed stale {', '.join(stale)}")
        daemon = run.control.start(argv)
        started = run.now()
        run.log(f"started pid {daemon.pid} (run {number}): {' '.join(argv)}")
        why = _wait_ready(run, daemon, started)
        if why is None:
            why = _run_ready(run, daemon, started, commands, policy)
        if run.stop.is_set():
            return _stop(run, daemon, reason=", ".join(run.signals) or "stop requested")
        killed = [p for p in daemon.kill_group() if p != daemon.pid]
        if killed:
            run.log(f"killed {len(killed)} leftover process(es) of that run: pids {killed}")
        daemon.close()
        decision = policy.failed(run.now() - started)
        if decision.reset:
            run.log("earlier failures forgotten: the last run was stable")
        if not decision.restart:
            run.log(f"{why}; giving up after {cfg.max_retries} restart(s)")
            raise ExternalError(
                f"the MPS control daemon failed {decision.attempt} time(s) in a row "
                f"(last: {why}); gave up after {cfg.max_retries} restart(s)",
                hint=f"see {cfg.log_dir}/control.log",
            )
        run.log(f"{why}; restart {decision.attempt}/{cfg.max_retries} in {decision.delay:g}s")
        if run.stop.wait(decision.delay):
            run.log("stop requested while waiting to restart: exiting, no daemon running")
            return "stopped: no daemon was running"


def _run_ready(
    run: _Run, daemon: Daemon, started: float, commands: list[str], policy: RestartPolicy
) -> str:
    """Apply the defaults to a ready daemon, then watch it; why it must be restarted.

    Raises:
        ExternalError: the daemon refused a default; it was stopped (exit 3).
    """
    run.log(f"control socket {run.control.socket} ready in {run.now() - started:.1f}s")
    refused = _apply_defaults(run, commands)
    if refused is None:
        return _watch(run, daemon, started, policy)
    if not _answers(run, daemon):
        # Not a refusal: the daemon died or stopped answering meanwhile.
        return (
            f"daemon pid {daemon.pid} failed while the defaults were applied ({refused.describe()})"
        )
    run.log(f"the daemon refused a default: {refused.describe()}")
    _stop(run, daemon, reason="defaults refused")
    raise ExternalError(
        f"the MPS daemon refused {refused.describe()}; stopped it so that no "
        "client runs without the configured limits",
        hint="check mps.default_active_thread_percentage and "
        "mps.pinned_mem_limits against the driver",
    )


def _wait_ready(run: _Run, daemon: Daemon, started: float) -> str | None:
    """``None`` once the control socket answers; otherwise why it did not."""
    cfg = run.cfg
    deadline = started + float(cfg.start_timeout)
    last = ""
    while True:
        rc = daemon.poll()
        if rc is not None:
            return f"daemon pid {daemon.pid} exited with code {rc} before it was ready"
        if run.local.is_socket(run.control.socket):
            left = max(0.1, deadline - run.now())
            reply = run.control.command(
                HEALTH_COMMAND, timeout=min(float(cfg.command_timeout), left)
            )
            if reply.ok:
                return None
            last = f" (last answer: {reply.describe()})"
        if run.now() >= deadline:
            return (
                f"control socket {run.control.socket} did not answer within "
                f"{float(cfg.start_timeout):g}s{last}"
            )
        if run.stop.wait(run.tick):
            return "stop requested"


def _answers(run: _Run, daemon: Daemon) -> bool:
    """Whether the daemon still runs and answers the health command."""
    if daemon.poll() is not None:
        return False
    return run.control.command(HEALTH_COMMAND, timeout=float(run.cfg.command_timeout)).ok


def _apply_defaults(run: _Run, commands: list[str]) -> Reply | None:
    for cmd in commands:
        reply = run.control.command(cmd, timeout=float(run.cfg.command_timeout))
        if not reply.ok:
            return reply
        run.log(f"applied {cmd}")
    return None


def _watch(run: _Run, daemon: Daemon, started: float, policy: RestartPolicy) -> str:
    """Watch a ready daemon; why it must be restarted (or ``stop requested``)."""
    cfg = run.cfg
    interval = float(cfg.health_interval)
    next_check = run.now() + interval
    failures = 0
    while not run.stop.wait(run.tick):
        rc = daemon.poll()
        if rc is not None:
            how = f"was killed by signal {-rc}" if rc < 0 else f"exited with code {rc}"
            return f"daemon pid {daemon.pid} {how}"
        if policy.reset_if_stable(run.now() - started):
            run.log(
                f"running for {float(cfg.stable_threshold):g}s or more: stable, "
                "restart backoff reset"
            )
        if run.now() < next_check:
            continue
        reply = run.control.command(HEALTH_COMMAND, timeout=float(cfg.command_timeout))
        next_check = run.now() + interval
        if reply.ok:
            if failures:
                run.log("health check ok again")
            failures = 0
            continue
        if daemon.poll() is not None:
            continue  # reported as an exit on the next pass
        failures += 1
        run.log(f"health check failed ({failures}/{cfg.health_failures}): {reply.describe()}")
        if failures >= cfg.health_failures:
            return f"daemon pid {daemon.pid} unhealthy: {failures} health checks failed in a row"
    return "stop requested"


def _stop(run: _Run, daemon: Daemon, *, reason: str) -> str:
    """Send ``quit``, wait at most ``graceful_stop``, then kill the process group."""
    grace = float(run.cfg.graceful_stop)
    rc = daemon.poll()
    if rc is not None:
        left = [p for p in daemon.kill_group() if p != daemon.pid]
        daemon.close()
        extra = f"; killed leftover pids {left}" if left else ""
        run.log(f"{reason}: the daemon had already exited with code {rc}{extra}")
        return f"stopped ({reason}): the daemon had already exited"
    run.log(f"{reason}: sending quit to pid {daemon.pid}, waiting up to {grace:g}s")
    t0 = run.now()
    pending = run.control.send("quit")
    rc = daemon.wait(grace)
    pending.kill()
    if rc is not None:
        took = run.now() - t0
        left = [p for p in daemon.kill_group() if p != daemon.pid]
        daemon.close()
        extra = f"; killed leftover pids {left}" if left else ""
        run.log(f"daemon pid {daemon.pid} exited with code {rc} {took:.1f}s after quit{extra}")
        return f"stopped cleanly ({reason}): quit honoured in {took:.1f}s"
    killed = daemon.kill_group()
    daemon.close()
    run.log(
        f"quit not finished after {grace:g}s (a client may be running a kernel): "
        f"killed process group {daemon.pid}, pids {killed}"
    )
    raise TimedOut(
        f"the MPS daemon did not quit within {grace:g}s ({reason}); killed its process "
        f"group {daemon.pid} (pids {killed}): its clients lost their CUDA contexts",
        hint="raise mps.graceful_stop, or drain fractional pods before stopping MPS",
    )
