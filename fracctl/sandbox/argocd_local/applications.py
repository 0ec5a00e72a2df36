"""Argo CD's own objects in the control plane: its CRDs, AppProjects and Applications.

The manifests of an AppProject and an Application deployed to the in-cluster target,
creating or replacing them, removing an Application without cascading to what it
deployed, and waiting until the controller has compared one with git. Also the two
small create-or-keep and create-or-replace steps the settings are written with.
"""

from __future__ import annotations

import time
from pathlib import Path

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import Conflict, NotFound, TimedOut
from fracctl.sandbox.argocd_local.names import (
    APPLICATIONS,
    APPPROJECTS,
    IN_CLUSTER,
    NAMESPACE,
    Obj,
)
from fracctl.sandbox.argocd_local.processes import LocalArgoCD
from fracctl.sandbox.argocd_local.rest import api


def ensure_object(kube: Kube, ref: ResourceRef, body: Obj) -> None:
    """Create ``body`` unless an object of that name exists (which is kept as it is)."""
    try:
        kube.create(ref, body)
    except Conflict:
        pass


def put_object(kube: Kube, ref: ResourceRef, body: Obj) -> None:
    """Create ``body`` (in the namespace it names, if any), or replace the object of that name."""
    live = kube.get_or_none(ref, body["metadata"]["name"], body["metadata"].get("namespace"))
    if live is None:
        kube.create(ref, body)
        return
    body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    kube.replace(ref, body)


def install_crds(kube: Kube, folder: Path, *, timeout: float = 60.0) -> None:
    """Create Argo CD's CRDs (one by one; the folder's kustomization is not used)."""
    from fracctl.sandbox.crds import install_crd_files

    files = [
        folder / f"{name}-crd.yaml" for name in ("application", "appproject", "applicationset")
    ]
    install_crd_files(kube, files, timeout=timeout)


def ensure_project(kube: Kube, name: str) -> None:
    """An AppProject that may deploy anything from anywhere into the in-cluster target."""
    if name == "default":
        return  # argocd-server creates it
    ensure_object(
        kube,
        APPPROJECTS,
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "sourceRepos": ["*"],
                "destinations": [{"server": IN_CLUSTER, "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        },
    )


def application(
    name: str,
    *,
    project: str,
    repo_url: str,
    path: str,
    namespace: str = "default",
    sync_options: list[str] | None = None,
    ignore_differences: list[Obj] | None = None,
) -> Obj:
    """An Application manifest for a git source deployed to the in-cluster target."""
    spec: Obj = {
        "project": project,
        "source": {"repoURL": repo_url, "path": path, "targetRevision": "HEAD"},
        "destination": {"server": IN_CLUSTER, "namespace": namespace},
    }
    if sync_options:
        spec["syncPolicy"] = {"syncOptions": list(sync_options)}
    if ignore_differences:
        spec["ignoreDifferences"] = ignore_differences
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def put_application(kube: Kube, app: Obj) -> None:
    """Create the Application, or replace the spec of the one there."""
    name = app["metadata"]["name"]
    live = kube.get_or_none(APPLICATIONS, name, NAMESPACE)
    if live is None:
        kube.create(APPLICATIONS, app)
        return
    live["spec"] = app["spec"]
    kube.replace(APPLICATIONS, live)


def delete_application(kube: Kube, name: str) -> None:
    """Remove the Application object only (no cascade: its resources stay)."""
    try:
        live = kube.get(APPLICATIONS, name, NAMESPACE)
        if live["metadata"].get("finalizers"):
            kube.patch(APPLICATIONS, name, {"metadata": {"finalizers": None}}, namespace=NAMESPACE)
        kube.delete(APPLICATIONS, name, NAMESPACE)
    except NotFound:
        pass


def wait_compared(argocd: LocalArgoCD, name: str, *, timeout: float = 120.0) -> Obj:
    """Block until the controller has compared application ``name`` with git."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            app: Obj = api(
                argocd.url,
                "GET",
                f"/api/v1/applications/{name}?refresh=normal",
                token=argocd.token("admin"),
            )
        except TimedOut:  # the refresh renders git: on a busy machine, past one call's wait
            if time.monotonic() > deadline:
                raise
            continue
        status = app.get("status") or {}
        if (status.get("sync") or {}).get("status") in ("Synced", "OutOfSync"):
            return app
        if time.monotonic() > deadline:
            raise TimedOut(f"Argo CD never compared application {name} with git")
        time.sleep(0.5)
