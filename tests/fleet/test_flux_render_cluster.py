"""``fracctl fleet render --flux``'s objects as the real kube-apiserver with Flux's own CRDs
(source-controller v1.9.0, kustomize-controller v1.9.6) takes them: a server-side dry run,
strict field validation (a field the CRD does not know is refused, not dropped)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core import flux_fleet as ff
from fracctl.errors import ApiError, Invalid
from fracctl.sandbox.crds import install_crd_files
from fracctl.sandbox.flux_local import GITREPOSITORIES, KUSTOMIZATIONS, NAMESPACE
from tests.fleet.test_flux_render import MEMBERS, URL
from tests.support.flux_real import require_built
from tests.support.helpers import Cluster, ensure_namespace

Obj = dict[str, Any]
CRDS = ("kustomize.toolkit.fluxcd.io_kustomizations", "source.toolkit.fluxcd.io_gitrepositories")


@pytest.fixture
def hub(cluster: Cluster) -> Iterator[Kube]:
    """The session's API server with Flux's real CRDs (as the session's real Flux installs
    them: a stand-in's open CRD of the same name is given Flux's spec)."""
    folder = require_built() / "crds"
    install_crd_files(cluster.kube, [folder / f"{name}.yaml" for name in CRDS], replace=True)
    ensure_namespace(cluster.kube, NAMESPACE)
    kube = Kube.connect(kubeconfig=cluster.kubeconfig)  # discovery after the CRDs
    try:
        yield kube
    finally:
        kube.close()


def dry_run(kube: Kube, obj: Obj) -> Obj:
    ref = GITREPOSITORIES if obj["kind"] == "GitRepository" else KUSTOMIZATIONS
    query = {"dryRun": "All", "fieldValidation": "Strict", "fieldManager": "fracctl"}
    return kube.request("POST", ref.path(namespace=NAMESPACE), body=obj, query=query)


def test_every_rendered_object_passes_a_strict_server_side_dry_run(hub: Kube) -> None:
    objs = ff.render(MEMBERS, ff.RenderOptions(url=URL))
    assert [o["kind"] for o in objs].count("Kustomization") == 3 * len(MEMBERS)
    for obj in objs:
        stored = dry_run(hub, obj)
        # Every field kept as written (defaults may be added beside them).
        assert {k: stored["spec"][k] for k in obj["spec"]} == obj["spec"], obj["metadata"]
        assert stored["metadata"]["labels"] == obj["metadata"]["labels"]


def test_the_crds_are_fluxs_own_not_an_open_stand_in(hub: Kube) -> None:
    (_, ks, *_) = ff.render(MEMBERS, ff.RenderOptions(url=URL))
    bad = {**ks, "spec": {**ks["spec"], "timeout": "twenty minutes"}}
    with pytest.raises(Invalid, match="timeout"):
        dry_run(hub, bad)
    unknown = {**ks, "spec": {**ks["spec"], "forced": True}}
    with pytest.raises(ApiError, match="unknown field.*forced"):
        dry_run(hub, unknown)
