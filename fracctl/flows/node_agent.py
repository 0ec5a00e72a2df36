"""The node agent: install, supervise, inspect and remove the MPS control daemon.

``supervise`` is the container entry point (``fracctl node mps install --foreground``):
it starts ``nvidia-cuda-mps-control -f``, waits for its control socket, applies the
configured defaults, health-checks it, restarts it with exponential backoff after a
crash, and on SIGTERM sends ``quit`` and waits a bounded grace period before killing.
``install_systemd`` writes a unit that runs that same supervisor on a host.

Everything ``install`` creates is recorded in a manifest so that ``uninstall`` removes
exactly that and nothing else.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.adapters.host import Host
from fracctl.adapters.mps import Daemon, MPSControl, Reply
from fracctl.adapters.systemd import Systemd
from fracctl.config import MPSConfig
from fracctl.core.clock import Backoff
from fracctl.core.mps import (
    CONTROL_SOCKET,
    HEALTH_COMMAND,
    LOG_ENV,
    PIPE_ENV,
    RestartPolicy,
    daemon_argv,
    daemon_env,
    default_commands,
    parse_namespaces,
    parse_percentage,
    parse_pids,
    parse_pinned_limits,
    render_env_file,
    render_unit,
)
from fracctl.errors import ExternalError, Refused, TimedOut, Unsafe, UsageError
from fracctl.flows.context import Context

ENV_FILE = "/etc/fracctl/mps.env"
UNIT_DIR = "/etc/systemd/system"
MANIFEST = "mps-install.json"
LOG_PREFIX = "mps-supervisor: "


# --- shared helpers ---------------------------------------------------------------------


def _cfg(ctx: Context) -> MPSConfig:
    return ctx.config.mps


def _limits(cfg: MPSConfig) -> dict[int, int]:
    try:
        return parse_pinned_limits(cfg.pinned_mem_limits)
    except ValueError as e:
        raise UsageError(f"mps.pinned_mem_limits: {e}") from None


def control_for(ctx: Context) -> MPSControl:
    """The control binary, resolved on this machine's PATH, pointed at the pipe dir."""
    cfg = _cfg(ctx)
    binary = Host("/", env=ctx.env).which(cfg.control_binary)
    if binary is None:
        raise ExternalError(
            f"{cfg.control_binary} not found on PATH",
            hint="install the NVIDIA driver's compute utilities or set mps.control_binary",
        )
    env = daemon_env(ctx.env, pipe_dir=cfg.pipe_dir, log_dir=cfg.log_dir)
    return MPSControl(os.path.abspath(binary), env=env, pipe_dir=cfg.pipe_dir)


@dataclass
class Manifest:
    """What ``install`` created: host files with their digests, and folders."""

    unit: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # host path -> sha256
    dirs: list[str] = field(default_factory=list)  # host folders, outermost first
    runtime_dirs: list[str] = field(default_factory=list)  # pipe/log folders

    @classmethod
    def load(cls, host: Host, path: str) -> Manifest | None:
        """The manifest at ``path`` on ``host``, if any."""
        text = host.read_text(path)
        if text is None:
            return None
        try:
            data = json.loads(text)
            return cls(
                unit=data.get("unit"),
                files=dict(data.get("files") or {}),
                dirs=list(data.get("dirs") or []),
                runtime_dirs=list(data.get("runtime_dirs") or []),
            )
        except (ValueError, TypeError, AttributeError):
            raise ExternalError(f"{host.path(path)}: the install manifest is not valid") from None

    def save(self, host: Host, path: str) -> None:
        """Write it (recording the state folder too, when this creates it)."""
        body = {
            "version": 1,
            "unit": self.unit,
            "files": self.files,
            "dirs": self.dirs,
            "runtime_dirs": self.runtime_dirs,
        }
        for d in host.make_dirs(Path(path).parent):
            if d not in self.dirs:
                self.dirs.append(d)
                body["dirs"] = self.dirs
        host.write_text(path, json.dumps(body, indent=2) + "\n")


def _manifest_path(cfg: MPSConfig) -> str:
    return str(Path(cfg.state_dir) / MANIFEST)


def _host(ctx: Context) -> Host:
    return Host(_cfg(ctx).host_root, env=ctx.env)


# --- the foreground supervisor ----------------------------------------------------------


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
    cfg = _cfg(ctx)
    limits = _limits(cfg)
    control = control or control_for(ctx)
    local = Host("/", env=ctx.env)
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
    host = _host(run.ctx)
    path = _manifest_path(run.cfg)
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
            run.log(f"control socket {run.control.socket} ready in {run.now() - started:.1f}s")
            refused = _apply_defaults(run, commands)
            if refused is not None and not _answers(run, daemon):
                # Not a refusal: the daemon died or stopped answering meanwhile.
                why = (
                    f"daemon pid {daemon.pid} failed while the defaults were applied "
                    f"({refused.describe()})"
                )
            elif refused is not None:
                run.log(f"the daemon refused a default: {refused.describe()}")
                _stop(run, daemon, reason="defaults refused")
                raise ExternalError(
                    f"the MPS daemon refused {refused.describe()}; stopped it so that no "
                    "client runs without the configured limits",
                    hint="check mps.default_active_thread_percentage and "
                    "mps.pinned_mem_limits against the driver",
                )
            else:
                why = _watch(run, daemon, started, policy)
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


# --- systemd install --------------------------------------------------------------------


def _fracctl_command(ctx: Context) -> list[str]:
    found = Host("/", env=ctx.env).which("fracctl")
    if found:
        return [os.path.abspath(found)]
    return [sys.executable, "-m", "fracctl"]


def _env_values(cfg: MPSConfig) -> dict[str, str]:
    def dur(v: float) -> str:
        return f"{float(v):g}"

    values = {
        PIPE_ENV: cfg.pipe_dir,
        LOG_ENV: cfg.log_dir,
        "FRACCTL_MPS_PIPE_DIR": cfg.pipe_dir,
        "FRACCTL_MPS_LOG_DIR": cfg.log_dir,
        "FRACCTL_MPS_CONTROL_BINARY": cfg.control_binary,
        "FRACCTL_MPS_PROTOCOL": str(cfg.protocol),
        "FRACCTL_MPS_MULTI_USER": "true" if cfg.multi_user else "false",
    }
    if cfg.default_active_thread_percentage is not None:
        values["FRACCTL_MPS_DEFAULT_ACTIVE_THREAD_PERCENTAGE"] = str(
            cfg.default_active_thread_percentage
        )
    values.update(
        {
            "FRACCTL_MPS_PINNED_MEM_LIMITS": ",".join(cfg.pinned_mem_limits),
            "FRACCTL_MPS_HEALTH_INTERVAL": dur(cfg.health_interval),
            "FRACCTL_MPS_HEALTH_FAILURES": str(cfg.health_failures),
            "FRACCTL_MPS_COMMAND_TIMEOUT": dur(cfg.command_timeout),
            "FRACCTL_MPS_START_TIMEOUT": dur(cfg.start_timeout),
            "FRACCTL_MPS_STABLE_THRESHOLD": dur(cfg.stable_threshold),
            "FRACCTL_MPS_MAX_RETRIES": str(cfg.max_retries),
            "FRACCTL_MPS_BACKOFF": dur(cfg.backoff),
            "FRACCTL_MPS_MAX_BACKOFF": dur(cfg.max_backoff),
            "FRACCTL_MPS_GRACEFUL_STOP": dur(cfg.graceful_stop),
            "FRACCTL_MPS_STATE_DIR": cfg.state_dir,
        }
    )
    return values


def render_systemd_files(ctx: Context) -> dict[str, str]:
    """The unit and environment file ``install --systemd`` writes (host path -> text)."""
    cfg = _cfg(ctx)
    _limits(cfg)
    try:
        env_text = render_env_file(
            _env_values(cfg),
            header=(
                "MPS daemon settings, written by `fracctl node mps install --systemd`.\n"
                "`fracctl node mps uninstall` removes this file."
            ),
        )
        unit_text = render_unit(
            description="NVIDIA MPS control daemon (supervised by fracctl)",
            exec_start=[*_fracctl_command(ctx), "node", "mps", "install", "--foreground"],
            env_file=ENV_FILE,
            stop_timeout=float(cfg.graceful_stop) + 30,
        )
    except ValueError as e:
        raise UsageError(str(e)) from None
    return {f"{UNIT_DIR}/{cfg.unit_name}": unit_text, ENV_FILE: env_text}


@dataclass(frozen=True)
class InstallResult:
    """What ``install --systemd`` wrote and ran (or would, with ``dry_run``)."""

    files: dict[str, str]  # host path -> text
    actions: list[str]  # done, or planned with dry_run
    changed: bool
    notes: list[str]
    dry_run: bool = False


def install_systemd(ctx: Context, *, dry_run: bool = False) -> InstallResult:
    """Write the unit and environment file, reload, enable and start; idempotent.

    Returns:
        The files, the ``actions`` done (or planned with ``dry_run``), whether anything
        ``changed``, and ``notes`` for the operator.

    Raises:
        Refused: a target file exists that install did not write (exit 1).
        ExternalError: systemctl is missing or failed (exit 3).
    """
    cfg = _cfg(ctx)
    files = render_systemd_files(ctx)
    unit = cfg.unit_name
    if dry_run:
        planned = [f"write {p}" for p in files]
        planned += [
            "systemctl daemon-reload",
            f"systemctl enable {unit}",
            f"systemctl start {unit}",
        ]
        return InstallResult(files, planned, changed=False, notes=[], dry_run=True)
    host = _host(ctx)
    systemd = Systemd(host, timeout=float(cfg.command_timeout) + 20)
    if not systemd.available():
        raise ExternalError(
            "systemctl not found: --systemd needs a host running systemd",
            hint="in a container, run `fracctl node mps install --foreground` instead",
        )
    mpath = _manifest_path(cfg)
    manifest = Manifest.load(host, mpath) or Manifest()
    changed = []
    for path, text in files.items():
        current = host.read_text(path)
        if current is not None and path not in manifest.files:
            raise Refused(
                f"{host.path(path)} exists and was not written by fracctl",
                hint="move it away, or set mps.unit_name to install under another name",
            )
        if current != text:
            changed.append(path)
    actions: list[str] = []
    notes: list[str] = []
    if not changed:
        if systemd.is_enabled(unit) != "enabled":
            systemd.enable(unit)
            actions.append(f"systemctl enable {unit}")
        if systemd.is_active(unit) != "active":
            systemd.start(unit)
            actions.append(f"systemctl start {unit}")
        if not actions:
            notes.append(f"unchanged: {unit} is installed, enabled and active with these settings")
        return InstallResult(files, actions, changed=bool(actions), notes=notes)
    unit_path = f"{UNIT_DIR}/{unit}"
    checked = systemd.verify_text(unit, files[unit_path])
    if checked is not None and not checked.ok:
        detail = " ".join((checked.stderr + checked.stdout).split())[:400]
        raise ExternalError(f"systemd-analyze verify rejected the unit, nothing written: {detail}")
    was_active = systemd.is_active(unit) == "active"
    manifest.unit = unit
    for path in changed:
        for d in host.write_text(path, files[path]):
            if d not in manifest.dirs:
                manifest.dirs.append(d)
        manifest.files[path] = host.sha256(path) or ""
        actions.append(f"wrote {host.path(path)}")
    manifest.save(host, mpath)
    systemd.daemon_reload()
    actions.append("systemctl daemon-reload")
    systemd.enable(unit)
    actions.append(f"systemctl enable {unit}")
    if was_active:
        notes.append(
            f"{unit} keeps running with the old settings: restart it when no MPS client is "
            f"connected (systemctl restart {unit}); a restart ends every client's CUDA context"
        )
    else:
        systemd.start(unit)
        actions.append(f"systemctl start {unit}")
    return InstallResult(files, actions, changed=True, notes=notes)


# --- status -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MPSClient:
    """A process connected to an MPS server."""

    pid: int
    name: str  # its command name, ``?`` when unknown
    server: int  # the server's PID

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {"pid": self.pid, "name": self.name, "server": self.server}


@dataclass(frozen=True)
class InstallRecord:
    """What the install manifest says was installed."""

    unit: str | None
    files: list[str]
    active: str | None = None  # the unit's state; None when systemd was not asked

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json`` (``active`` only when systemd was asked)."""
        out: dict[str, Any] = {"unit": self.unit, "files": self.files}
        if self.active is not None:
            out["active"] = self.active
        return out


@dataclass
class MPSStatus:
    """The control daemon's state, as ``fracctl node mps status`` shows it."""

    pipe_dir: str
    log_dir: str
    protocol: int
    daemon_pid: int | None  # from the PID file, when that process lives
    control_socket: str
    socket_present: bool
    running: bool = False  # the control socket answers
    servers: list[int] = field(default_factory=list)
    defaults: dict[str, float | str | None] = field(default_factory=dict)
    namespaces: list[dict[str, str]] | None = None  # protocol 3 only
    namespaces_error: str | None = None  # ``namespace list`` failed
    clients: list[MPSClient] = field(default_factory=list)
    error: str | None = None  # why the running daemon did not answer
    install: InstallRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        namespaces: list[dict[str, str]] | dict[str, str] | None = self.namespaces
        if self.namespaces_error is not None:
            namespaces = {"error": self.namespaces_error}
        return {
            "running": self.running,
            "pipe_dir": self.pipe_dir,
            "log_dir": self.log_dir,
            "protocol": self.protocol,
            "daemon_pid": self.daemon_pid,
            "control_socket": self.control_socket,
            "socket_present": self.socket_present,
            "servers": self.servers,
            "defaults": self.defaults,
            "namespaces": namespaces,
            "clients": [c.to_dict() for c in self.clients],
            "error": self.error,
            "install": self.install.to_dict() if self.install else None,
        }


def _clients(
    run_control: MPSControl, local: Host, servers: list[int], timeout: float
) -> list[MPSClient]:
    out = []
    for server in servers:
        reply = run_control.command(f"get_client_list {server}", timeout=timeout)
        if not reply.ok:
            continue
        for pid in parse_pids(reply.output):
            out.append(MPSClient(pid, local.process_name(pid) or "?", server))
    return out


def status(ctx: Context, *, control: MPSControl | None = None) -> MPSStatus:
    """The daemon's state: PID, socket, servers, defaults, namespaces, clients.

    Returns:
        The state; ``running`` is True when the control socket answers.
    """
    cfg = _cfg(ctx)
    limits = _limits(cfg)
    control = control or control_for(ctx)
    local = Host("/", env=ctx.env)
    timeout = float(cfg.command_timeout)
    pid = control.recorded_pid()
    st = MPSStatus(
        pipe_dir=cfg.pipe_dir,
        log_dir=cfg.log_dir,
        protocol=cfg.protocol,
        daemon_pid=pid if pid is not None and local.pid_alive(pid) else None,
        control_socket=str(control.socket),
        socket_present=local.is_socket(control.socket),
    )
    manifest = Manifest.load(_host(ctx), _manifest_path(cfg))
    if manifest is not None:
        active = None
        systemd = Systemd(_host(ctx), timeout=timeout)
        if manifest.unit and systemd.available():
            active = systemd.is_active(manifest.unit)
        st.install = InstallRecord(manifest.unit, sorted(manifest.files), active)
    if not st.socket_present:
        return st
    health = control.command(HEALTH_COMMAND, timeout=timeout)
    if not health.ok:
        st.error = health.describe()
        return st
    st.running = True
    st.defaults["active_thread_percentage"] = parse_percentage(health.output)
    for dev in sorted(limits):
        r = control.command(f"get_default_device_pinned_mem_limit {dev}", timeout=timeout)
        st.defaults[f"pinned_mem_limit_{dev}"] = r.output.strip() if r.ok else None
    servers = control.command("get_server_list", timeout=timeout)
    st.servers = parse_pids(servers.output) if servers.ok else []
    st.clients = _clients(control, local, st.servers, timeout)
    if cfg.protocol == 3:
        ns = control.verb(["namespace", "list"], timeout=timeout)
        if ns.ok:
            st.namespaces = parse_namespaces(ns.output)
        else:
            st.namespaces_error = ns.describe()
    return st


# --- uninstall --------------------------------------------------------------------------


def connected_clients(ctx: Context, *, control: MPSControl | None = None) -> list[MPSClient]:
    """Clients connected to the running daemon (empty when none runs)."""
    cfg = _cfg(ctx)
    local = Host("/", env=ctx.env)
    socket = control.socket if control else Path(cfg.pipe_dir) / CONTROL_SOCKET
    if not local.is_socket(socket):
        return []  # no daemon: nothing to ask, and no need for the binary
    control = control or control_for(ctx)
    timeout = float(cfg.command_timeout)
    servers = control.command("get_server_list", timeout=timeout)
    if not servers.ok:
        return []
    return _clients(control, local, parse_pids(servers.output), timeout)


@dataclass
class UninstallResult:
    """What ``uninstall`` found, did, removed and left in place."""

    manifest: str  # the install manifest's host path
    found: bool  # False: there was no manifest, so nothing was touched
    forced_clients: list[MPSClient]  # connected when --force went ahead
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # each with the reason
    actions: list[str] = field(default_factory=list)


def uninstall(
    ctx: Context, *, force: bool = False, control: MPSControl | None = None
) -> UninstallResult:
    """Stop the unit install created and remove exactly what install created.

    Raises:
        Unsafe: clients are connected and ``force`` is off (exit 5, naming them).
    """
    cfg = _cfg(ctx)
    host = _host(ctx)
    mpath = _manifest_path(cfg)
    manifest = Manifest.load(host, mpath)
    clients = connected_clients(ctx, control=control)
    if clients and not force:
        names = ", ".join(f"pid {c.pid} ({c.name})" for c in clients)
        raise Unsafe(
            f"{len(clients)} MPS client(s) connected: {names}; uninstalling stops the "
            "daemon and ends their CUDA contexts",
            hint="drain the fractional pods first, or rerun with --force",
        )
    out = UninstallResult(str(host.path(mpath)), found=manifest is not None, forced_clients=clients)
    if manifest is None:
        return out
    systemd = Systemd(host, timeout=float(cfg.command_timeout) + 20)
    if manifest.unit:
        if systemd.available():
            systemd.stop_and_disable(manifest.unit, timeout=float(cfg.graceful_stop) + 30)
            out.actions.append(f"systemctl disable --now {manifest.unit}")
        else:
            out.kept.append(f"{manifest.unit}: systemctl not found, the unit was not stopped")
    for path in manifest.files:
        if host.remove_file(path):
            out.removed.append(str(host.path(path)))
    if manifest.unit and systemd.available():
        systemd.daemon_reload()
        out.actions.append("systemctl daemon-reload")
    host.remove_file(mpath)
    out.removed.append(str(host.path(mpath)))
    local = Host("/", env=ctx.env)
    still = Path(cfg.pipe_dir) / CONTROL_SOCKET
    if local.is_socket(still):
        out.kept.append(
            f"{still} (an MPS daemon still runs there: stop its supervisor, e.g. the "
            "container or the `install --foreground` process)"
        )
    for d in reversed(manifest.runtime_dirs):
        if local.remove_empty_dir(d):
            out.removed.append(d)
        elif local.exists(d):
            out.kept.append(f"{d} (not empty: holds files install did not create)")
    for d in reversed(manifest.dirs):
        if host.remove_empty_dir(d):
            out.removed.append(str(host.path(d)))
        elif host.exists(d):
            out.kept.append(f"{host.path(d)} (not empty: holds files install did not create)")
    return out
