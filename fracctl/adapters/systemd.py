"""systemd: ``systemctl`` calls (argument lists only) and ``systemd-analyze verify``.

Unit and environment files are written through :class:`~fracctl.adapters.host.Host`,
so the whole install can be pointed at a fake root; ``systemctl`` is found on that
root's ``PATH`` as any other host binary.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from fracctl.adapters.host import Completed, Host
from fracctl.errors import ExternalError


class Systemd:
    """``systemctl`` on a host."""

    def __init__(self, host: Host, *, timeout: float = 30) -> None:
        self.host = host
        self.timeout = timeout

    def available(self) -> bool:
        """Whether ``systemctl`` is on the host's PATH."""
        return self.host.which("systemctl") is not None

    def _run(self, *args: str, timeout: float | None = None) -> Completed:
        r = self.host.run(["systemctl", *args], timeout=timeout or self.timeout)
        if r is None:
            raise ExternalError(
                "systemctl not found: --systemd needs a host running systemd "
                "(in a container use --foreground)"
            )
        return r

    def _check(self, *args: str, timeout: float | None = None) -> Completed:
        r = self._run(*args, timeout=timeout)
        if r.timed_out:
            raise ExternalError(f"systemctl {' '.join(args)} did not finish in time")
        if r.returncode != 0:
            detail = " ".join((r.stderr or r.stdout).split())[:300]
            raise ExternalError(
                f"systemctl {' '.join(args)} failed (exit {r.returncode}): {detail}"
            )
        return r

    def daemon_reload(self) -> None:
        """``systemctl daemon-reload``."""
        self._check("daemon-reload")

    def enable(self, unit: str) -> None:
        """``systemctl enable UNIT``."""
        self._check("enable", unit)

    def start(self, unit: str) -> None:
        """``systemctl start UNIT``."""
        self._check("start", unit)

    def stop_and_disable(self, unit: str, *, timeout: float) -> None:
        """``systemctl disable --now UNIT`` (stops it, bounded by ``timeout``)."""
        self._check("disable", "--now", unit, timeout=timeout)

    def is_active(self, unit: str) -> str:
        """``active``, ``inactive``, ``failed``… (``unknown`` when systemctl cannot say)."""
        r = self._run("is-active", unit)
        return (r.stdout.strip().splitlines() or ["unknown"])[0]

    def is_enabled(self, unit: str) -> str:
        """``enabled``, ``disabled``… (``unknown`` when systemctl cannot say)."""
        r = self._run("is-enabled", unit)
        return (r.stdout.strip().splitlines() or ["unknown"])[0]

    def verify(self, unit_file: str) -> Completed | None:
        """``systemd-analyze verify FILE``; ``None`` when systemd-analyze is absent.

        ``--man=no``: whether a ``Documentation=`` man page is installed depends on the
        host, not on the unit.
        """
        return self.host.run(["systemd-analyze", "verify", "--man=no", unit_file], timeout=60)

    def verify_text(self, name: str, text: str) -> Completed | None:
        """Verify unit text before it is installed, from a private temporary copy."""
        if self.host.which("systemd-analyze") is None:
            return None
        with tempfile.TemporaryDirectory(prefix="fracctl-unit-") as tmp:
            path = Path(tmp) / name
            path.write_text(text)
            return self.verify(str(path))
