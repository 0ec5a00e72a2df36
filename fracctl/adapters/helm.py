"""The helm CLI, run as the user runs it, for ``recreate.backend: helm``.

fracctl runs the real ``helm`` (3 or 4) against the same cluster and identity as itself
(its kubeconfig and context), never a reimplementation: the upgrade that recreates the
config is the chart's own, hooks included. Output is read as JSON (``-o json`` prints the
release helm wrote, or with ``--dry-run`` the one it would write: helm/helm
``pkg/cmd/status.go`` ``statusPrinter.WriteJSON`` encodes the whole release).

A helm started here dies with fracctl (``PR_SET_PDEATHSIG``): a fracctl that is killed
leaves no helm running on the release behind its back, so a release it leaves
``pending-upgrade`` is known to have no writer left (see :mod:`fracctl.flows.engines.helm.backend`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fracctl.errors import ExternalError, UsageError

Obj = dict[str, Any]
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(frozen=True)
class HelmCLI:
    """One helm binary, pointed at fracctl's cluster."""

    binary: str
    kubeconfig: str | None = None
    context: str | None = None

    def _argv(self, *args: str) -> list[str]:
        argv = [self.binary, *args]
        if self.kubeconfig:
            argv += ["--kubeconfig", self.kubeconfig]
        if self.context:
            argv += ["--kube-context", self.context]
        return argv

    def run(
        self,
        *args: str,
        timeout: float,
        what: str,
        started: Callable[[int], None] | None = None,
    ) -> str:
        """Run ``helm args…``; its stdout, or an ExternalError with its last lines.

        ``started`` is told the child's pid as soon as it runs (for the journal).
        """
        argv = self._argv(*args)
        env = {**os.environ, "HELM_NO_PLUGINS": "1"}
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv is a list, no shell
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads hold locks here
            )
        except FileNotFoundError:
            raise UsageError(
                f"helm not found: {self.binary!r}",
                hint="put helm on PATH or set helm.binary in fracctl.yaml",
            ) from None
        except OSError as e:
            raise ExternalError(f"{what}: cannot run {self.binary}: {e.strerror}") from None
        if started is not None:
            started(proc.pid)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ExternalError(f"{what} did not finish in {timeout:.0f}s") from None
        except BaseException:  # Ctrl-C or SIGTERM: helm goes with us, as with a kill
            proc.kill()
            proc.communicate()
            raise
        if proc.returncode != 0:
            lines = [ln.strip() for ln in (err or out).splitlines() if ln.strip()]
            detail = "; ".join(lines[-3:]) if lines else f"exit {proc.returncode}"
            raise ExternalError(f"{what} failed: {detail[:800]}")
        return out

    def version(self) -> str:
        """``v3.16.4`` or ``v4.3.2``: the version helm reports."""
        out = self.run("version", "--template", "{{.Version}}", timeout=30, what="helm version")
        return out.strip()

    def major(self) -> int:
        """Helm's major version (3 or 4)."""
        found = self.version().lstrip("v").split(".", 1)[0]
        if not found.isdigit():
            raise ExternalError(f"{self.binary} reports no helm version: {found!r}")
        return int(found)

    def upgrade(
        self,
        release: str,
        chart: Path,
        *,
        namespace: str,
        values: Sequence[Path] = (),
        dry_run: bool,
        timeout: float,
        wait: bool = False,
        started: Callable[[int], None] | None = None,
    ) -> Obj:
        """``helm upgrade`` of ``release`` to ``chart``, hooks run; the release as JSON.

        With ``dry_run`` it is Helm's ``--dry-run=server``: the chart rendered against the
        cluster (lookups and capabilities as there), nothing written. ``wait`` adds Helm 4's
        ``--wait=watcher``, without which its ``before-hook-creation`` does not wait for
        the hook's delete (see :mod:`fracctl.flows.engines.helm.backend`). Never ``--atomic``
        or ``--cleanup-on-fail``: a rollback would run the hook again with the old
        selector, and a cleanup deletes what helm created.
        """
        args = ["upgrade", release, str(chart), "--namespace", namespace, "-o", "json"]
        for v in values:
            args += ["--values", str(v)]
        if dry_run:
            args.append("--dry-run=server")
        else:
            args += ["--timeout", f"{max(1, int(timeout))}s"]
            if wait:
                args.append("--wait=watcher")
        what = f"helm upgrade{' --dry-run=server' if dry_run else ''} of release {release}"
        out = self.run(*args, timeout=timeout + 30, what=what, started=started)
        try:
            found = json.loads(out[out.index("{") :])
        except ValueError as e:
            raise ExternalError(f"{what} printed no release JSON: {out[:200]!r}") from e
        if not isinstance(found, dict):
            raise ExternalError(f"{what} printed no release JSON")
        return found
