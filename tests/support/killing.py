"""SIGKILL a ``fracctl`` process at a chosen moment of its run (plus a seeded delay)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping


def kill_when(
    args: list[str], env: Mapping[str, str], reached: Callable[[], bool], *, jitter: float,
    what: str, timeout: float = 60, poll: float = 0.005,
) -> bool:  # fmt: skip
    """Run ``fracctl ARGS``; once ``reached()`` (or the run ended), wait ``jitter`` s and
    SIGKILL it. Returns whether it was still running when killed."""
    proc = subprocess.Popen([sys.executable, "-m", "fracctl", *args], env=dict(env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + timeout
        while not reached() and proc.poll() is None:  # a tight loop: some steps are quick
            assert time.monotonic() < deadline, f"the run never reached {what}"
            time.sleep(poll)
        time.sleep(jitter)
        running = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        return running
    finally:
        proc.kill()
        proc.communicate()
