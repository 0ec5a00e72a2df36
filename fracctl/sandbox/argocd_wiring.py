"""The real Argo CD beside a sandbox: starting it, pointing fracctl.yaml at it, its status.

``fracctl sandbox up --argocd`` starts a local Argo CD (:mod:`.argocd_local`) that owns
the target through the application ``gpu-fractioning`` in project ``gpu-fractioning``,
deploying the sandbox's git repository; fracctl then uses the CI account's token and
``recreate.backend: argocd``.
"""

from __future__ import annotations

import re
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.flows.context import Context
from fracctl.sandbox import argocd_local
from fracctl.sandbox.layout import SANDBOX_APP, Sandbox

#: The sandbox's own Application beside a fleet: the single-cluster incident on the hub,
#: named apart from the fleet's ApplicationSet (``gpu-fractioning``) and its Applications.
HUB_APP = "hub-incident"


def start_argocd(
    ctx: Context, box: Sandbox, gitops_path: str, *, app: str = SANDBOX_APP
) -> argocd_local.LocalArgoCD:
    """Start the real Argo CD beside the sandbox and point fracctl.yaml at it.

    Argo CD is built on first use. The sandbox's fracctl.yaml gets an ``argocd:``
    section and ``recreate.backend: argocd``.

    The application ``app`` (``gpu-fractioning``; :data:`HUB_APP` beside a fleet, whose
    ApplicationSet has that name) in project ``gpu-fractioning`` deploys the sandbox's
    git repository (``file://``); fracctl uses the CI account's token, which may only get
    and sync applications in that project.
    """
    binaries = argocd_local.locate() or argocd_local.build("build-argocd.sh")
    kustomize = argocd_local.locate_kustomize() or argocd_local.build("build-kustomize.sh")
    ctx.info(f"starting Argo CD {argocd_local.VERSION} from {binaries}")
    local = argocd_local.start(
        box.argocd_dir,
        kubeconfig=str(box.kubeconfig),
        binaries=binaries,
        kustomize=kustomize,
        project=SANDBOX_APP,
        detach=True,
    )
    kube = Kube.connect(kubeconfig=str(box.kubeconfig))
    try:
        argocd_local.put_application(
            kube,
            argocd_local.application(
                app,
                project=SANDBOX_APP,
                repo_url=f"file://{box.gitops}",
                path=gitops_path,
            ),
        )
    finally:
        kube.close()
    argocd_local.wait_compared(local, app)
    text = box.config_file.read_text().replace("  backend: apply\n", "  backend: argocd\n")
    text += (
        "argocd:\n"
        f"  server: {local.address}\n"
        "  plaintext: true\n"
        f"  app: {app}\n"
        f"  token_file: {local.token_file()}\n"
    )
    box.config_file.write_text(text)
    return local


def argocd_running(box: Sandbox) -> bool:
    """Whether the sandbox's Argo CD was started and every one of its processes runs."""
    local = argocd_local.LocalArgoCD.load(box.argocd_dir)
    return local is not None and local.alive()


def argocd_status(box: Sandbox) -> dict[str, Any] | None:
    """The sandbox's Argo CD for ``status``: server, version, app, token file, PIDs."""
    local = argocd_local.LocalArgoCD.load(box.argocd_dir)
    if local is None:
        return None
    return {
        "server": local.url,
        "version": local.version,
        "app": app_of(box),
        "token_file": local.token_file(),
        "running": local.alive(),
        "pids": dict(local.pids),
    }


def app_of(box: Sandbox) -> str:
    """The sandbox's own Application, as its fracctl.yaml names it."""
    text = box.config_file.read_text() if box.config_file.is_file() else ""
    found = re.search(r"^argocd:\n(?:  .*\n)*?  app: (\S+)$", text, re.M)
    return found.group(1) if found else SANDBOX_APP
