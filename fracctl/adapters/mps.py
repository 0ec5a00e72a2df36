"""Talking to ``nvidia-cuda-mps-control``: the daemon process and its control commands.

Commands go to the running daemon the documented way: a client invocation of the same
binary with the command on stdin (``echo get_server_list | nvidia-cuda-mps-control``).
Every process is started from an argument list; no value ever reaches a shell.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fracctl.core.mps import CONTROL_SOCKET, PID_FILE, command_failed
from fracctl.errors import ExternalError


@dataclass(frozen=True)
class Reply:
    """A control command's outcome."""

    command: str
    returncode: int
    output: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """The daemon accepted the command."""
        return not self.timed_out and not command_failed(self.returncode, self.output)

    def describe(self) -> str:
        """One line for logs and errors."""
        if self.timed_out:
            return f"{self.command!r} did not answer in time"
        text = " ".join(self.output.split())[:200] or "no output"
        return f"{self.command!r} failed (exit {self.returncode}): {text}"


class Daemon:
    """A control daemon started by :meth:`MPSControl.start`, in its own process group."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid

    def poll(self) -> int | None:
        """The exit code, or ``None`` while it runs."""
        return self.proc.poll()

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds; the exit code or ``None``."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def group_members(self) -> list[int]:
        """PIDs still in the daemon's process group (its servers, after a crash)."""
        return pids_in_group(self.pid)

    def kill_group(self, *, timeout: float = 5.0) -> list[int]:
        """SIGKILL everything in the daemon's process group and wait until it is gone.

        Returns:
            The PIDs that were signalled.
        """
        members = self.group_members()
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.wait(timeout)
        deadline = time.monotonic() + timeout
        while self.group_members() and time.monotonic() < deadline:
            time.sleep(0.01)  # SIGKILL is delivered asynchronously
        return members

    def close(self) -> None:
        """Release the stdin pipe kept open for the daemon."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass


class Pending:
    """A control command still running (``quit`` blocks while clients run kernels)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def kill(self) -> None:
        """Stop waiting for it."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class MPSControl:
    """The control binary, pointed at one pipe directory."""

    def __init__(self, binary: str, *, env: dict[str, str], pipe_dir: str) -> None:
        self.binary = binary
        self.env = env
        self.pipe_dir = Path(pipe_dir)

    @property
    def socket(self) -> Path:
        """The control socket."""
        return self.pipe_dir / CONTROL_SOCKET

    @property
    def pid_file(self) -> Path:
        """The PID file the daemon writes."""
        return self.pipe_dir / PID_FILE

    def recorded_pid(self) -> int | None:
        """The PID in the daemon's PID file, if any."""
        try:
            text = self.pid_file.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def start(self, argv: list[str]) -> Daemon:
        """Start the daemon in the foreground, in a new process group.

        Its stdin is a pipe held open: a foreground daemon reading commands on stdin
        exits on EOF, which must come only from us.
        """
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=None,
                stderr=None,
                env=self.env,
                start_new_session=True,
            )
        except OSError as e:
            raise ExternalError(f"cannot start {argv[0]}: {e.strerror or e}") from None
        return Daemon(proc)

    def command(self, command: str, *, timeout: float) -> Reply:
        """Send one control command and wait (bounded) for the reply."""
        try:
            p = subprocess.run(
                [self.binary],
                input=(command + "\n").encode(),
                capture_output=True,
                env=self.env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Reply(command, -1, "", timed_out=True)
        except OSError as e:
            raise ExternalError(f"cannot run {self.binary}: {e.strerror or e}") from None
        out = (p.stdout + p.stderr).decode(errors="replace")
        return Reply(command, p.returncode, out)

    def verb(self, args: list[str], *, timeout: float) -> Reply:
        """A protocol 3 module-verb command given as arguments (``namespace list``)."""
        try:
            p = subprocess.run(
                [self.binary, *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=self.env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Reply(" ".join(args), -1, "", timed_out=True)
        except OSError as e:
            raise ExternalError(f"cannot run {self.binary}: {e.strerror or e}") from None
        return Reply(" ".join(args), p.returncode, (p.stdout + p.stderr).decode(errors="replace"))

    def send(self, command: str) -> Pending:
        """Send a command without waiting for the reply (used for ``quit``).

        The client gets its own session: a signal sent to the caller's process group
        (``timeout``, a shell's job control) must not kill it before it delivers.
        """
        try:
            proc = subprocess.Popen(
                [self.binary],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
        except OSError as e:
            raise ExternalError(f"cannot run {self.binary}: {e.strerror or e}") from None
        if proc.stdin is not None:
            try:
                proc.stdin.write((command + "\n").encode())
                proc.stdin.close()
            except OSError:
                pass
        return Pending(proc)

    def remove_stale(self) -> list[str]:
        """Remove a control socket and PID file left by a daemon that no longer runs."""
        removed = []
        for p in (self.socket, self.pid_file):
            try:
                p.unlink()
                removed.append(str(p))
            except FileNotFoundError:
                pass
            except OSError as e:
                raise ExternalError(f"cannot remove stale {p}: {e.strerror or e}") from None
        return removed


def pids_in_group(pgid: int) -> list[int]:
    """Live (non-zombie) PIDs whose process group is ``pgid`` (Linux ``/proc``)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and fields[0] not in ("Z", "X") and fields[2] == str(pgid):
            out.append(int(entry.name))
    return sorted(out)
