"""What the sandbox's groups of processes share: a record of their PIDs, logs and readiness.

A group (the local Argo CD, the local Flux) is a dataclass with a ``state_dir`` and
``pids``, saved as JSON in its state dir so that a later process can find and stop it;
its processes are stopped by the PIDs recorded when they were started, nothing else.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from fracctl.errors import ExternalError, TimedOut
from fracctl.sandbox import controlplane

R = TypeVar("R", bound="Recorded")


class Recorded:
    """Mixin for a dataclass of ``state_dir`` and ``pids``: its record, logs and stop."""

    RECORD: ClassVar[str]  # the record's file name in the state dir
    PROCESSES: ClassVar[tuple[str, ...]]  # in the order they are stopped
    state_dir: str
    pids: dict[str, int]

    def log(self, process: str) -> Path:
        """The log file of one process."""
        return Path(self.state_dir) / "logs" / f"{process}.log"

    def save(self) -> None:
        """Record PIDs and ports in the state dir."""
        controlplane.save_record(self, Path(self.state_dir, self.RECORD))

    @classmethod
    def load(cls: type[R], state_dir: str | Path) -> R | None:
        """The group recorded in ``state_dir``, if any."""
        return controlplane.load_record(cls, Path(state_dir, cls.RECORD))

    def alive(self) -> bool:
        """Whether every recorded process still runs."""
        return bool(self.pids) and all(controlplane.alive(p) for p in self.pids.values())

    def stop(self, *, timeout: float = 15.0) -> None:
        """Stop every process, by its recorded PID."""
        for name in self.PROCESSES:
            pid = self.pids.get(name)
            if pid:
                controlplane.terminate(pid, timeout)

    def tail(self, process: str, lines: int = 3) -> str:
        """The last lines of a process's log, on one line."""
        log = self.log(process)
        text = log.read_text(errors="replace").strip().splitlines()[-lines:] if log.exists() else []
        return " | ".join(text)

    def wait_http(self, process: str, url: str, deadline: float, ok: Any = 200) -> None:
        """Block until ``url`` answers ``ok`` (a status, or a test of one).

        Fails at once when a process of the group exited, naming its last log lines.
        """
        import httpx

        good = ok if callable(ok) else (lambda code: code == ok)
        while True:
            for name, pid in self.pids.items():
                if not controlplane.alive(pid):
                    raise ExternalError(f"{name} exited: {self.tail(name)}")
            try:
                if good(httpx.get(url, timeout=2.0).status_code):
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimedOut(f"{process} not ready at {url}; see {self.log(process)}")
            time.sleep(0.3)
