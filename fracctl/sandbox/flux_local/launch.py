"""Starting a local Flux from scratch: the steps of :func:`start`, in order.

Lay out the state dir, install Flux's CRDs and namespace in the control plane, start the
git server and the three controllers, and wait until they answer. A failure after the
first process started stops every one started.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from fracctl.adapters.kube import Kube
from fracctl.errors import UsageError
from fracctl.sandbox.flux_local import objects
from fracctl.sandbox.flux_local.processes import (
    HELM_KUBECONFIG,
    LocalFlux,
    allocate_ports,
    launch,
    wait_ready,
)

_STATE_FOLDERS = ("logs", "git", "storage", "tmp", "home")


def start(
    state_dir: str | Path,
    *,
    kubeconfig: str,
    binaries: Path,
    detach: bool = False,
    timeout: float = 120.0,
    ignore_label: str = "",
) -> LocalFlux:
    """Install Flux's CRDs, start the git server and the controllers, wait until ready.

    Args:
        state_dir: logs, the served git repositories, the artifact storage (created).
        kubeconfig: the control plane (an admin kubeconfig).
        binaries: the folder holding the controllers and ``crds/``.
        detach: give the processes their own session so they outlive the caller.
        timeout: seconds to wait for every process to be ready.
        ignore_label: the controllers leave objects carrying this label alone
            (``--watch-label-selector=!label``), for a simulation beside them.
    """
    if shutil.which("git") is None:
        raise UsageError("git is not installed; the local git server needs it")
    state = Path(state_dir).resolve()
    for sub in _STATE_FOLDERS:
        (state / sub).mkdir(parents=True, exist_ok=True)
    kube = Kube.connect(kubeconfig=kubeconfig)
    try:
        objects.install(kube, binaries)
        objects.token_kubeconfig(kube, kubeconfig, "helm-controller", state / HELM_KUBECONFIG)
    finally:
        kube.close()
    flux = LocalFlux(str(state), kubeconfig, ports=allocate_ports(), ignore_label=ignore_label)
    try:
        launch(flux, binaries, detach)
        wait_ready(flux, time.monotonic() + timeout)
    except BaseException:
        flux.stop()
        raise
    return flux
