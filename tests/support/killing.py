"""Kill a ``fracctl`` process (SIGKILL, or a Ctrl-C) at a chosen moment of its run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any


def kill_when(
    args: list[str], env: Mapping[str, str], reached: Callable[[], bool], *, jitter: float,
    what: str, timeout: float = 60, poll: float = 0.005, sig: int = signal.SIGKILL,
    said: list[str] | None = None,
) -> bool:  # fmt: skip
    """Run ``fracctl ARGS``; once ``reached()`` (or the run ended), wait ``jitter`` s and
    send it ``sig``. Returns whether it was still running then.

    SIGKILL goes to fracctl alone (its children live on, as after a crash). SIGINT goes
    to its whole process group, as a terminal's Ctrl-C does (helm gets it too). ``said``
    receives what the run printed (stdout, then stderr).
    """
    proc = subprocess.Popen([sys.executable, "-m", "fracctl", *args], env=dict(env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + timeout
        while not reached() and proc.poll() is None:  # a tight loop: some steps are quick
            assert time.monotonic() < deadline, f"the run never reached {what}"
            time.sleep(poll)
        time.sleep(jitter)
        running = proc.poll() is None
        if sig == signal.SIGKILL:
            proc.send_signal(sig)
        elif running:
            os.killpg(proc.pid, sig)
        proc.wait(timeout=60)
        return running
    finally:
        proc.kill()
        out, err = proc.communicate()
        if said is not None:
            said += [out.decode(errors="replace"), err.decode(errors="replace")]


def seeded_jitter(moment: str, low: float = 0.0, high: float = 0.08) -> float:
    """A delay after ``moment`` from ``FRACCTL_TEST_SEED`` (else a fresh seed), printed so
    that a failing run can be repeated."""
    import os
    import random

    seed = int(os.environ.get("FRACCTL_TEST_SEED", "0")) or random.randrange(1, 10**6)
    jitter = random.Random(seed).uniform(low, high)
    print(f"killed at {moment} + {jitter:.2f}s (FRACCTL_TEST_SEED={seed})")
    return jitter


def kill_then_rerun(
    args: list[str], reached: Callable[[], bool], moment: str, *, timeout: float = 120,
    next_command: Callable[[], list[str] | None] | None = None, sig: int = signal.SIGKILL,
    said: list[str] | None = None, landed: list[bool] | None = None,
) -> Any:  # fmt: skip
    """Kill ``fracctl ARGS`` (``sig``) at ``moment`` (plus a seeded delay), then run it again.

    The lock's lease is 2 s, and the rerun starts once the dead holder's has expired.
    ``next_command`` may name what to run instead (the command fracctl printed as the way
    on, as its arguments); ``landed`` receives whether the signal found the run still
    running. Returns the rerun's result (:func:`tests.support.helpers.run_cli`).
    """
    import os

    from tests.support.helpers import run_cli

    jitter = seeded_jitter(moment)
    env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "2s"}
    said = [] if said is None else said
    mid = kill_when(args, env, reached, jitter=jitter, what=moment, timeout=timeout, sig=sig,
                    said=said)  # fmt: skip
    print("killed mid-run" if mid else "the run had ended before the kill; it said:")
    if not mid:
        print("".join(said)[-3000:])
    if landed is not None:
        landed.append(mid)
    time.sleep(2.5)
    printed = next_command() if next_command else None
    return run_cli(*(printed or args))


def said_next(config: str, backend: str) -> list[str]:
    """The way on that drift (``Next: finish it: …``) and doctor both name while a stopped
    ``recreate KIND/NAME``'s journal is open, as arguments to run."""
    import re
    import shlex

    from fracctl.errors import ExitCode
    from tests.support.helpers import run_cli

    d = run_cli("-c", config, "drift", "--all")
    assert d.exit_code == ExitCode.FINDING, d.output
    found = re.search(r"finish it: (fracctl .*)$", d.output, re.M)
    assert found, d.output
    command = found.group(1).strip()
    doctor = run_cli("-c", config, "doctor")
    assert doctor.exit_code == ExitCode.FINDING, doctor.output
    assert command in " ".join(doctor.output.split()), (command, doctor.output)
    assert f"--backend {backend}" in command and "--yes" in command, command
    return shlex.split(command)[1:]
