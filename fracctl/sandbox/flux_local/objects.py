"""Flux's CRDs, namespace and objects in the control plane: a GitRepository, Kustomizations."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import NAMESPACES, ResourceRef
from fracctl.errors import Conflict, NotFound
from fracctl.sandbox.crds import install_crd_files
from fracctl.sandbox.flux_local.names import (
    HELM_API,
    KUSTOMIZE_API,
    NAMESPACE,
    SOURCE_API,
    Obj,
)


def install(kube: Kube, binaries: Path) -> None:
    """Every CRD the controllers watch (they do not start without them), the namespace.

    A CRD of the same name that exists (a simulation's open one) gets Flux's own spec.
    """
    install_crd_files(kube, sorted((binaries / "crds").glob("*.yaml")), replace=True)
    try:
        kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
    except Conflict:
        pass
    _identity(kube)


ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)
BINDINGS = ResourceRef(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)
#: The controllers whose service accounts Flux binds to cluster-admin.
RECONCILERS = ("kustomize-controller", "helm-controller")


def _identity(kube: Kube) -> None:
    """The reconcilers' service accounts, bound to cluster-admin as Flux installs them.

    Flux's install binds ``cluster-admin`` to its ``kustomize-controller`` and
    ``helm-controller`` service accounts (ClusterRoleBinding
    ``cluster-reconciler-<namespace>``, fluxcd/flux2 ``manifests/rbac/rbac.yaml``).
    helm-controller runs here as its service account (:func:`token_kubeconfig`), so the
    API server sees the username it has in a cluster; kustomize-controller runs with the
    admin kubeconfig, and the binding is what a SubjectAccessReview for it reads.
    """
    for name in RECONCILERS:
        try:
            kube.create(
                ACCOUNTS,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": name, "namespace": NAMESPACE},
                },
            )
        except Conflict:
            pass
    binding: Obj = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"cluster-reconciler-{NAMESPACE}"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "cluster-admin",
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": n, "namespace": NAMESPACE} for n in RECONCILERS
        ],
    }
    try:
        kube.create(BINDINGS, binding)
    except Conflict:
        kube.patch(BINDINGS, binding["metadata"]["name"], {"subjects": binding["subjects"]})


#: How long the token helm-controller runs with lasts (a sandbox outlives a test session).
TOKEN_SECONDS = 7 * 24 * 3600


def token_kubeconfig(kube: Kube, admin_kubeconfig: str, account: str, path: Path) -> Path:
    """A kubeconfig for ``account``'s service account, from a TokenRequest.

    The API server's own service-account authenticator then names the controller
    ``system:serviceaccount:<namespace>:<account>``, as in a cluster.
    """
    import yaml

    token = kube.service_account_token(NAMESPACE, account, TOKEN_SECONDS)
    doc = yaml.safe_load(Path(admin_kubeconfig).read_text())
    doc["users"] = [{"name": account, "user": {"token": token}}]
    for context in doc.get("contexts") or []:
        context["context"]["user"] = account
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(doc, f)
    return path


def git_repository(name: str, url: str, *, branch: str = "main", interval: str = "10m") -> Obj:
    """A GitRepository that follows ``branch`` of ``url``."""
    return {
        "apiVersion": SOURCE_API,
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"url": url, "interval": interval, "ref": {"branch": branch}, "timeout": "20s"},
    }


def kustomization(name: str, *, source: str, path: str, **spec: Any) -> Obj:
    """A Kustomization applying ``path`` of the GitRepository ``source`` (no prune)."""
    return {
        "apiVersion": KUSTOMIZE_API,
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "interval": "10m",
            "retryInterval": "2s",
            "timeout": "30s",
            "path": path,
            "prune": False,
            "sourceRef": {"kind": "GitRepository", "name": source},
            **spec,
        },
    }


def helm_release(
    name: str, *, source: str, chart: str, release: str, target: str, **spec: Any
) -> Obj:
    """A HelmRelease of the chart at ``chart`` of the GitRepository ``source``.

    Installed as ``release`` in namespace ``target``, its record kept there too; no
    remediation unless ``spec`` asks for one.
    """
    return {
        "apiVersion": HELM_API,
        "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "interval": "10m",
            "timeout": "60s",
            "releaseName": release,
            "targetNamespace": target,
            "storageNamespace": target,
            "chart": {
                "spec": {
                    "chart": chart,
                    "sourceRef": {"kind": "GitRepository", "name": source},
                    "reconcileStrategy": "Revision",
                    "interval": "10m",
                }
            },
            **spec,
        },
    }


def put(kube: Kube, ref: ResourceRef, body: Obj) -> Obj:
    """Create ``body``, or replace the spec of the object of that name."""
    name, namespace = body["metadata"]["name"], body["metadata"].get("namespace")
    live = kube.get_or_none(ref, name, namespace)
    if live is None:
        return kube.create(ref, body, namespace=namespace)
    live["spec"] = body["spec"]
    for key in ("labels", "annotations"):
        if key in body["metadata"]:
            live["metadata"][key] = body["metadata"][key]
    return kube.replace(ref, live)


def remove(kube: Kube, ref: ResourceRef, name: str) -> None:
    """Delete a Flux object of ``flux-system`` and wait until its finalizer let it go."""
    try:
        kube.delete(ref, name, NAMESPACE)
    except NotFound:
        return
    deadline = time.monotonic() + 30
    while kube.get_or_none(ref, name, NAMESPACE) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
