"""Each refusal of the built-in kinds holds through ``--backend helm``, nothing changed.

The release installed and its upgrade failing on the real helm 4; fracctl must refuse as
it refuses without Helm, leave the object and the release as they were, and run no
``helm upgrade``. So must an engine asked for an object another engine owns (a Flux
HelmRelease's, through ``--backend helm``; a helm CLI release's, through ``--backend flux``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from tests.support.helm import find
from tests.support.helm_release_fixtures import RELEASE, HelmShop, helm_shop
from tests.support.helpers import Cluster, run_cli
from tests.support.kinds_fixtures import deployment
from tests.support.release_refusals import CASES, Case


@pytest.fixture
def hshop(cluster: Cluster, tmp_path: Path) -> Iterator[HelmShop]:
    with helm_shop(cluster, tmp_path, find("helm4")) as found:
        yield found


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_kind_refusal_holds_through_helm_and_changes_nothing(hshop: HelmShop, case: Case) -> None:
    shop = hshop.shop
    first, then = case.objects(shop)
    hshop.commit(*first, message="the release")
    hshop.install()
    case.settle(shop)
    old = shop.live(*case.api, case.name)
    assert old is not None
    hshop.commit(*then, message="a change helm upgrade cannot apply")
    assert hshop.upgrade(check=False).returncode != 0, "helm upgrade must fail on it"
    revision = hshop.release().version

    r = run_cli("-c", str(shop.config), "recreate", case.target, "-n", shop.ns,
                "--backend", "helm", "--yes")  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    assert case.said in r.stderr, r.stderr
    now = shop.live(*case.api, case.name)
    assert now is not None and now["metadata"]["uid"] == old["metadata"]["uid"]
    assert hshop.release().version == revision, "no helm upgrade ran"


#: What helm-controller's post-renderer writes on every object of a HelmRelease (beside
#: Helm's own marks, which it writes through the Helm SDK as the helm CLI does).
FLUX_MARKS = {
    "helm.toolkit.fluxcd.io/name": "app",
    "helm.toolkit.fluxcd.io/namespace": "flux-system",
}


def _web(hshop: HelmShop, labels: dict[str, str]) -> str:
    """The release's Deployment web, installed, then git's selector changed; its uid."""
    shop = hshop.shop
    both = {"app": "web", "tier": "front"}
    first, then = deployment({"app": "web"}, both), deployment(both, both)
    for obj in (first, then):
        obj["metadata"]["labels"] = dict(labels)
    hshop.commit(first, message="labels in the template first")
    hshop.install()
    hshop.commit(then, message="the selector second")
    live = shop.live("apps/v1", "Deployment", "web")
    assert live is not None
    return str(live["metadata"]["uid"])


def test_an_object_a_helmrelease_owns_is_refused_by_the_helm_backend(hshop: HelmShop) -> None:
    """``--backend helm`` would upgrade the release behind helm-controller's back."""
    shop = hshop.shop
    uid = _web(hshop, FLUX_MARKS)
    revision = hshop.release().version
    r = run_cli("-c", str(shop.config), "recreate", "deployment/web", "-n", shop.ns,
                "--backend", "helm", "--dry-run")  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    said = " ".join(r.stderr.split())
    assert "is owned by Flux HelmRelease flux-system/app: use --backend flux" in said, said
    assert "nothing changed" in said, said
    assert shop.live("apps/v1", "Deployment", "web")["metadata"]["uid"] == uid
    assert hshop.release().version == revision


def test_an_object_of_a_helm_release_is_refused_by_the_flux_backend(hshop: HelmShop) -> None:
    """``--backend flux`` with ``flux.helmrelease`` set, on an object the helm CLI installed."""
    from types import SimpleNamespace

    shop = hshop.shop
    uid = _web(hshop, {})
    hshop.for_flux(SimpleNamespace(namespace="flux-system", name="app"))
    r = run_cli("-c", str(shop.config), "recreate", "deployment/web", "-n", shop.ns,
                "--backend", "flux", "--dry-run")  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    said = " ".join(r.stderr.split())
    assert f"is owned by Helm release {shop.ns}/{RELEASE}: use --backend helm" in said, said
    assert shop.live("apps/v1", "Deployment", "web")["metadata"]["uid"] == uid
