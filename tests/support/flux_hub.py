"""A Flux hub's API for tests that write its objects by hand: the session's API server
with Flux's own CRDs (kustomize-controller v1.9.6, source-controller v1.9.0), a namespace
of the test's own, and a label that keeps a session's real Flux off the objects."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import NAMESPACES
from fracctl.errors import NotFound
from fracctl.sandbox.crds import install_crd_files
from tests.support.flux_real import require_built
from tests.support.flux_standin import STANDIN_LABEL
from tests.support.helpers import Cluster, ensure_namespace

CRDS = ("kustomize.toolkit.fluxcd.io_kustomizations", "source.toolkit.fluxcd.io_gitrepositories")
Obj = dict[str, Any]


@contextmanager
def flux_hub(cluster: Cluster) -> Iterator[tuple[Kube, str]]:
    """A client that discovered Flux's CRDs, and a fresh namespace (deleted afterwards).

    A stand-in's open CRD of the same name is given Flux's spec, as the session's real
    Flux does when it starts.
    """
    folder = require_built() / "crds"
    install_crd_files(cluster.kube, [folder / f"{name}.yaml" for name in CRDS], replace=True)
    namespace = f"hub-{secrets.token_hex(3)}"
    ensure_namespace(cluster.kube, namespace)
    kube = Kube.connect(kubeconfig=cluster.kubeconfig)  # its discovery after the CRDs
    try:
        yield kube, namespace
    finally:
        kube.close()
        try:
            cluster.kube.delete(NAMESPACES, namespace)
        except NotFound:
            pass


def left_alone(obj: Obj) -> Obj:
    """``obj`` labelled so that a session's real controllers leave it to the test."""
    labels = obj["metadata"].setdefault("labels", {})
    labels[STANDIN_LABEL] = "true"
    return obj
