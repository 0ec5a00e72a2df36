"""``install --systemd``: the unit and environment file that run the supervisor on a host.

Renders both files from ``config.mps``, refuses to overwrite files fracctl did not
write, records what it wrote in the install manifest, then reloads, enables and starts
the unit; a second identical install changes nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from fracctl.adapters.host import Host
from fracctl.adapters.systemd import Systemd
from fracctl.config import MPSConfig
from fracctl.core.mps import LOG_ENV, PIPE_ENV, render_env_file, render_unit
from fracctl.errors import ExternalError, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.node_agent.control import pinned_limits
from fracctl.flows.node_agent.manifest import Manifest, host_files, manifest_path

ENV_FILE = "/etc/fracctl/mps.env"
UNIT_DIR = "/etc/systemd/system"


def _fracctl_command(ctx: Context) -> list[str]:
    found = ctx.host.which("fracctl")
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
    cfg = ctx.config.mps
    pinned_limits(cfg)
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
    cfg = ctx.config.mps
    files = render_systemd_files(ctx)
    unit = cfg.unit_name
    if dry_run:
        return _planned(files, unit)
    host = host_files(ctx)
    systemd = Systemd(host, timeout=float(cfg.command_timeout) + 20)
    if not systemd.available():
        raise ExternalError(
            "systemctl not found: --systemd needs a host running systemd",
            hint="in a container, run `fracctl node mps install --foreground` instead",
        )
    mpath = manifest_path(cfg)
    manifest = Manifest.load(host, mpath) or Manifest()
    changed = _changed_files(host, manifest, files)
    if not changed:
        return _ensure_running(systemd, unit, files)
    _verify_unit(systemd, unit, files[f"{UNIT_DIR}/{unit}"])
    was_active = systemd.is_active(unit) == "active"
    manifest.unit = unit
    notes: list[str] = []
    actions = _write_files(host, manifest, {path: files[path] for path in changed})
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


def _planned(files: dict[str, str], unit: str) -> InstallResult:
    """What install would do (``dry_run``): write the files, reload, enable and start."""
    planned = [f"write {p}" for p in files]
    planned += [
        "systemctl daemon-reload",
        f"systemctl enable {unit}",
        f"systemctl start {unit}",
    ]
    return InstallResult(files, planned, changed=False, notes=[], dry_run=True)


def _verify_unit(systemd: Systemd, unit: str, text: str) -> None:
    """Refuse a unit that ``systemd-analyze verify`` rejects (where it can be run).

    Raises:
        ExternalError: the unit was rejected; nothing is written (exit 3).
    """
    checked = systemd.verify_text(unit, text)
    if checked is not None and not checked.ok:
        detail = " ".join((checked.stderr + checked.stdout).split())[:400]
        raise ExternalError(f"systemd-analyze verify rejected the unit, nothing written: {detail}")


def _write_files(host: Host, manifest: Manifest, files: dict[str, str]) -> list[str]:
    """Write the files, recording them and the folders made for them in ``manifest``.

    Returns the actions done, one per file.
    """
    actions: list[str] = []
    for path, text in files.items():
        for d in host.write_text(path, text):
            if d not in manifest.dirs:
                manifest.dirs.append(d)
        manifest.files[path] = host.sha256(path) or ""
        actions.append(f"wrote {host.path(path)}")
    return actions


def _changed_files(host: Host, manifest: Manifest, files: dict[str, str]) -> list[str]:
    """The paths whose text differs from what is there.

    Raises:
        Refused: a target file exists that install did not write (exit 1).
    """
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
    return changed


def _ensure_running(systemd: Systemd, unit: str, files: dict[str, str]) -> InstallResult:
    """With the files unchanged: enable and start the unit where it is not."""
    actions: list[str] = []
    notes: list[str] = []
    if systemd.is_enabled(unit) != "enabled":
        systemd.enable(unit)
        actions.append(f"systemctl enable {unit}")
    if systemd.is_active(unit) != "active":
        systemd.start(unit)
        actions.append(f"systemctl start {unit}")
    if not actions:
        notes.append(f"unchanged: {unit} is installed, enabled and active with these settings")
    return InstallResult(files, actions, changed=bool(actions), notes=notes)
