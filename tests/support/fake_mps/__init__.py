"""Stand-ins for a GPU host's tools, and helpers that wire them into a test.

``nvidia-cuda-mps-control`` and ``systemctl`` here are Python scripts; :func:`wrapper`
writes a small launcher that runs one with the test's interpreter, so neither the
executable bit in the checkout nor the ``python3`` on PATH matters.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl import config as cfg
from fracctl.flows.context import Context

HERE = Path(__file__).resolve().parent
FAKE_CONTROL = HERE / "nvidia-cuda-mps-control"
FAKE_SYSTEMCTL = HERE / "systemctl"


def wrapper(path: Path, script: Path) -> Path:
    """Write an executable at ``path`` that runs ``script`` with this interpreter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    path.chmod(0o755)
    return path


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` (a safety bound, not an assertion)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


@dataclass
class FakeMPS:
    """A stand-in daemon setup in a short temporary folder (Unix socket paths are short)."""

    root: Path
    binary: Path = field(init=False)

    def __post_init__(self) -> None:
        self.binary = wrapper(self.root / "bin" / "nvidia-cuda-mps-control", FAKE_CONTROL)
        self.state.mkdir(parents=True, exist_ok=True)

    @property
    def pipe(self) -> Path:
        return self.root / "pipe"

    @property
    def log(self) -> Path:
        return self.root / "log"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def host(self) -> Path:
        return self.root / "host"

    def behave(self, **kw: Any) -> None:
        (self.state / "behaviour.json").write_text(json.dumps(kw))

    def lines(self, name: str) -> list[str]:
        try:
            return (self.state / name).read_text().splitlines()
        except OSError:
            return []

    def commands(self) -> list[str]:
        return self.lines("commands.log")

    def daemon_pids(self) -> list[int]:
        return [int(x) for x in self.lines("daemons.log")]

    def server_pids(self) -> list[int]:
        return [int(x) for x in self.lines("servers.log")]

    def env(self, **mps: Any) -> dict[str, str]:
        """The process environment a run needs (FRACCTL_MPS_* from ``mps``)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FRACCTL_", "CUDA_MPS_"))}
        env["FAKE_MPS_STATE"] = str(self.state)
        settings = {
            "pipe_dir": str(self.pipe),
            "log_dir": str(self.log),
            "control_binary": str(self.binary),
            "host_root": str(self.host),
            "state_dir": "/var/lib/fracctl",
            **mps,
        }
        for key, value in settings.items():
            if isinstance(value, list):
                value = ",".join(value)
            env[f"FRACCTL_MPS_{key.upper()}"] = (
                str(value).lower() if isinstance(value, bool) else str(value)
            )
        return env

    def context(self, **mps: Any) -> tuple[Context, io.StringIO]:
        """A context whose config comes from :meth:`env`, and its captured stderr."""
        from rich.console import Console

        env = self.env(**mps)
        conf = cfg.load(None, env=env)
        err = io.StringIO()
        out = io.StringIO()

        def no_kube() -> Any:
            raise AssertionError("the node agent must not talk to Kubernetes")

        c = Context(
            config=conf,
            kube_factory=no_kube,
            env=env,
            _out=Console(file=out, width=200, no_color=True, highlight=False),
            _err=Console(file=err, width=400, no_color=True, highlight=False),
        )
        return c, err


@contextmanager
def fake_mps() -> Iterator[FakeMPS]:
    root = Path(tempfile.mkdtemp(prefix="mps", dir="/tmp"))
    fake = FakeMPS(root)
    try:
        yield fake
    finally:
        for pid in fake.daemon_pids() + fake.server_pids():
            if pid_alive(pid):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        shutil.rmtree(root, ignore_errors=True)


def stop_when(
    event: threading.Event, predicate: Callable[[], bool], timeout: float = 20.0
) -> threading.Thread:
    """Set ``event`` once ``predicate`` holds (or after ``timeout``, as a safety net)."""

    def run() -> None:
        wait_for(predicate, timeout)
        event.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
