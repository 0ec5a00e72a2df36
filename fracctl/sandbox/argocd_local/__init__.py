"""A real Argo CD on loopback beside a control plane: the e2e fixture and the sandbox.

Nothing here is a fake. One upstream ``argocd`` binary (built from its Go module by
``scripts/build-argocd.sh``) runs as four processes, chosen by ``ARGOCD_BINARY_NAME``:
the repo server, the application controller, the ApplicationSet controller (progressive
syncs on) and the API server, with a ``redis-server`` beside them.
``ARGOCD_FAKE_IN_CLUSTER=true`` with ``KUBECONFIG`` makes the in-cluster destination
``https://kubernetes.default.svc`` mean the given control plane.

Accounts: ``admin`` (password in the state dir, used only to mint tokens), a CI account
with exactly ``applications, get`` and ``applications, sync`` on one project, and a
``role:readonly`` viewer. Their tokens are written to ``tokens/<account>`` (mode 0600).
Processes are stopped by the PIDs recorded when they were started, nothing else.

One concern a module: :mod:`.names` (version, namespace, accounts, API resources),
:mod:`.binaries` (finding and building ``argocd`` and ``kustomize``), :mod:`.processes`
(:class:`LocalArgoCD` and starting, waiting for and stopping the processes),
:mod:`.accounts` (settings, RBAC and tokens), :mod:`.applications` (CRDs, AppProjects
and Applications), :mod:`.rest` (the setup's one HTTP call) and :mod:`.launch`
(:func:`start`). Everything is importable from here.
"""

from fracctl.sandbox.argocd_local.applications import (
    application,
    delete_application,
    ensure_project,
    install_crds,
    put_application,
    wait_compared,
)
from fracctl.sandbox.argocd_local.binaries import (
    build,
    cache_dir,
    locate,
    locate_kustomize,
    locate_redis,
)
from fracctl.sandbox.argocd_local.launch import start
from fracctl.sandbox.argocd_local.names import (
    APPLICATIONS,
    APPPROJECTS,
    CI_ACCOUNT,
    CI_ACTIONS,
    CONFIGMAPS,
    IN_CLUSTER,
    NAMESPACE,
    SECRETS,
    VERSION,
    VIEWER_ACCOUNT,
    Obj,
)
from fracctl.sandbox.argocd_local.processes import LocalArgoCD
from fracctl.sandbox.argocd_local.rest import api

__all__ = [
    "APPLICATIONS",
    "APPPROJECTS",
    "CI_ACCOUNT",
    "CI_ACTIONS",
    "CONFIGMAPS",
    "IN_CLUSTER",
    "NAMESPACE",
    "SECRETS",
    "VERSION",
    "VIEWER_ACCOUNT",
    "LocalArgoCD",
    "Obj",
    "api",
    "application",
    "build",
    "cache_dir",
    "delete_application",
    "ensure_project",
    "install_crds",
    "locate",
    "locate_kustomize",
    "locate_redis",
    "put_application",
    "start",
    "wait_compared",
]
