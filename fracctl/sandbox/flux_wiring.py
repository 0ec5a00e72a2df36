"""The real Flux beside a sandbox: starting it, pointing fracctl.yaml at it, its status.

``fracctl sandbox up --flux`` starts a local Flux (:mod:`.flux_local`): source-controller
reads the sandbox's git repository over http (a ``git http-backend`` server on loopback)
and kustomize-controller applies it through the Kustomization ``gpu-fractioning`` in
``flux-system``; fracctl then uses ``recreate.backend: flux``. Flux tries git's selector
at once and fails on the immutable field, as it would in a cluster.
"""

from __future__ import annotations

import re
import time
from typing import Any

from fracctl.adapters.flux import REQUESTED_AT, request_token
from fracctl.adapters.kube import Kube
from fracctl.core.kube.nodes import condition
from fracctl.errors import TimedOut
from fracctl.flows.context import Context
from fracctl.sandbox import flux_local
from fracctl.sandbox.layout import SANDBOX_APP, Sandbox

SOURCE = "gitops"  # the GitRepository's name, and the repository's path on the git server


def start_flux(
    ctx: Context, box: Sandbox, gitops_path: str, *, chart: dict[str, Any] | None = None
) -> flux_local.LocalFlux:
    """Start the real Flux beside the sandbox and point fracctl.yaml at it.

    The controllers are built on first use; the sandbox's git repository is served
    from the state dir; the sandbox's fracctl.yaml gets a ``flux:`` section and
    ``recreate.backend: flux``. With a scenario's operator ``chart``, a HelmRelease
    installs it (not a Kustomization), and git then wants the scenario's selector: with
    the guard installed, helm-controller's upgrade fails at the hook's delete
    (:func:`install_chart`).
    """
    binaries = flux_local.locate() or flux_local.build()
    ctx.info(
        f"starting Flux (source-controller {flux_local.SOURCE_VERSION}, kustomize-controller "
        f"{flux_local.KUSTOMIZE_VERSION}) from {binaries}"
    )
    local = flux_local.start(
        box.flux_dir, kubeconfig=str(box.kubeconfig), binaries=binaries, detach=True
    )
    (local.git_root / SOURCE).symlink_to(box.gitops)
    kube = Kube.connect(kubeconfig=str(box.kubeconfig))
    try:
        source = flux_local.git_repository(SOURCE, local.git_url(SOURCE), interval="1m")
        flux_local.put(kube, flux_local.GITREPOSITORIES, source)
        if chart is not None:
            name = install_chart(box, kube, chart, gitops_path)
        else:
            path = f"./{gitops_path}" if gitops_path else "./"
            ks = flux_local.kustomization(SANDBOX_APP, source=SOURCE, path=path, retryInterval="1m")
            flux_local.put(kube, flux_local.KUSTOMIZATIONS, ks)
            _wait_attempted(kube)
    finally:
        kube.close()
    text = box.config_file.read_text().replace("  backend: apply\n", "  backend: flux\n")
    # The local controllers run without leader election (it needs an in-cluster
    # namespace): each proves itself by handling a reconcile request instead.
    owner = f"  helmrelease: {name}\n" if chart is not None else ""
    text += (
        f"flux:\n  namespace: {flux_local.NAMESPACE}\n  kustomization: {SANDBOX_APP}\n"
        f"{owner}  leases: []\n"
    )
    box.config_file.write_text(text)
    return local


def install_chart(box: Sandbox, kube: Kube, chart: dict[str, Any], folder: str) -> str:
    """A HelmRelease installs the scenario's chart from git; then git wants its change.

    helm-controller tries that commit at once and fails (``UpgradeFailed``): on the
    operator's chart at the hook's delete, the guard installed; on a team's chart at an
    immutable field. The sandbox starts where a team stands after pushing the change.
    Returns the HelmRelease's name: the release's.
    """
    from fracctl.sandbox import chart as charts

    release, namespace = charts.release_of(chart, folder)
    # The first install may meet a busy machine (its wait runs out): helm-controller
    # uninstalls and tries again. Upgrades keep no remediation: their failure is the scenario.
    body = flux_local.helm_release(
        release,
        source=SOURCE,
        chart=f"./{folder}",
        release=release,
        target=namespace,
        install={"remediation": {"retries": 3}},
    )
    flux_local.put(kube, flux_local.HELMRELEASES, body)
    _wait_flux(
        kube,
        flux_local.HELMRELEASES,
        lambda hr: _ready(hr) == "True",
        "install the scenario's chart",
        name=release,
    )
    if charts.want(box, chart, release):
        token = request_token()
        kube.patch(
            flux_local.GITREPOSITORIES,
            SOURCE,
            {"metadata": {"annotations": {REQUESTED_AT: token}}},
            namespace=flux_local.NAMESPACE,
        )
        _wait_flux(
            kube,
            flux_local.HELMRELEASES,
            lambda hr: _ready(hr) == "False",
            "try git's chart",
            name=release,
        )
    return release


def _ready(obj: dict[str, Any]) -> str:
    """Its Ready status for its current generation ("Unknown" until observed)."""
    fresh = (obj.get("status") or {}).get("observedGeneration") == obj["metadata"]["generation"]
    return str((condition(obj, "Ready") or {}).get("status") or "Unknown") if fresh else "Unknown"


def _wait_attempted(kube: Kube) -> None:
    """Until the Kustomization tried its source's commit once (its Ready settled)."""
    _wait_flux(
        kube,
        flux_local.KUSTOMIZATIONS,
        lambda ks: bool((ks.get("status") or {}).get("lastAttemptedRevision")),
        "try the sandbox's repository",
        timeout=60.0,
    )


def _wait_flux(
    kube: Kube, ref: Any, done: Any, what: str, timeout: float = 120.0, name: str = SANDBOX_APP
) -> None:
    """Until the sandbox's Flux object ``name`` of kind ``ref`` is ``done``; TimedOut after."""
    deadline = time.monotonic() + timeout
    while True:
        obj = kube.get(ref, name, flux_local.NAMESPACE)
        if done(obj):
            return
        if time.monotonic() > deadline:
            raise TimedOut(
                f"Flux's {ref.kind} did not {what} in {timeout:.0f}s: "
                f"{(obj.get('status') or {}).get('conditions')}"
            )
        time.sleep(0.3)


def flux_running(box: Sandbox) -> bool:
    """Whether the sandbox's Flux was started and every one of its processes runs."""
    local = flux_local.LocalFlux.load(box.flux_dir)
    return local is not None and local.alive()


def flux_status(box: Sandbox) -> dict[str, Any] | None:
    """The sandbox's Flux for ``status``: the Kustomization, the git URL, the PIDs."""
    local = flux_local.LocalFlux.load(box.flux_dir)
    if local is None:
        return None
    config = box.config_file.read_text() if box.config_file.is_file() else ""
    found = re.search(r"^  helmrelease: (\S+)$", config, re.M)
    owner, name = ("helmrelease", found.group(1)) if found else ("kustomization", SANDBOX_APP)
    return {
        owner: f"{flux_local.NAMESPACE}/{name}",
        "git": local.git_url(SOURCE),
        "running": local.alive(),
        "pids": dict(local.pids),
    }
