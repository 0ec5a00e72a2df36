"""Starting a local Argo CD from scratch: the steps of :func:`start`, in order.

Check the tools it needs, lay out the state dir, install Argo CD's CRDs, namespace and
settings in the control plane, start the processes, wait until they answer, and mint
the tokens. A failure after the first process started stops every one started.
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import NAMESPACES
from fracctl.errors import UsageError
from fracctl.sandbox import controlplane
from fracctl.sandbox.argocd_local.accounts import (
    mint_tokens,
    write_cli,
    write_secret_file,
    write_settings,
)
from fracctl.sandbox.argocd_local.applications import ensure_object, ensure_project, install_crds
from fracctl.sandbox.argocd_local.names import NAMESPACE
from fracctl.sandbox.argocd_local.processes import (
    LocalArgoCD,
    allocate_ports,
    commands,
    launch,
    process_env,
    wait_ready,
)

_STATE_FOLDERS = ("logs", "tokens", "tmp", "tls", "ssh", "gnupg", "gpg-source", "redis")


def start(
    state_dir: str | Path,
    *,
    kubeconfig: str,
    binaries: Path,
    kustomize: Path | None = None,
    project: str = "default",
    detach: bool = False,
    timeout: float = 180.0,
) -> LocalArgoCD:
    """Install Argo CD's CRDs and settings, start its processes, mint the tokens.

    Args:
        state_dir: logs, tokens and working folders (created).
        kubeconfig: the control plane (an admin kubeconfig).
        binaries: the folder holding ``argocd`` and ``crds/``.
        kustomize: the folder holding ``kustomize``, for kustomize sources.
        project: the AppProject the CI account may get and sync in (created).
        detach: give the processes their own session so they outlive the caller.
        timeout: seconds to wait for every process to be ready.
    """
    _check_tools()
    state = _prepare_state(state_dir)
    password = secrets.token_urlsafe(18)
    write_secret_file(state / "admin.password", password)
    _configure_cluster(kubeconfig, binaries, password, project)

    argocd = LocalArgoCD(str(state), kubeconfig, controlplane.free_port(), project=project)
    ports = allocate_ports()
    env = process_env(state, kubeconfig, kustomize)
    argv = commands(state, binaries / "argocd", ports, argocd.port)
    try:
        launch(argocd, argv, env, detach)
        deadline = time.monotonic() + timeout
        wait_ready(argocd, ports, deadline)
        mint_tokens(argocd, password, deadline)
        write_cli(argocd, binaries / "argocd")
    except BaseException:
        argocd.stop()
        raise
    return argocd


def _check_tools() -> None:
    from fracctl.sandbox.argocd_local.binaries import locate_redis

    if locate_redis() is None:
        raise UsageError(
            "redis-server is not installed; Argo CD needs it",
            hint="fetch it into the project's cache: make argocd (scripts/build-redis.sh)",
        )
    if shutil.which("git") is None:
        raise UsageError("git is not installed; Argo CD's repo server needs it")


def _prepare_state(state_dir: str | Path) -> Path:
    """The state dir, absolute, with the folders the processes write to."""
    state = Path(state_dir).resolve()
    for sub in _STATE_FOLDERS:
        (state / sub).mkdir(parents=True, exist_ok=True)
    (state / "gnupg").chmod(0o700)
    return state


def _configure_cluster(kubeconfig: str, binaries: Path, password: str, project: str) -> None:
    """Argo CD's CRDs, its namespace, its settings and the project, in the control plane."""
    kube = Kube.connect(kubeconfig=kubeconfig)
    try:
        install_crds(kube, binaries / "crds")
        ensure_object(
            kube,
            NAMESPACES,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        write_settings(kube, binaries / "argocd", password, project)
        ensure_project(kube, project)
    finally:
        kube.close()
