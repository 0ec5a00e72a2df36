"""Where a sandbox keeps its state, and the fixed names every part of the sandbox shares.

:class:`Sandbox` maps a state dir to the paths of its control plane, its fracctl.yaml,
its git repository, the operator simulation's PID and ready files, and the Argo CD and
Flux state.
Nothing here starts or reads anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


def tree_root(package: Path = _PACKAGE) -> Path:
    """Where ``examples/`` and ``deploy/`` are, as the sandbox reads them.

    The source checkout the package sits in, else the copy an installed wheel carries
    (``fracctl/_tree``, package data: symbolic links to both in the checkout).
    """
    source = package.parent
    if (source / "examples").is_dir() and (source / "deploy").is_dir():
        return source
    return package / "_tree"


REPO_ROOT = tree_root()


def built(kind: str, needs: tuple[str, ...]) -> Path | None:
    """The newest folder of the parts cache under ``kind`` holding all of ``needs``.

    The cache is ``$FRACCTL_CACHE`` or ``~/.cache/fracctl``, as the build scripts fill it:
    what an installed fracctl, which has no build scripts, starts from.
    """
    root = Path(os.environ.get("FRACCTL_CACHE") or Path.home() / ".cache" / "fracctl") / kind
    found = [f for f in root.glob("*") if all((f / n).exists() for n in needs)]
    return max(found, key=lambda f: f.name) if found else None


DEFAULT_SCENARIO = REPO_ROOT / "examples" / "sandbox" / "incident.yaml"
SANDBOX_APP = "gpu-fractioning"  # the Argo CD application and project of `up --argocd`


@dataclass
class Sandbox:
    """Paths of a sandbox's state."""

    root: Path

    @property
    def cp_dir(self) -> Path:
        """Control-plane state."""
        return self.root / "controlplane"

    @property
    def config_file(self) -> Path:
        """The fracctl.yaml that points at the sandbox."""
        return self.root / "fracctl.yaml"

    @property
    def gitops(self) -> Path:
        """The sandbox's local git repository."""
        return self.root / "gitops"

    @property
    def sim_pid_file(self) -> Path:
        """PID of the operator simulation."""
        return self.root / "operator-sim.pid"

    @property
    def sim_ready_file(self) -> Path:
        """Written by the operator simulation once its first reconcile succeeded."""
        return self.root / "operator-sim.ready"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig."""
        return self.cp_dir / "kubeconfig"

    @property
    def argocd_dir(self) -> Path:
        """State of the real Argo CD started with ``up --argocd``."""
        return self.root / "argocd"

    @property
    def flux_dir(self) -> Path:
        """State of the real Flux started with ``up --flux``."""
        return self.root / "flux"


def default_root(env: dict[str, str]) -> Path:
    """``$FRACCTL_SANDBOX_DIR`` or ``~/.local/state/fracctl/sandbox``."""
    base = env.get("FRACCTL_SANDBOX_DIR") or os.path.join(
        env.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "fracctl", "sandbox"
    )
    return Path(base)
