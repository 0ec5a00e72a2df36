"""The real helm binaries, 3 and 4, built from their Go modules, for tests that run charts.

``scripts/build-helm.sh`` builds helm 3 (v3.16.4; a helm 3 already on PATH is used as
it is) and ``scripts/build-helm4.sh`` helm 4 (v4.3.2), each into
``$FRACCTL_CACHE/tools/helm-<version>/``; ``make helm`` runs both. The ``helm_bin``
fixture (tests/conftest.py) gives each in turn; a binary that is missing skips the test
locally and fails it under ``CI=true`` (:func:`tests.support.real_parts.unavailable`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.real_parts import unavailable

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "examples" / "charts" / "gpu-fractioning"
# The versions the build scripts default to (FRACCTL_HELM_VERSION, FRACCTL_HELM4_VERSION).
VERSIONS = {"helm3": "v3.16.4", "helm4": "v4.3.2"}
MAJOR = {"helm3": "v3.", "helm4": "v4."}


@dataclass(frozen=True)
class Helm:
    """One real helm binary, run against one kubeconfig."""

    path: str
    major: str  # "helm3" or "helm4"

    def run(
        self, *args: str, kubeconfig: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``helm ARGS`` with its own caches under HOME (the test's), no other config."""
        home = Path(os.environ.get("HOME", "/tmp"))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "KUBECONFIG": kubeconfig,
            "HELM_CACHE_HOME": str(home / ".helm" / "cache"),
            "HELM_CONFIG_HOME": str(home / ".helm" / "config"),
            "HELM_DATA_HOME": str(home / ".helm" / "data"),
        }
        r = subprocess.run(
            [self.path, *args], env=env, capture_output=True, text=True, timeout=300, check=False
        )
        if check and r.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} exited {r.returncode}: {r.stderr}")
        return r


def _cached(major: str) -> Path:
    cache = os.environ.get("FRACCTL_CACHE") or str(Path.home() / ".cache" / "fracctl")
    return Path(cache) / "tools" / f"helm-{VERSIONS[major]}" / "helm"


def find(major: str) -> Helm:
    """The helm binary of ``major`` ("helm3" or "helm4"), or skip (fail under CI=true)."""
    candidates = [_cached(major)]
    on_path = shutil.which("helm")
    if major == "helm3" and on_path:
        candidates.insert(0, Path(on_path))
    for path in candidates:
        if not path.is_file():
            continue
        version = subprocess.run(
            [str(path), "version", "--short"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if version.startswith(MAJOR[major]):
            return Helm(str(path), major)
    script = "build-helm.sh" if major == "helm3" else "build-helm4.sh"
    unavailable(f"no {major} binary: run make helm (scripts/{script})")
