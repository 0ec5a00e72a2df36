"""The local Flux's processes: the three controllers and the git server, started and stopped.

:class:`LocalFlux` is the record of a started one: its state dir, ports and PIDs, saved in
the state dir so that a later process can find and stop it. Processes are stopped by the
PIDs recorded when they were started, nothing else.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from fracctl.errors import ExternalError
from fracctl.sandbox import controlplane
from fracctl.sandbox.flux_local.names import NAMESPACE, PROCESSES
from fracctl.sandbox.recorded import Recorded


@dataclass
class LocalFlux(Recorded):
    """A running (or recorded) local Flux: source-, kustomize- and helm-controller, git."""

    RECORD: ClassVar[str] = "flux.json"
    PROCESSES: ClassVar[tuple[str, ...]] = PROCESSES

    state_dir: str
    kubeconfig: str
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    namespace: str = NAMESPACE
    ignore_label: str = ""  # objects with this label are left to something else

    @property
    def git_root(self) -> Path:
        """The folder whose repositories the git server serves."""
        return Path(self.state_dir) / "git"

    def git_url(self, repo: str) -> str:
        """The http URL of a repository below :attr:`git_root` (its relative path)."""
        return f"http://127.0.0.1:{self.ports['git']}/{repo}"


def allocate_ports() -> dict[str, int]:
    """A distinct loopback port for each listener (metrics are switched off)."""
    return controlplane.free_ports(("git", "storage", "source-health", "ks-health", "helm-health"))


def commands(flux: LocalFlux, binaries: Path) -> dict[str, list[str]]:
    """Each process's command line, every listener on loopback."""
    p = flux.ports
    storage = Path(flux.state_dir) / "storage"
    watch = [f"--watch-label-selector=!{flux.ignore_label}"] if flux.ignore_label else []
    return {
        "git-server": [
            sys.executable,
            "-m",
            "fracctl.sandbox.flux_local.gitserver",
            str(flux.git_root),
            str(p["git"]),
        ],
        "source-controller": [
            str(binaries / "source-controller"),
            f"--storage-path={storage}",
            f"--storage-addr=127.0.0.1:{p['storage']}",
            f"--storage-adv-addr=127.0.0.1:{p['storage']}",
            "--metrics-addr=0",  # no metrics server: one listener fewer to collide
            f"--health-addr=127.0.0.1:{p['source-health']}",
            "--requeue-dependency=2s",
            *watch,
        ],
        "kustomize-controller": [
            str(binaries / "kustomize-controller"),
            "--metrics-addr=0",
            f"--health-addr=127.0.0.1:{p['ks-health']}",
            "--requeue-dependency=2s",
            *watch,
        ],
        "helm-controller": [
            str(binaries / "helm-controller"),
            "--metrics-addr=0",
            f"--health-addr=127.0.0.1:{p['helm-health']}",
            "--requeue-dependency=2s",
            "--graceful-shutdown-timeout=5s",
            *watch,
        ],
    }


def process_env(flux: LocalFlux) -> dict[str, str]:
    """The controllers' environment: the control plane and their namespace, nothing else."""
    tmp = Path(flux.state_dir) / "tmp"
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(Path(flux.state_dir) / "home"),
        "TMPDIR": str(tmp),
        "KUBECONFIG": flux.kubeconfig,
        "RUNTIME_NAMESPACE": flux.namespace,
    }


#: helm-controller's kubeconfig in the state dir: its service account's token.
HELM_KUBECONFIG = "helm-controller.kubeconfig"


def launch(flux: LocalFlux, binaries: Path, detach: bool) -> None:
    """Spawn the git server, then source-controller, kustomize- and helm-controller.

    helm-controller runs as its own service account where its kubeconfig was written
    (:func:`fracctl.sandbox.flux_local.objects.token_kubeconfig`).
    """
    argv = commands(flux, binaries)
    env = process_env(flux)
    own = Path(flux.state_dir) / HELM_KUBECONFIG
    for name in reversed(PROCESSES):
        mine = env
        if name == "helm-controller" and own.is_file():
            mine = {**env, "KUBECONFIG": str(own)}
        with open(flux.log(name), "ab") as log:
            proc = controlplane.spawn(argv[name], log, detach, env=mine)
        flux.pids[name] = proc.pid
        flux.save()


def wait_ready(flux: LocalFlux, deadline: float) -> None:
    """Block until every controller answers its readiness probe and git answers."""
    p = flux.ports
    for name, url in (
        ("git-server", f"http://127.0.0.1:{p['git']}/"),
        ("source-controller", f"http://127.0.0.1:{p['source-health']}/readyz"),
        ("kustomize-controller", f"http://127.0.0.1:{p['ks-health']}/readyz"),
        ("helm-controller", f"http://127.0.0.1:{p['helm-health']}/readyz"),
    ):
        flux.wait_http(name, url, deadline, ok=lambda code: code < 500)
    # A controller answers its probe before its manager has opened every listener, and
    # exits if one fails: ready means still running a moment later.
    time.sleep(1.0)
    for name, pid in flux.pids.items():
        if not controlplane.alive(pid):
            raise ExternalError(f"{name} exited after it was ready: {flux.tail(name)}")
