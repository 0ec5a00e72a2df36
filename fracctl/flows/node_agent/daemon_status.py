"""``fracctl node mps status``: what the control daemon and the install look like now.

The daemon's PID, control socket, servers, defaults, namespaces and connected clients,
and what the install manifest says was installed (with the unit's state).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fracctl.adapters.host import Host
from fracctl.adapters.mps import MPSControl
from fracctl.adapters.systemd import Systemd
from fracctl.core.mps import HEALTH_COMMAND, parse_namespaces, parse_percentage, parse_pids
from fracctl.flows.context import Context
from fracctl.flows.node_agent.control import control_for, pinned_limits
from fracctl.flows.node_agent.manifest import Manifest, host_files, manifest_path


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


def clients_of(
    run_control: MPSControl, local: Host, servers: list[int], timeout: float
) -> list[MPSClient]:
    """The clients of each server in ``servers`` (a server that does not answer has none)."""
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
    cfg = ctx.config.mps
    limits = pinned_limits(cfg)
    control = control or control_for(ctx)
    local = ctx.host
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
    host = host_files(ctx)
    manifest = Manifest.load(host, manifest_path(cfg))
    if manifest is not None:
        active = None
        systemd = Systemd(host, timeout=timeout)
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
    st.clients = clients_of(control, local, st.servers, timeout)
    if cfg.protocol == 3:
        ns = control.verb(["namespace", "list"], timeout=timeout)
        if ns.ok:
            st.namespaces = parse_namespaces(ns.output)
        else:
            st.namespaces_error = ns.describe()
    return st
