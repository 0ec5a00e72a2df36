"""Time and retry pacing: the one clock every wait takes, and the one backoff.

A :class:`Clock` is passed in (``Context.clock``, or a parameter), never read from
``time`` inside a wait, so that tests drive waits with a fake clock.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What waits and leases need from time."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch (for timestamps other processes read)."""
        ...  # pragma: no cover

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, never going back (for deadlines)."""
        ...  # pragma: no cover

    def sleep(self, seconds: float) -> None:
        """Block for a number of seconds."""
        ...  # pragma: no cover


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        """``time.time()``."""
        return time.time()

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """``time.sleep()``."""
        time.sleep(seconds)


class Backoff:
    """Capped exponential delays: ``first``, ``first*factor``, … up to ``cap``.

    :meth:`next` hands out the delays one after another; :meth:`delay` answers for a
    given attempt without changing anything (restart policies count attempts themselves).
    """

    def __init__(self, first: float = 0.25, factor: float = 1.6, cap: float = 5.0) -> None:
        self.first = first
        self.factor = factor
        self.cap = cap
        self.attempt = 0

    def delay(self, attempt: int) -> float:
        """The delay before attempt number ``attempt`` (1-based; 0 before the first)."""
        if attempt < 1:
            return 0.0
        value = float(self.first)
        for _ in range(attempt - 1):
            if value >= self.cap:
                break
            value *= self.factor
        return float(min(self.cap, value))

    def next(self) -> float:
        """The next delay."""
        self.attempt += 1
        return self.delay(self.attempt)

    def reset(self) -> None:
        """Start again from ``first`` (after progress)."""
        self.attempt = 0


def following() -> Backoff:
    """Delays for following an engine's verdict while the nodes come up: 0.1 s, to 0.5 s.

    A recreate's wait for Argo CD's operation or Flux's reconcile runs while the agents
    start; whatever the last delay overshoots the verdict by adds to the time between the
    last ready node and fracctl's return, so it is short (``benchmarks/bench_window.py``).
    """
    return Backoff(first=0.1, factor=1.5, cap=0.5)


def utc_timestamp() -> str:
    """Now, as RFC 3339 UTC to the second (``2026-12-01T10:00:00Z``), as Kubernetes writes it."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
