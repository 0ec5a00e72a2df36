"""Finding and building the Flux controllers (``scripts/build-flux.sh`` caches them)."""

from __future__ import annotations

import os
from pathlib import Path

from fracctl.sandbox.argocd_local.binaries import build as run_build_script
from fracctl.sandbox.argocd_local.binaries import cache_dir
from fracctl.sandbox.flux_local.names import HELM_VERSION, KUSTOMIZE_VERSION, SOURCE_VERSION

FOLDER = f"source-{SOURCE_VERSION}-kustomize-{KUSTOMIZE_VERSION}-helm-{HELM_VERSION}"
_MARKER = "crds/helm.toolkit.fluxcd.io_helmreleases.yaml"


def locate(env: dict[str, str] | None = None) -> Path | None:
    """The folder holding the three controllers and their ``crds/``, without building."""
    env = dict(os.environ) if env is None else env
    folder = Path(env.get("FRACCTL_FLUX_DIR") or cache_dir(env) / "flux" / FOLDER)
    binaries = ("source-controller", "kustomize-controller", "helm-controller")
    if all((folder / b).is_file() for b in binaries) and (folder / _MARKER).is_file():
        return folder
    return None


def build(repo_root: Path | None = None) -> Path:
    """Build the controllers from their Go modules (only when the cache is empty)."""
    return run_build_script("build-flux.sh", repo_root)
