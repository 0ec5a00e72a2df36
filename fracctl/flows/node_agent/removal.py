"""``fracctl node mps uninstall``: stop the unit and remove exactly what install created.

Refuses while MPS clients are connected (stopping the daemon ends their CUDA contexts)
unless forced, then removes the files and folders the install manifest lists and keeps,
naming the reason, whatever holds something install did not create.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fracctl.adapters.mps import MPSControl
from fracctl.adapters.systemd import Systemd
from fracctl.core.mps import CONTROL_SOCKET, parse_pids
from fracctl.errors import Unsafe
from fracctl.flows.context import Context
from fracctl.flows.node_agent.control import control_for
from fracctl.flows.node_agent.daemon_status import MPSClient, clients_of
from fracctl.flows.node_agent.manifest import Manifest, host_files, manifest_path


def connected_clients(ctx: Context, *, control: MPSControl | None = None) -> list[MPSClient]:
    """Clients connected to the running daemon (empty when none runs)."""
    cfg = ctx.config.mps
    local = ctx.host
    socket = control.socket if control else Path(cfg.pipe_dir) / CONTROL_SOCKET
    if not local.is_socket(socket):
        return []  # no daemon: nothing to ask, and no need for the binary
    control = control or control_for(ctx)
    timeout = float(cfg.command_timeout)
    servers = control.command("get_server_list", timeout=timeout)
    if not servers.ok:
        return []
    return clients_of(control, local, parse_pids(servers.output), timeout)


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
    cfg = ctx.config.mps
    host = host_files(ctx)
    mpath = manifest_path(cfg)
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
    local = ctx.host
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
