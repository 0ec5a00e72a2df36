"""The systemd unit and environment file that run the fracctl supervisor.

Rendering only, quoted by systemd's rules (not a shell's) so that no value can add a
line, a specifier or a variable expansion to the unit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def _no_control_chars(value: str, what: str) -> str:
    if any(ord(c) < 32 for c in value):
        raise ValueError(f"{what} must not contain control characters or newlines")
    return value


def systemd_quote(word: str) -> str:
    """Quote one word of an ``Exec*=`` line (systemd's own quoting, not a shell's).

    ``%`` and ``$`` are escaped so systemd expands neither specifiers nor variables.
    """
    _no_control_chars(word, "a unit argument")
    escaped = word.replace("%", "%%").replace("$", "$$")
    if _SAFE.match(word) and "%" not in word:
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_env_file(values: Mapping[str, str], *, header: str) -> str:
    """An ``EnvironmentFile=`` body: one ``KEY="value"`` a line, quoted for systemd."""
    lines = [f"# {ln}" if ln else "#" for ln in header.splitlines()]
    for key, value in values.items():
        if not re.match(r"^[A-Z_][A-Z0-9_]*$", key):
            raise ValueError(f"bad environment variable name {key!r}")
        _no_control_chars(value, key)
        lines.append(f'{key}="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return "\n".join(lines) + "\n"


def render_unit(
    *,
    description: str,
    exec_start: Sequence[str],
    env_file: str,
    stop_timeout: float,
) -> str:
    """The unit that runs the fracctl supervisor (which runs the control daemon).

    ``KillMode=mixed``: systemd sends SIGTERM to the supervisor only, which sends
    ``quit`` and waits; only after ``TimeoutStopSec`` does systemd kill what is left.
    """
    _no_control_chars(description, "the description")
    exec_line = " ".join(systemd_quote(w) for w in exec_start)
    return (
        "[Unit]\n"
        f"Description={description}\n"
        "Documentation=man:nvidia-cuda-mps-control(1)\n"
        "After=nvidia-persistenced.service\n"
        "\n"
        "[Service]\n"
        "Type=simple\n"
        f"EnvironmentFile={systemd_quote(env_file)}\n"
        f"ExecStart={exec_line}\n"
        "KillMode=mixed\n"
        "KillSignal=SIGTERM\n"
        f"TimeoutStopSec={int(stop_timeout)}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )
