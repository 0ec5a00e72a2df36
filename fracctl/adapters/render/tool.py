"""Running a render tool (kustomize, kubectl, helm) with a time limit and one-line errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fracctl.errors import ExternalError


def run_tool(argv: list[str], cwd: Path, what: str, timeout: float) -> str:
    """Run a rendering tool; its stdout, or a clear error naming ``what`` failed."""
    try:
        proc = subprocess.run(
            argv,
            cwd=str(cwd),
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            env={**os.environ, "HELM_NO_PLUGINS": "1"},
        )
    except subprocess.TimeoutExpired:
        raise ExternalError(f"{what} did not finish in {timeout:.0f}s") from None
    except OSError as e:
        raise ExternalError(f"{what}: cannot run {argv[0]}: {e.strerror}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        detail = "; ".join(lines[-3:]) if lines else f"exit {proc.returncode}"
        raise ExternalError(f"{what} failed: {detail[:800]}")
    return proc.stdout
