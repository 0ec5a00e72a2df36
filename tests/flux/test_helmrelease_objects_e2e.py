"""``recreate KIND/NAME --backend flux`` for objects of a HelmRelease, on the real Flux.

source-controller v1.9.0 builds the chart from the test's git repository, the real
helm-controller v1.6.4 installs and upgrades it; the StatefulSet, Deployment, Job and
garbage-collector controllers are the real ones, KWOK plays the kubelets.
"""

from __future__ import annotations

import json
import shlex
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.errors import ExitCode
from tests.support.flux_real import RealFlux, ServedChart, ready
from tests.support.helm import find
from tests.support.helm_release_fixtures import RELEASE, HelmShop, helm_shop
from tests.support.helpers import Cluster, run_cli
from tests.support.killing import kill_then_rerun, said_next
from tests.support.kinds_fixtures import (
    PVCS,
    Shop,
    controller_of,
    deployment,
    identity,
    job,
    job_done,
    statefulset,
    wait_for,
)

Obj = dict[str, Any]
pytestmark = pytest.mark.e2e


@pytest.fixture
def hshop(cluster: Cluster, tmp_path: Path) -> Iterator[HelmShop]:
    with helm_shop(cluster, tmp_path, find("helm3")) as found:
        yield found


def recreate(h: HelmShop, obj: str, *more: str) -> Any:
    return run_cli("-c", str(h.shop.config), "recreate", obj, "-n", h.shop.ns, "--backend",
                   "flux", *more)  # fmt: skip


def stalled(h: HelmShop, served: ServedChart, *objects: Obj) -> Obj:
    """Commit ``objects``; the HelmRelease tries them and fails: UpgradeFailed."""
    h.commit(*objects, message="an immutable change")
    served.reconcile_source()
    return served.wait_upgrade_failed()


def _not_suspended(served: ServedChart) -> None:
    assert not (served.helm_release().get("spec") or {}).get("suspend"), "left suspended"


def test_a_statefulset_of_a_stalled_helmrelease_is_recreated_and_the_release_is_ready(
    hshop: HelmShop, real_flux: RealFlux
) -> None:
    shop = hshop.shop
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    hshop.commit(statefulset(shop), message="db")
    with real_flux.serving_chart(shop.repo, chart=f"./{RELEASE}", release=RELEASE,
                                 target=shop.ns) as served:  # fmt: skip
        hshop.for_flux(served)
        before = identity(shop.running(2))
        old = shop.live("apps/v1", "StatefulSet", "db")
        changed = statefulset(shop, size="2Gi")
        changed["spec"]["podManagementPolicy"] = "Parallel"
        hr = stalled(hshop, served, changed)
        assert "server-side apply failed" in ready(hr)["message"]
        drift = run_cli("-c", str(shop.config), "drift", "--all")
        assert drift.exit_code == ExitCode.FINDING, drift.output
        assert "--backend flux runs the orphan-and-adopt procedure" in drift.stdout
        stuck = f"Flux HelmRelease flux-system/{served.name}, Ready=False, stuck: UpgradeFailed"
        assert stuck in drift.stdout, drift.stdout

        plan = recreate(hshop, "statefulset/db", "--dry-run")
        assert plan.exit_code == ExitCode.OK, plan.output
        assert "helm-controller rendered StatefulSet/" in plan.output
        assert f"suspends HelmRelease flux-system/{served.name}" in plan.output

        r = recreate(hshop, "statefulset/db", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        new = shop.live("apps/v1", "StatefulSet", "db")
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        assert new["spec"]["podManagementPolicy"] == "Parallel"
        pods = shop.pods()
        assert identity(pods) == before
        assert {controller_of(p) for p in pods.values()} == {new["metadata"]["uid"]}
        for claim in ("data-db-0", "data-db-1"):
            claimed = shop.kube.get(PVCS, claim, shop.ns)["spec"]["resources"]["requests"]
            assert claimed["storage"] == "2Gi"
        hr = served.helm_release()
        assert ready(hr)["status"] == "True", hr.get("status")
        assert hr["status"]["history"][0]["status"] == "deployed"
        assert hr["status"]["history"][0]["version"] == 3
        assert hshop.release().status == "deployed"
        _not_suspended(served)
        assert f"Flux HelmRelease flux-system/{served.name} is Ready" in r.output


def test_a_deployment_selector_of_a_helmrelease_is_recreated_by_adoption(
    hshop: HelmShop, real_flux: RealFlux
) -> None:
    shop = hshop.shop
    both = {"app": "web", "tier": "front"}
    hshop.commit(deployment({"app": "web"}, both))
    with real_flux.serving_chart(shop.repo, chart=f"./{RELEASE}", release=RELEASE,
                                 target=shop.ns) as served:  # fmt: skip
        hshop.for_flux(served)
        before = identity(shop.running(2))
        stalled(hshop, served, deployment(both, both))
        r = recreate(hshop, "deployment/web", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        new = shop.live("apps/v1", "Deployment", "web")
        assert new["spec"]["selector"] == {"matchLabels": both}
        assert not new["spec"].get("paused")
        assert identity(shop.pods()) == before
        assert ready(served.helm_release())["status"] == "True"
        _not_suspended(served)


def test_a_job_of_a_helmrelease_runs_again(hshop: HelmShop, real_flux: RealFlux) -> None:
    shop = hshop.shop
    hshop.commit(job("registry.invalid/m:1"))
    with real_flux.serving_chart(shop.repo, chart=f"./{RELEASE}", release=RELEASE,
                                 target=shop.ns, install={"disableWait": True},
                                 upgrade={"disableWait": True}) as served:  # fmt: skip
        hshop.for_flux(served)
        wait_for(lambda: job_done(shop), "the first Job completes")
        old = shop.live("batch/v1", "Job", "migrate")
        stalled(hshop, served, job("registry.invalid/m:2"))
        r = recreate(hshop, "job/migrate", "--yes")
        assert r.exit_code == ExitCode.OK, r.output
        new = shop.live("batch/v1", "Job", "migrate")
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        assert "ended Complete" in r.output
        assert ready(served.helm_release())["status"] == "True"
        _not_suspended(served)


# --- refusals ---------------------------------------------------------------------------------


def test_a_kind_refusal_holds_through_a_helmrelease(hshop: HelmShop, real_flux: RealFlux) -> None:
    shop = hshop.shop
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    hshop.commit(statefulset(shop))
    with real_flux.serving_chart(shop.repo, chart=f"./{RELEASE}", release=RELEASE,
                                 target=shop.ns) as served:  # fmt: skip
        hshop.for_flux(served)
        shop.running(2)
        old = shop.live("apps/v1", "StatefulSet", "db")
        changed = statefulset(shop)
        changed["spec"]["selector"] = {"matchLabels": {"app": "db", "v": "2"}}
        changed["spec"]["template"]["metadata"]["labels"]["v"] = "2"
        stalled(hshop, served, changed)
        r = recreate(hshop, "statefulset/db", "--yes")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "spec.selector changes" in r.stderr and "nothing changed" in r.stderr
        assert (
            shop.live("apps/v1", "StatefulSet", "db")["metadata"]["uid"] == old["metadata"]["uid"]
        )
        _not_suspended(served)


def test_a_helmrelease_that_has_not_tried_git_is_refused(
    hshop: HelmShop, real_flux: RealFlux
) -> None:
    shop = hshop.shop
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    hshop.commit(statefulset(shop))
    with real_flux.serving_chart(shop.repo, chart=f"./{RELEASE}", release=RELEASE,
                                 target=shop.ns) as served:  # fmt: skip
        hshop.for_flux(served)
        shop.running(2)
        old = shop.live("apps/v1", "StatefulSet", "db")
        hshop.commit(statefulset(shop, service="db-v2"))  # not fetched by the source
        r = recreate(hshop, "statefulset/db", "--yes")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "it has not tried git's chart yet" in r.stderr
        assert f"flux reconcile helmrelease {served.name} -n flux-system" in r.stderr
        assert (
            shop.live("apps/v1", "StatefulSet", "db")["metadata"]["uid"] == old["metadata"]["uid"]
        )
        _not_suspended(served)


# --- SIGKILL -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("moment", "sig"), [
    ("journaled", signal.SIGKILL), ("suspended", signal.SIGKILL), ("deleted", signal.SIGKILL),
    ("adopted", signal.SIGKILL), ("released", signal.SIGKILL), ("resumed", signal.SIGKILL),
    ("suspended", signal.SIGINT), ("deleted", signal.SIGINT),
], ids=["kill-journaled", "kill-suspended", "kill-deleted", "kill-adopted", "kill-released",
        "kill-resumed", "ctrl-c-suspended", "ctrl-c-deleted"])  # fmt: skip
def test_killed_then_the_rerun_converges_and_nothing_stays_suspended(
    hshop: HelmShop, real_flux: RealFlux, moment: str, sig: int
) -> None:
    """SIGKILL, or a Ctrl-C, at a step: while the journal is open, drift, doctor and the
    interrupted run's own error name one command; it converges, nothing stays suspended."""
    shop = hshop.shop
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    hshop.commit(statefulset(shop))
    with real_flux.serving_chart(shop.repo, chart=f"./{RELEASE}", release=RELEASE,
                                 target=shop.ns) as served:  # fmt: skip
        hshop.for_flux(served)
        before = identity(shop.running(2))
        old = shop.live("apps/v1", "StatefulSet", "db")
        stalled(hshop, served, statefulset(shop, service="db-v2", size="2Gi"))
        journal = shop.config.parent / "state" / "objects" / f"StatefulSet_{shop.ns}_db.json"

        def reached() -> bool:
            try:
                said = json.loads(journal.read_text())
            except (OSError, ValueError):
                return False
            if moment == "resumed":  # the HelmRelease resumed, helm-controller upgrading
                return said["phase"] == "released" and not said.get("suspended")
            if moment == "suspended":  # the HelmRelease suspended, nothing deleted yet
                return not said["phase"] and bool(said.get("suspended"))
            return moment == "journaled" or said["phase"] == moment

        args = ["-c", str(shop.config), "recreate", "statefulset/db", "-n", shop.ns,
                "--backend", "flux", "--yes"]  # fmt: skip

        said: list[str] = []

        def printed() -> list[str] | None:
            """While the journal is open, drift and doctor name one command: run it."""
            if not journal.exists():
                return None
            command = said_next(str(shop.config), "flux")
            if sig == signal.SIGINT:
                assert shlex.join(command) in " ".join("".join(said).split()), said
            return command

        r = kill_then_rerun(args, reached, moment, timeout=120, next_command=printed,
                            sig=sig, said=said)  # fmt: skip
        assert r.exit_code == ExitCode.OK, r.output
        new = shop.live("apps/v1", "StatefulSet", "db")
        assert new["metadata"]["uid"] != old["metadata"]["uid"]
        assert new["spec"]["serviceName"] == "db-v2"
        assert identity(shop.pods()) == before, "no pod was lost or restarted"
        assert ready(served.helm_release())["status"] == "True"
        assert not journal.exists()
        _not_suspended(served)


def _uid(shop: Shop) -> str:
    live = shop.live("apps/v1", "StatefulSet", "db")
    return str(live["metadata"]["uid"]) if live else ""
