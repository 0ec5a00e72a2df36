"""A real Flux on loopback beside a control plane: the e2e fixture and ``sandbox up --flux``.

Nothing here is a fake. source-controller, kustomize-controller and helm-controller,
built from their Go modules by ``scripts/build-flux.sh``, run as processes against the
given control plane
(``KUBECONFIG``, ``RUNTIME_NAMESPACE``; every listener on loopback). Flux clones only
http(s) or ssh, so a small server runs ``git http-backend`` over the repositories below
the state dir's ``git/`` folder. Processes are stopped by the PIDs recorded when they
were started, nothing else.

One concern a module: :mod:`.names`, :mod:`.binaries` (finding and building the
controllers), :mod:`.gitserver` (the git server), :mod:`.processes` (:class:`LocalFlux`,
starting and stopping), :mod:`.objects` (CRDs, GitRepositories and Kustomizations) and
:mod:`.launch` (:func:`start`).
"""

from fracctl.sandbox.flux_local.binaries import build, locate
from fracctl.sandbox.flux_local.launch import start
from fracctl.sandbox.flux_local.names import (
    GITREPOSITORIES,
    HELM_VERSION,
    HELMCHARTS,
    HELMRELEASES,
    KUSTOMIZATIONS,
    KUSTOMIZE_VERSION,
    NAMESPACE,
    SOURCE_VERSION,
)
from fracctl.sandbox.flux_local.objects import (
    git_repository,
    helm_release,
    kustomization,
    put,
    remove,
)
from fracctl.sandbox.flux_local.processes import LocalFlux

__all__ = [
    "GITREPOSITORIES",
    "HELMCHARTS",
    "HELMRELEASES",
    "HELM_VERSION",
    "KUSTOMIZATIONS",
    "KUSTOMIZE_VERSION",
    "NAMESPACE",
    "SOURCE_VERSION",
    "LocalFlux",
    "build",
    "git_repository",
    "helm_release",
    "kustomization",
    "locate",
    "put",
    "remove",
    "start",
]
