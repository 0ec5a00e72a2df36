"""Each refusal of the built-in kinds holds through a HelmRelease, nothing changed.

The real helm-controller installs the chart and its upgrade fails (``UpgradeFailed``);
``recreate KIND/NAME --backend flux`` must refuse as it refuses without Helm, leave the
object as it was and the HelmRelease unsuspended, its failed revision the newest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from tests.support.flux_real import RealFlux
from tests.support.helm import find
from tests.support.helm_release_fixtures import RELEASE, HelmShop, helm_shop
from tests.support.helpers import Cluster, run_cli
from tests.support.release_refusals import CASES, Case

pytestmark = pytest.mark.e2e
NO_WAIT = {"disableWait": True}  # a claim that never binds, a Job that never ends


@pytest.fixture
def hshop(cluster: Cluster, tmp_path: Path) -> Iterator[HelmShop]:
    with helm_shop(cluster, tmp_path, find("helm3")) as found:
        yield found


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_kind_refusal_holds_through_a_helmrelease_and_changes_nothing(
    hshop: HelmShop, real_flux: RealFlux, case: Case
) -> None:
    shop = hshop.shop
    first, then = case.objects(shop)
    hshop.commit(*first, message="the release")
    with real_flux.serving_chart(shop.repo, chart=f"./{RELEASE}", release=RELEASE,
                                 target=shop.ns, install=NO_WAIT,
                                 upgrade=NO_WAIT) as served:  # fmt: skip
        hshop.for_flux(served)
        case.settle(shop)
        old = shop.live(*case.api, case.name)
        assert old is not None
        hshop.commit(*then, message="a change helm-controller cannot apply")
        served.reconcile_source()
        hr = served.wait_upgrade_failed()
        failed = hr["status"]["history"][0]["version"]

        r = run_cli("-c", str(shop.config), "recreate", case.target, "-n", shop.ns,
                    "--backend", "flux", "--yes")  # fmt: skip
        assert r.exit_code == ExitCode.FINDING, r.output
        assert case.said in r.stderr, r.stderr
        now = shop.live(*case.api, case.name)
        assert now is not None and now["metadata"]["uid"] == old["metadata"]["uid"]
        hr = served.helm_release()
        assert not (hr.get("spec") or {}).get("suspend"), "left suspended"
        assert hr["status"]["history"][0]["version"] == failed
