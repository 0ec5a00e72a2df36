"""``adapters.process.alive``: a running process is alive; a zombie and a reaped one are not."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from fracctl.adapters.process import alive


def test_a_running_child_is_alive_its_zombie_and_its_reaped_pid_are_not() -> None:
    assert alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert alive(child.pid)
    finally:
        child.kill()
    deadline = time.monotonic() + 10
    while alive(child.pid) and time.monotonic() < deadline:  # dead, not yet reaped: a zombie
        time.sleep(0.05)
    assert not alive(child.pid)
    child.wait()
    assert not alive(child.pid)
