"""The node agent: install, supervise, inspect and remove the MPS control daemon.

``supervise`` is the container entry point (``fracctl node mps install --foreground``);
``install_systemd`` writes a unit that runs that same supervisor on a host; ``status``
reports on the daemon; ``uninstall`` removes exactly what the install manifest records.
Each lives in a module of its own; every public name is importable from here.
"""

from __future__ import annotations

from fracctl.flows.node_agent.control import control_for, pinned_limits
from fracctl.flows.node_agent.daemon_status import InstallRecord, MPSClient, MPSStatus, status
from fracctl.flows.node_agent.manifest import MANIFEST, Manifest, host_files, manifest_path
from fracctl.flows.node_agent.removal import UninstallResult, connected_clients, uninstall
from fracctl.flows.node_agent.supervisor import LOG_PREFIX, log_line, supervise
from fracctl.flows.node_agent.systemd_install import (
    ENV_FILE,
    UNIT_DIR,
    InstallResult,
    install_systemd,
    render_systemd_files,
)

__all__ = [
    "ENV_FILE",
    "LOG_PREFIX",
    "MANIFEST",
    "UNIT_DIR",
    "InstallRecord",
    "InstallResult",
    "MPSClient",
    "MPSStatus",
    "Manifest",
    "UninstallResult",
    "connected_clients",
    "control_for",
    "host_files",
    "install_systemd",
    "log_line",
    "manifest_path",
    "pinned_limits",
    "render_systemd_files",
    "status",
    "supervise",
    "uninstall",
]
