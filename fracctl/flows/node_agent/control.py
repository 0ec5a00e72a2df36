"""What every node-agent operation starts from: the pinned limits and the control binary.

The configured pinned-memory limits, parsed by the core rules, and the
``nvidia-cuda-mps-control`` binary resolved on this machine's PATH and pointed at the
configured pipe and log folders.
"""

from __future__ import annotations

import os

from fracctl.adapters.mps import MPSControl
from fracctl.config import MPSConfig
from fracctl.core.mps import daemon_env, parse_pinned_limits
from fracctl.errors import ExternalError, UsageError
from fracctl.flows.context import Context


def pinned_limits(cfg: MPSConfig) -> dict[int, int]:
    """``mps.pinned_mem_limits`` as device -> MiB.

    Raises:
        UsageError: the list is malformed.
    """
    try:
        return parse_pinned_limits(cfg.pinned_mem_limits)
    except ValueError as e:
        raise UsageError(f"mps.pinned_mem_limits: {e}") from None


def control_for(ctx: Context) -> MPSControl:
    """The control binary, resolved on this machine's PATH, pointed at the pipe dir."""
    cfg = ctx.config.mps
    binary = ctx.host.which(cfg.control_binary)
    if binary is None:
        raise ExternalError(
            f"{cfg.control_binary} not found on PATH",
            hint="install the NVIDIA driver's compute utilities or set mps.control_binary",
        )
    env = daemon_env(ctx.env, pipe_dir=cfg.pipe_dir, log_dir=cfg.log_dir)
    return MPSControl(os.path.abspath(binary), env=env, pipe_dir=cfg.pipe_dir)
