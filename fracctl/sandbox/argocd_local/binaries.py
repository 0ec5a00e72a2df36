"""Finding and building the binaries the local Argo CD runs: ``argocd``, ``kustomize``, redis.

The build scripts in ``scripts/`` cache what they build under ``$FRACCTL_CACHE`` (or
``~/.cache/fracctl``); :func:`locate`, :func:`locate_kustomize` and :func:`locate_redis`
look there (and on ``PATH`` for kustomize and redis-server) without building, and
:func:`build` runs a script, which builds only when its cache is empty.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from fracctl.errors import ExternalError, UsageError
from fracctl.sandbox.argocd_local.names import VERSION


def cache_dir(env: dict[str, str] | None = None) -> Path:
    """``$FRACCTL_CACHE`` or ``~/.cache/fracctl``, as the build scripts use it."""
    env = dict(os.environ) if env is None else env
    if env.get("FRACCTL_CACHE"):
        return Path(env["FRACCTL_CACHE"])
    return Path(env.get("HOME") or Path.home()) / ".cache" / "fracctl"


def locate(env: dict[str, str] | None = None) -> Path | None:
    """The folder holding a built ``argocd`` and its ``crds/``, without building."""
    env = dict(os.environ) if env is None else env
    folder = Path(env.get("FRACCTL_ARGOCD_DIR") or cache_dir(env) / "argocd" / VERSION)
    if (folder / "argocd").is_file() and (folder / "crds" / "application-crd.yaml").is_file():
        return folder
    return None


def locate_kustomize(env: dict[str, str] | None = None) -> Path | None:
    """The folder holding ``kustomize``: on PATH, else the build cache; None if neither."""
    env = dict(os.environ) if env is None else env
    found = shutil.which("kustomize", path=env.get("PATH"))
    if found:
        return Path(found).parent
    tools = cache_dir(env) / "tools"
    for folder in sorted(tools.glob("kustomize-*"), reverse=True):
        if (folder / "kustomize").is_file():
            return folder
    return None


def locate_redis(env: dict[str, str] | None = None) -> Path | None:
    """``redis-server``: on PATH, else the one ``scripts/build-redis.sh`` cached; or None."""
    env = dict(os.environ) if env is None else env
    found = shutil.which("redis-server", path=env.get("PATH"))
    if found:
        return Path(found)
    for folder in sorted((cache_dir(env) / "tools").glob("redis-*"), reverse=True):
        if (folder / "redis-server").is_file():
            return folder / "redis-server"
    return None


def build(script: str, repo_root: Path | None = None) -> Path:
    """Run ``scripts/<script>`` (which builds only when its cache is empty); its folder."""
    from fracctl.sandbox.layout import REPO_ROOT  # the checkout, or an installed copy

    roots = [r for r in (repo_root, REPO_ROOT) if r]
    for root in roots:
        path = root / "scripts" / script
        if path.is_file():
            break
    else:
        raise UsageError(f"scripts/{script} not found: run from a fracctl source checkout")
    try:
        out = subprocess.run(
            ["bash", str(path)], check=True, stdout=subprocess.PIPE, text=True
        ).stdout
    except subprocess.CalledProcessError as e:
        raise ExternalError(f"scripts/{script} failed (exit {e.returncode})") from None
    return Path(out.strip().splitlines()[-1])
