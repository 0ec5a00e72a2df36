"""The names the local Flux uses: versions, its namespace, its API resources."""

from __future__ import annotations

from typing import Any

from fracctl.core.kube.resources import HELMCHARTS as HELMCHARTS
from fracctl.core.kube.resources import HELMRELEASES as HELMRELEASES
from fracctl.core.kube.resources import ResourceRef

SOURCE_VERSION = "v1.9.0"  # source-controller (scripts/build-flux.sh)
KUSTOMIZE_VERSION = "v1.9.6"  # kustomize-controller
HELM_VERSION = "v1.6.4"  # helm-controller
NAMESPACE = "flux-system"
SOURCE_API = "source.toolkit.fluxcd.io/v1"
KUSTOMIZE_API = "kustomize.toolkit.fluxcd.io/v1"
GITREPOSITORIES = ResourceRef(
    "source.toolkit.fluxcd.io", "v1", "gitrepositories", "GitRepository", True
)
KUSTOMIZATIONS = ResourceRef(
    "kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization", True
)
HELM_API = "helm.toolkit.fluxcd.io/v2"
PROCESSES = ("helm-controller", "kustomize-controller", "source-controller", "git-server")

Obj = dict[str, Any]
