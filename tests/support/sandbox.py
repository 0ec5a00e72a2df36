"""Reading a sandbox that ``fracctl sandbox up`` started, as a test waits on it."""

from __future__ import annotations

import time
from pathlib import Path

from fracctl.errors import ExitCode
from tests.support.helpers import run_cli


def rtx_ready(state: Path, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = run_cli("sandbox", "status", "--state-dir", str(state), "-o", "json")
        assert st.exit_code == ExitCode.OK, st.output
        ready = {n["name"]: n["ready"] for n in st.json["nodes"]}
        if ready["rtx-pro-6000-0"] == "True":
            return st.json["operator_simulation"] == "running"
        time.sleep(0.3)
    return False
