"""Node checks: the host preflight and the device-memory probe."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from fracctl.adapters.cuda import CudaDriver, CudaError, DeviceInfo
from fracctl.adapters.host import Host
from fracctl.core.mps import (
    LOG_ENV,
    MIB,
    PINNED_ENV,
    PIPE_ENV,
    HostCheck,
    HostFacts,
    MemoryProbeResult,
    PreflightSettings,
    evaluate_preflight,
    parse_pinned_limits,
    pinned_limit_value,
    probe_result,
    probe_steps,
)
from fracctl.errors import ExternalError, UsageError
from fracctl.flows.context import Context

OUT_OF_MEMORY = "CUDA_ERROR_OUT_OF_MEMORY"


def preflight(ctx: Context, *, host: Host | None = None) -> list[HostCheck]:
    """Probe the host (through ``mps.host_root``) and judge it.

    Returns:
        One :class:`HostCheck` per prerequisite; a failing one says what to do.
    """
    cfg = ctx.config.mps
    host = host or Host(cfg.host_root, env=ctx.env)
    try:
        limits = parse_pinned_limits(cfg.pinned_mem_limits)
    except ValueError as e:
        raise UsageError(f"mps.pinned_mem_limits: {e}") from None
    driver, source = host.driver_version()
    binary = host.which(cfg.control_binary)
    facts = HostFacts(
        driver_version=driver,
        driver_source=source,
        control_binary=binary,
        control_help=host.help_text(binary) if binary and cfg.protocol == 3 else None,
        nri_socket=cfg.nri_socket,
        nri_socket_present=host.is_socket(cfg.nri_socket),
        containerd_version=host.containerd_version(),
        containerd_socket=cfg.containerd_socket,
        containerd_socket_present=host.is_socket(cfg.containerd_socket),
        mem_available_mib=host.mem_available_mib(),
        gpus=host.gpus(),
    )
    settings = PreflightSettings(
        protocol=cfg.protocol,
        control_binary=cfg.control_binary,
        pinned_limits=limits,
        denied_products=ctx.config.labels.denied_products,
    )
    return evaluate_preflight(facts, settings)


class Allocator(Protocol):
    """What the probe needs from the driver (the ctypes adapter, or a stand-in)."""

    def open(self, device: int) -> DeviceInfo:
        """Initialise the driver and create a context on ``device``."""

    def alloc(self, nbytes: int) -> int:
        """Allocate; raise :class:`CudaError` on failure."""

    def close(self) -> None:
        """Free everything and destroy the context."""


AllocatorFactory = Callable[[Mapping[str, str]], Allocator]


@dataclass(frozen=True)
class MemoryProbeReport:
    """The memory probe's result with the device it ran on and how it ran."""

    result: MemoryProbeResult
    device: DeviceInfo
    mps_client: bool  # the control socket exists, so the pinned limit applies
    env: dict[str, str]  # the MPS client variables set for the driver


def _load_driver(env: Mapping[str, str]) -> Allocator:
    return CudaDriver.load(env=env)


def probe_memory(
    ctx: Context,
    *,
    limit_mib: int | None,
    step_mib: int,
    device: int = 0,
    allocator: AllocatorFactory | None = None,
) -> MemoryProbeReport:
    """Allocate device memory in steps under a pinned limit and report what fitted.

    The process is an MPS client: ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` is set for it
    before the driver initialises (a client can only lower the server's limit).

    Args:
        ctx: the context.
        limit_mib: the pinned limit; default the configured one for ``device``.
        step_mib: allocation step.
        device: CUDA device ordinal.
        allocator: builds the driver from the environment to apply (tests pass a
            stand-in; default: ctypes on libcuda).

    Returns:
        The result, the device info, whether this process is an MPS client, and the
        environment applied.

    Raises:
        UsageError: no limit given or configured, or a bad size.
        ExternalError: no driver or GPU, or the driver failed other than by running
            out of memory (exit 3).
    """
    cfg = ctx.config.mps
    if limit_mib is None:
        limit_mib = _configured_limit(cfg.pinned_mem_limits, device)
    try:
        steps = probe_steps(limit_mib, step_mib)
    except ValueError as e:
        raise UsageError(str(e)) from None
    pipe_dir = ctx.env.get(PIPE_ENV) or cfg.pipe_dir
    env = {PINNED_ENV: pinned_limit_value({device: limit_mib}), PIPE_ENV: pipe_dir}
    env[LOG_ENV] = ctx.env.get(LOG_ENV) or cfg.log_dir
    mps = ctx.host.is_socket(f"{pipe_dir}/control")
    if not mps:
        ctx.warn(
            f"no MPS control socket in {pipe_dir}: this process is not an MPS client and "
            "the pinned limit will not apply"
        )
    driver = (allocator or _load_driver)(env)
    info, successes, error = _allocate(driver, device, steps, step_mib)
    if error is not None and error != OUT_OF_MEMORY:
        raise ExternalError(
            f"step {successes + 1} ({(successes + 1) * step_mib} MiB) failed with {error}, "
            "not with out-of-memory; the probe cannot tell the limit",
            hint="check the MPS daemon log and the client's environment",
        )
    result = probe_result(
        device=device, limit_mib=limit_mib, step_mib=step_mib, successes=successes, error=error
    )
    return MemoryProbeReport(result, info, mps_client=mps, env=env)


def _configured_limit(items: list[str], device: int) -> int:
    """The configured pinned limit of ``device``, in MiB.

    Raises:
        UsageError: the list is malformed or names no limit for ``device``.
    """
    try:
        limit_mib = parse_pinned_limits(items).get(device)
    except ValueError as e:
        raise UsageError(f"mps.pinned_mem_limits: {e}") from None
    if limit_mib is None:
        raise UsageError(
            f"no pinned memory limit for device {device}: pass --limit (e.g. 4096M) "
            "or set mps.pinned_mem_limits"
        )
    return limit_mib


def _allocate(
    driver: Allocator, device: int, steps: int, step_mib: int
) -> tuple[DeviceInfo, int, str | None]:
    """Open ``device`` and allocate up to ``steps`` steps; the device, successes, error.

    The error is the driver's name for the failing step's error (``None``: none failed).
    The driver is closed whatever happens.

    Raises:
        ExternalError: the device could not be opened (exit 3).
    """
    successes, error = 0, None
    try:
        try:
            info = driver.open(device)
        except CudaError as e:
            raise ExternalError(
                f"CUDA device {device}: {e}",
                hint="check nvidia-smi, CUDA_VISIBLE_DEVICES and the MPS daemon",
            ) from None
        for _ in range(steps):
            try:
                driver.alloc(step_mib * MIB)
            except CudaError as e:
                error = e.name
                break
            successes += 1
    finally:
        driver.close()
    return info, successes, error
