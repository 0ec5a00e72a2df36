"""When to restart the control daemon after it stopped on its own.

Exponential backoff between restarts, a limit on consecutive failures, and a reset once
a run has lasted long enough to count as stable.
"""

from __future__ import annotations

from dataclasses import dataclass

from fracctl.core.clock import Backoff


@dataclass(frozen=True)
class RestartDecision:
    """What to do after the daemon stopped on its own."""

    restart: bool
    attempt: int  # consecutive failures so far, this one included
    delay: float
    reset: bool  # the run was stable, so earlier failures were forgotten


@dataclass
class RestartPolicy:
    """Exponential backoff with a reset after a stable run and a maximum of retries.

    ``backoff.delay(n)`` is the wait before restart number ``n``.
    """

    backoff: Backoff
    max_retries: int
    stable_threshold: float
    failures: int = 0

    def stable(self, ran_for: float) -> bool:
        """Whether a run this long counts as stable."""
        return ran_for >= self.stable_threshold

    def reset_if_stable(self, ran_for: float) -> bool:
        """Forget earlier failures once the current run is stable; True when it did."""
        if self.failures and self.stable(ran_for):
            self.failures = 0
            return True
        return False

    def failed(self, ran_for: float) -> RestartDecision:
        """Record a failure of a run that lasted ``ran_for`` seconds."""
        reset = self.reset_if_stable(ran_for)
        self.failures += 1
        if self.failures > self.max_retries:
            return RestartDecision(False, self.failures, 0.0, reset)
        delay = self.backoff.delay(self.failures)
        return RestartDecision(True, self.failures, delay, reset)
