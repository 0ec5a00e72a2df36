"""Every probe of the GPU host goes through :class:`Host`.

A ``Host`` reads files and runs binaries under a root folder: ``/`` on a real host,
``/host`` in a container with the host mounted there, or a fake tree in the tests.
Binaries are searched on ``PATH`` inside that root and run with argument lists only.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from fracctl.core.mps import parse_containerd_version, parse_driver_version

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Completed:
    """The outcome of one host command."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """Exit status 0 and no timeout."""
        return self.returncode == 0 and not self.timed_out


class Host:
    """Files, sockets, processes and binaries of a host, seen under ``root``."""

    def __init__(
        self, root: str | Path = "/", *, env: Mapping[str, str] | None = None, timeout: float = 10
    ) -> None:
        self.root = Path(root)
        self.env = dict(os.environ if env is None else env)
        self.timeout = timeout

    # --- paths and files ------------------------------------------------------------

    def path(self, host_path: str | Path) -> Path:
        """Where the host's ``host_path`` is on this machine."""
        p = Path(host_path)
        return self.root / p.relative_to("/") if p.is_absolute() else self.root / p

    def read_text(self, host_path: str | Path) -> str | None:
        """A file's text, or ``None`` when it cannot be read."""
        try:
            return self.path(host_path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def is_socket(self, host_path: str | Path) -> bool:
        """Whether ``host_path`` is a Unix socket."""
        try:
            return stat.S_ISSOCK(self.path(host_path).stat().st_mode)
        except OSError:
            return False

    def exists(self, host_path: str | Path) -> bool:
        """Whether anything exists at ``host_path`` (a dangling link counts)."""
        return os.path.lexists(self.path(host_path))

    def sha256(self, host_path: str | Path) -> str | None:
        """The file's SHA-256, or ``None`` when it cannot be read."""
        try:
            return hashlib.sha256(self.path(host_path).read_bytes()).hexdigest()
        except OSError:
            return None

    def write_text(self, host_path: str | Path, text: str, *, mode: int = 0o644) -> list[str]:
        """Write a file atomically; return the host paths of folders it had to create."""
        target = self.path(host_path)
        created = self.make_dirs(Path(host_path).parent)
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        return created

    def make_dirs(self, host_path: str | Path, *, mode: int = 0o755) -> list[str]:
        """``mkdir -p``; return the host paths it created, outermost first."""
        missing: list[Path] = []
        p = Path(host_path)
        while not self.path(p).exists():
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
        for d in reversed(missing):
            self.path(d).mkdir(mode=mode)
        return [str(d) for d in reversed(missing)]

    def remove_file(self, host_path: str | Path) -> bool:
        """Remove a file; False when it was not there."""
        try:
            self.path(host_path).unlink()
            return True
        except FileNotFoundError:
            return False

    def remove_empty_dir(self, host_path: str | Path) -> bool:
        """Remove a folder only if empty; False when absent or not empty."""
        try:
            self.path(host_path).rmdir()
            return True
        except OSError:
            return False

    # --- processes --------------------------------------------------------------------

    def pid_alive(self, pid: int) -> bool:
        """Whether ``pid`` runs on the host (a zombie does not count)."""
        text = self.read_text(f"/proc/{pid}/stat")
        if text is None:
            return False
        state = text.rsplit(")", 1)[-1].split()
        return bool(state) and state[0] not in ("Z", "X")

    def process_name(self, pid: int) -> str | None:
        """The command name of ``pid`` (from ``/proc/<pid>/comm``)."""
        text = self.read_text(f"/proc/{pid}/comm")
        return text.strip() if text else None

    # --- binaries ---------------------------------------------------------------------

    def which(self, name: str) -> str | None:
        """The host path of a binary (``name`` absolute, or searched on ``PATH``)."""
        if "/" in name:
            return name if os.access(self.path(name), os.X_OK) else None
        for folder in (self.env.get("PATH") or DEFAULT_PATH).split(os.pathsep):
            if folder and os.access(self.path(Path(folder) / name), os.X_OK):
                return str(Path(folder) / name)
        return None

    def run(self, argv: list[str], *, timeout: float | None = None) -> Completed | None:
        """Run a host binary (argument list, never a shell); ``None`` when it is missing."""
        binary = self.which(argv[0])
        if binary is None:
            return None
        try:
            p = subprocess.run(
                [str(self.path(binary)), *argv[1:]],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                env=self.env,
                timeout=self.timeout if timeout is None else timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            return Completed(-1, _text(e.stdout), _text(e.stderr), timed_out=True)
        except OSError as e:
            return Completed(-1, "", str(e.strerror or e))
        return Completed(p.returncode, p.stdout, p.stderr)

    # --- GPU host facts -------------------------------------------------------------

    def driver_version(self) -> tuple[str | None, str]:
        """The NVIDIA driver version and where it was read."""
        r = self.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        if r is not None and r.ok:
            v = parse_driver_version(r.stdout)
            if v:
                return v, "nvidia-smi"
        text = self.read_text("/proc/driver/nvidia/version")
        if text:
            v = parse_driver_version(text)
            if v:
                return v, "/proc/driver/nvidia/version"
        return None, ""

    def gpus(self) -> list[tuple[int, str, str]] | None:
        """``(index, name, compute mode)`` per GPU from nvidia-smi; ``None`` if it fails."""
        r = self.run(["nvidia-smi", "--query-gpu=index,name,compute_mode", "--format=csv,noheader"])
        if r is None or not r.ok:
            return None
        out = []
        for line in r.stdout.splitlines():
            cells = [c.strip() for c in line.split(",")]
            if len(cells) >= 3 and cells[0].isdigit():
                out.append((int(cells[0]), cells[1], cells[2]))
        return out

    def containerd_version(self) -> str | None:
        """``containerd --version``, parsed."""
        r = self.run(["containerd", "--version"])
        return parse_containerd_version(r.stdout) if r is not None and r.ok else None

    def mem_available_mib(self) -> int | None:
        """``MemAvailable`` from ``/proc/meminfo`` in MiB."""
        text = self.read_text("/proc/meminfo")
        for line in (text or "").splitlines():
            if line.startswith("MemAvailable:"):
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    return int(parts[1]) // 1024
        return None

    def help_text(self, binary: str) -> str | None:
        """``<binary> --help`` output (stdout and stderr), bounded; ``None`` if missing."""
        r = self.run([binary, "--help"], timeout=5)
        return None if r is None else r.stdout + r.stderr


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")
