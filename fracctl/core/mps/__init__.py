"""Pure decisions for the node agent, one concern a module, every public name here too.

The daemon's arguments, environment and output (``protocol``), sizes and pinned limits
(``limits``), the restart backoff policy (``restart``), systemd unit rendering
(``unit``), host rules and preflight evaluation (``host_rules``) and the memory-probe
arithmetic (``probe``). Nothing here touches the host: facts come in as plain values,
decisions go out.
"""

from __future__ import annotations

from fracctl.core.mps.host_rules import (
    CONTAINERD_MIN,
    HOST_MIB_PER_GPU,
    PROTOCOL3_DRIVER,
    HostCheck,
    HostFacts,
    PreflightSettings,
    evaluate_preflight,
    parse_containerd_version,
    parse_driver_version,
    version_tuple,
)
from fracctl.core.mps.limits import MIB, parse_mib, parse_pinned_limits, pinned_limit_value
from fracctl.core.mps.probe import MemoryProbeResult, probe_result, probe_steps
from fracctl.core.mps.protocol import (
    CONTROL_SOCKET,
    HEALTH_COMMAND,
    LOG_ENV,
    PID_FILE,
    PINNED_ENV,
    PIPE_ENV,
    PROTOCOL_ENV,
    THREAD_ENV,
    command_failed,
    daemon_argv,
    daemon_env,
    default_commands,
    parse_namespaces,
    parse_percentage,
    parse_pids,
)
from fracctl.core.mps.restart import RestartDecision, RestartPolicy
from fracctl.core.mps.unit import render_env_file, render_unit, systemd_quote

__all__ = [
    "CONTAINERD_MIN",
    "CONTROL_SOCKET",
    "HEALTH_COMMAND",
    "HOST_MIB_PER_GPU",
    "LOG_ENV",
    "MIB",
    "PID_FILE",
    "PINNED_ENV",
    "PIPE_ENV",
    "PROTOCOL3_DRIVER",
    "PROTOCOL_ENV",
    "THREAD_ENV",
    "HostCheck",
    "HostFacts",
    "MemoryProbeResult",
    "PreflightSettings",
    "RestartDecision",
    "RestartPolicy",
    "command_failed",
    "daemon_argv",
    "daemon_env",
    "default_commands",
    "evaluate_preflight",
    "parse_containerd_version",
    "parse_driver_version",
    "parse_mib",
    "parse_namespaces",
    "parse_percentage",
    "parse_pids",
    "parse_pinned_limits",
    "pinned_limit_value",
    "probe_result",
    "probe_steps",
    "render_env_file",
    "render_unit",
    "systemd_quote",
    "version_tuple",
]
