"""The memory probe's arithmetic: how many steps to try and what a run showed.

The probe allocates device memory in steps under a pinned limit; these functions say
how far to go to prove enforcement and summarise the successes and the failing step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryProbeResult:
    """What the memory probe found."""

    device: int
    limit_mib: int
    step_mib: int
    usable_mib: int  # the last successful total
    failed_at_mib: int | None  # the total the failing step would have reached
    failed_step: int | None  # 1-based number of the failing step
    error: str | None  # the driver's error name for the failing step
    enforced: bool  # the limit stopped an allocation at or below it

    @property
    def overhead_mib(self) -> int:
        """Limit minus usable: memory the context itself holds against the limit."""
        return self.limit_mib - self.usable_mib

    def to_dict(self) -> dict[str, object]:
        """Plain data for JSON output."""
        return {
            "device": self.device,
            "limit_mib": self.limit_mib,
            "step_mib": self.step_mib,
            "usable_mib": self.usable_mib,
            "failed_at_mib": self.failed_at_mib,
            "failed_step": self.failed_step,
            "error": self.error,
            "overhead_mib": self.overhead_mib if self.enforced else None,
            "enforced": self.enforced,
        }


def probe_steps(limit_mib: int, step_mib: int) -> int:
    """How many steps to try: enough to pass the limit by one step.

    The extra step proves enforcement: if it also succeeds, the limit is not applied.
    """
    if step_mib <= 0 or limit_mib <= 0:
        raise ValueError("limit and step must be positive")
    return -(-limit_mib // step_mib) + 1


def probe_result(
    *, device: int, limit_mib: int, step_mib: int, successes: int, error: str | None
) -> MemoryProbeResult:
    """Summarise a probe run.

    ``successes`` steps succeeded, then one failed with ``error`` (``None``: none failed).
    """
    usable = successes * step_mib
    if error is None:
        return MemoryProbeResult(device, limit_mib, step_mib, usable, None, None, None, False)
    failed_at = usable + step_mib
    enforced = usable <= limit_mib
    return MemoryProbeResult(
        device, limit_mib, step_mib, usable, failed_at, successes + 1, error, enforced
    )
