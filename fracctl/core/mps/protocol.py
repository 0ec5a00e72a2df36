"""The control daemon's interface: its files, variables, command line and output.

What fracctl passes to ``nvidia-cuda-mps-control`` (arguments, environment, the commands
that apply the server defaults) and how it reads what the daemon answers (server and
client lists, percentages, namespaces, failures reported with exit code 0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

CONTROL_SOCKET = "control"
PID_FILE = "nvidia-cuda-mps-control.pid"

# Variables that change how the control daemon and its clients behave; the daemon's
# environment is built from scratch for these so a stray value cannot override config.
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
LOG_ENV = "CUDA_MPS_LOG_DIRECTORY"
PROTOCOL_ENV = "CUDA_MPS_PROTOCOL_VERSION"
THREAD_ENV = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
PINNED_ENV = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"

HEALTH_COMMAND = "get_default_active_thread_percentage"


# --- daemon command line and environment -----------------------------------------------


def daemon_argv(binary: str, *, protocol: int, multi_user: bool) -> list[str]:
    """The foreground control daemon's argument list.

    ``-p 3`` and ``-m`` exist only from driver r615; with protocol 2 neither is passed,
    so an older driver still starts.
    """
    argv = [binary, "-f"]
    if protocol == 3:
        argv += ["-p", "3"]
        if multi_user:
            argv.append("-m")
    return argv


def daemon_env(base: Mapping[str, str], *, pipe_dir: str, log_dir: str) -> dict[str, str]:
    """The environment for the daemon and for control clients.

    The protocol variable is dropped: the variable beats the ``-p`` flag, so a stray
    value on the host would silently change the protocol.
    """
    env = {k: v for k, v in base.items() if k not in (PROTOCOL_ENV, THREAD_ENV, PINNED_ENV)}
    env[PIPE_ENV] = pipe_dir
    env[LOG_ENV] = log_dir
    return env


def default_commands(
    *, active_thread_percentage: int | None, pinned_limits: Mapping[int, int]
) -> list[str]:
    """The control commands that apply the configured server defaults."""
    cmds = []
    if active_thread_percentage is not None:
        cmds.append(f"set_default_active_thread_percentage {active_thread_percentage}")
    for dev, mib in sorted(pinned_limits.items()):
        cmds.append(f"set_default_device_pinned_mem_limit {dev} {mib}M")
    return cmds


# --- parsing control-daemon output ------------------------------------------------------

_ERROR_WORDS = re.compile(
    r"\b(error|invalid|unknown|unrecognized|cannot|can't|failed|failure|not supported|"
    r"refused|denied)\b",
    re.IGNORECASE,
)


def command_failed(returncode: int, output: str) -> bool:
    """Whether a control command failed (the client does not always exit non-zero)."""
    return returncode != 0 or bool(_ERROR_WORDS.search(output))


def parse_pids(output: str) -> list[int]:
    """PIDs listed one per line (``get_server_list``, ``get_client_list``)."""
    pids = []
    for line in output.splitlines():
        token = line.strip().split()[0] if line.strip() else ""
        if token.isdigit():
            pids.append(int(token))
    return pids


def parse_percentage(output: str) -> float | None:
    """``100.0`` -> 100.0; ``None`` when the output holds no number."""
    m = re.search(r"(\d+(?:\.\d+)?)", output)
    return float(m.group(1)) if m else None


def parse_namespaces(output: str) -> list[dict[str, str]]:
    """Rows of ``namespace list``, leniently.

    A header line (one holding ``NAME`` or ``NAMESPACE``) names the columns; without
    one, the first word of a line is the namespace name and the rest is kept as text.
    """
    lines = [ln for ln in output.splitlines() if ln.strip()]
    if not lines:
        return []
    head = lines[0].split()
    if any(h.upper() in ("NAME", "NAMESPACE") for h in head):
        keys = [h.lower() for h in head]
        rows = []
        for ln in lines[1:]:
            cells = ln.split(None, len(keys) - 1)
            rows.append(dict(zip(keys, cells, strict=False)))
        return rows
    return [
        {"name": ln.split()[0], "detail": ln.strip()[len(ln.split()[0]) :].strip()} for ln in lines
    ]
