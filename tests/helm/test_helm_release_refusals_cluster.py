"""Each refusal of the built-in kinds holds through ``--backend helm``, nothing changed.

The release installed and its upgrade failing on the real helm 4; fracctl must refuse as
it refuses without Helm, leave the object and the release as they were, and run no
``helm upgrade``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from tests.support.helm import find
from tests.support.helm_release_fixtures import HelmShop, helm_shop
from tests.support.helpers import Cluster, run_cli
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
