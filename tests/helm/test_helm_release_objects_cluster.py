"""``recreate KIND/NAME --backend helm``: a release's object that ``helm upgrade`` cannot
patch, carried across by its kind's procedure, then the release upgraded by the real helm.

helm 3 and helm 4, each built from its Go module; the StatefulSet, Deployment, Job and
garbage-collector controllers are the real ones, KWOK plays the kubelets.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.errors import ExitCode
from fracctl.flows.engines.helm.objects import MANAGED_BY, RELEASE_NAME, RELEASE_NAMESPACE
from tests.support.helm import Helm
from tests.support.helm_release_fixtures import RELEASE, HelmShop, helm_shop
from tests.support.helpers import Cluster, run_cli
from tests.support.kinds_fixtures import (
    PVCS,
    REPLICASETS,
    controller_of,
    deployment,
    identity,
    job,
    job_done,
    statefulset,
    wait_for,
)

Obj = dict[str, Any]


@pytest.fixture
def hshop(cluster: Cluster, tmp_path: Path, helm_bin: Helm) -> Iterator[HelmShop]:
    with helm_shop(cluster, tmp_path, helm_bin) as found:
        yield found


def recreate(h: HelmShop, obj: str, *more: str) -> Any:
    return run_cli("-c", str(h.shop.config), "recreate", obj, "-n", h.shop.ns, *more)


def _marks(obj: Obj, ns: str) -> tuple[str, str, str]:
    meta = obj["metadata"]
    ann = meta.get("annotations") or {}
    return (meta["labels"].get(MANAGED_BY), ann.get(RELEASE_NAME), ann.get(RELEASE_NAMESPACE))


def test_a_release_statefulset_helm_cannot_upgrade_is_recreated_then_helm_upgrades(
    hshop: HelmShop,
) -> None:
    shop = hshop.shop
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    hshop.commit(statefulset(shop), message="db")
    hshop.install()
    before = identity(shop.running(2))
    old = shop.live("apps/v1", "StatefulSet", "db")
    changed = statefulset(shop, size="2Gi")
    changed["spec"]["podManagementPolicy"] = "Parallel"
    hshop.commit(changed, message="claims grow, pods start in parallel")
    stuck = hshop.upgrade(check=False)
    assert stuck.returncode != 0 and "StatefulSet" in stuck.stderr, stuck.stderr
    assert hshop.release().status == "failed"

    drift = run_cli("-c", str(shop.config), "drift", "--all")
    assert drift.exit_code == ExitCode.FINDING, drift.output
    assert (
        f"fracctl recreate StatefulSet/db -n {shop.ns} --backend helm runs the orphan-and-adopt"
        in drift.stdout
    )
    assert f"an object of Helm release {shop.ns}/{RELEASE}, at revision 2 (failed" in drift.stdout
    assert 'stuck: Upgrade "app" failed' in drift.stdout, drift.stdout

    plan = recreate(hshop, "statefulset/db", "--backend", "helm", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "helm upgrade --dry-run=server of git's chart" in plan.output
    assert f"{MANAGED_BY}: Helm" in plan.output
    assert shop.live("apps/v1", "StatefulSet", "db")["metadata"]["uid"] == old["metadata"]["uid"]

    r = recreate(hshop, "statefulset/db", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["podManagementPolicy"] == "Parallel"
    assert _marks(new, shop.ns) == ("Helm", RELEASE, shop.ns)
    rolling = (new["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
    assert rolling.get("partition", 0) == 0  # the hold is released
    pods = shop.pods()
    assert identity(pods) == before  # same uids, same restart counts
    assert {controller_of(p) for p in pods.values()} == {new["metadata"]["uid"]}
    for claim in ("data-db-0", "data-db-1"):
        assert (
            shop.kube.get(PVCS, claim, shop.ns)["spec"]["resources"]["requests"]["storage"] == "2Gi"
        )
    assert f"helm upgrade of release {shop.ns}/{RELEASE}" in r.output
    assert hshop.release().status == "deployed"

    again = hshop.upgrade()
    assert again.returncode == 0
    assert identity(shop.pods()) == before
    hshop.run("uninstall", RELEASE)
    gone = shop.live("apps/v1", "StatefulSet", "db")
    assert gone is None or gone["metadata"].get("deletionTimestamp"), "helm uninstall kept it"


def test_a_release_deployment_selector_is_recreated_by_adoption_then_helm_upgrades(
    hshop: HelmShop,
) -> None:
    shop = hshop.shop
    both = {"app": "web", "tier": "front"}
    hshop.commit(deployment({"app": "web"}, both), message="labels in the template first")
    hshop.install()
    before = identity(shop.running(2))
    old = shop.live("apps/v1", "Deployment", "web")
    hshop.commit(deployment(both, both), message="the selector second")
    assert hshop.upgrade(check=False).returncode != 0

    r = recreate(hshop, "deployment/web", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", "Deployment", "web")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["selector"] == {"matchLabels": both}
    assert not new["spec"].get("paused")  # the hold is released
    assert _marks(new, shop.ns) == ("Helm", RELEASE, shop.ns)
    assert identity(shop.pods()) == before
    owners = {rs["metadata"]["uid"] for rs in shop.kube.list(REPLICASETS, namespace=shop.ns)
              if controller_of(rs) == new["metadata"]["uid"]}  # fmt: skip
    assert {controller_of(p) for p in shop.pods().values()} <= owners
    assert hshop.release().status == "deployed"
    assert hshop.upgrade().returncode == 0


def test_a_release_job_runs_again_with_yes_then_helm_upgrades(hshop: HelmShop) -> None:
    shop = hshop.shop
    hshop.commit(job("registry.invalid/m:1"))
    hshop.install()
    wait_for(lambda: job_done(shop), "the first Job completes")
    old = shop.live("batch/v1", "Job", "migrate")
    hshop.commit(job("registry.invalid/m:2"))
    assert hshop.upgrade(check=False).returncode != 0

    r = recreate(hshop, "job/migrate", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("batch/v1", "Job", "migrate")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.invalid/m:2"
    assert _marks(new, shop.ns) == ("Helm", RELEASE, shop.ns)
    assert "ended Complete" in r.output
    assert hshop.release().status == "deployed"


# --- refusals: nothing changed, the release untouched --------------------------------------


@pytest.fixture
def db(hshop: HelmShop) -> Obj:
    """The release's StatefulSet, running two pods on bound claims; the live object."""
    shop = hshop.shop
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    hshop.commit(statefulset(shop), message="db")
    hshop.install()
    shop.running(2)
    live = shop.live("apps/v1", "StatefulSet", "db")
    assert live is not None
    return live


def _unchanged(hshop: HelmShop, live: Obj, revision: int) -> None:
    now = hshop.shop.live("apps/v1", "StatefulSet", "db")
    assert now is not None and now["metadata"]["uid"] == live["metadata"]["uid"]
    assert hshop.release().version == revision


def test_a_kind_refusal_holds_through_helm(hshop: HelmShop, db: Obj) -> None:
    changed = statefulset(hshop.shop)
    changed["spec"]["selector"] = {"matchLabels": {"app": "db", "v": "2"}}
    changed["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    hshop.commit(changed)
    r = recreate(hshop, "statefulset/db", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "spec.selector changes" in r.stderr and "nothing changed" in r.stderr
    _unchanged(hshop, db, 1)


def test_a_release_another_helm_operation_holds_is_refused(hshop: HelmShop, db: Obj) -> None:
    from fracctl.core.gitops import helm_release
    from fracctl.flows.engines.helm.release import SECRETS

    hshop.commit(statefulset(hshop.shop, service="db-v2"))
    ns = hshop.shop.ns
    name = f"{helm_release.SECRET_PREFIX}{RELEASE}.v1"
    secret = hshop.shop.kube.get(SECRETS, name, ns)
    hshop.shop.kube.replace(SECRETS, helm_release.with_status(secret, "pending-upgrade", "busy"))
    r = recreate(hshop, "statefulset/db", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "is pending-upgrade: another helm operation is in progress" in r.stderr
    _unchanged(hshop, db, 1)


def test_an_object_of_another_release_is_refused(hshop: HelmShop, db: Obj) -> None:
    hshop.commit(statefulset(hshop.shop, service="db-v2"))
    config = hshop.shop.config
    config.write_text(config.read_text().replace(f"helm_release: {RELEASE}", "helm_release: other"))
    r = recreate(hshop, "statefulset/db", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert f"belongs to Helm release {hshop.shop.ns}/{RELEASE}" in r.stderr
    assert "nothing changed" in r.stderr
    _unchanged(hshop, db, 1)


def test_helm_rendering_another_object_than_git_is_refused(hshop: HelmShop, db: Obj) -> None:
    """A chart whose upgrade looks the cluster up renders otherwise than ``helm template``."""
    import yaml

    shop = hshop.shop
    text = yaml.safe_dump(statefulset(shop, service="SERVICE"))
    lookup = '{{ if lookup "v1" "ConfigMap" .Release.Namespace "v3" }}db-v3{{ else }}db-v2{{ end }}'
    (hshop.chart / "templates" / "statefulset-db.yaml").write_text(text.replace("SERVICE", lookup))
    hshop.commit(message="the service name, v3 where the cluster says so")
    shop.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "v3"}})
    r = recreate(hshop, "statefulset/db", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "helm renders StatefulSet/" in r.stderr
    assert "spec.serviceName db-v3, not git's spec.serviceName db-v2" in r.stderr
    _unchanged(hshop, db, 1)


# --- SIGKILL: the rerun converges, no pod lost, the release deployed ------------------------


@pytest.mark.parametrize(("moment", "sig"), [
    ("deleted", signal.SIGKILL), ("created", signal.SIGKILL), ("released", signal.SIGKILL),
    ("upgrading", signal.SIGKILL), ("deleted", signal.SIGINT), ("upgrading", signal.SIGINT),
], ids=["kill-deleted", "kill-created", "kill-released", "kill-upgrading", "ctrl-c-deleted",
        "ctrl-c-upgrading"])  # fmt: skip
def test_killed_then_the_rerun_converges_and_the_release_is_deployed(
    hshop: HelmShop, db: Obj, moment: str, sig: int
) -> None:
    """SIGKILL, or a Ctrl-C to fracctl and helm, at a step: while a journal is open,
    drift, doctor and the interrupted run's own error name one command; it converges."""
    import json
    import shlex

    from tests.support.killing import kill_then_rerun, said_next

    shop = hshop.shop
    before = identity(shop.pods())
    hshop.commit(statefulset(shop, service="db-v2", size="2Gi"))
    state = shop.config.parent / "state"
    journal = state / "objects" / f"StatefulSet_{shop.ns}_db.json"
    upgrade = state / f"helm-{shop.ns}-{RELEASE}.json"

    def reached() -> bool:
        try:
            if moment == "upgrading":
                return int(json.loads(upgrade.read_text()).get("pid") or 0) > 0
            return json.loads(journal.read_text())["phase"] == moment
        except (OSError, ValueError):
            return False

    args = ["-c", str(shop.config), "recreate", "statefulset/db", "-n", shop.ns,
            "--backend", "helm", "--yes"]  # fmt: skip

    said: list[str] = []

    def printed() -> list[str] | None:
        """While a journal is open, drift and doctor name one command: run it."""
        if not journal.exists():
            return None
        command = said_next(str(shop.config), "helm")
        if sig == signal.SIGINT:
            assert shlex.join(command) in " ".join("".join(said).split()), said
        return command

    r = kill_then_rerun(args, reached, moment, timeout=120, next_command=printed, sig=sig,
                        said=said)  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new is not None and new["metadata"]["uid"] != db["metadata"]["uid"]
    assert new["spec"]["serviceName"] == "db-v2"
    assert identity(shop.pods()) == before, "no pod was lost or restarted"
    assert hshop.release().status == "deployed"
    assert not journal.exists() and not upgrade.exists(), "nothing is left half-done"
    assert hshop.upgrade().returncode == 0


def test_shrinking_a_claim_is_refused_through_helm(hshop: HelmShop, db: Obj) -> None:
    hshop.commit(statefulset(hshop.shop, size="512Mi"))
    r = recreate(hshop, "statefulset/db", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "shrinks from 1Gi to 512Mi" in r.stderr
    _unchanged(hshop, db, 1)


def test_a_deployment_whose_pods_do_not_fit_is_refused_through_helm(hshop: HelmShop) -> None:
    shop = hshop.shop
    hshop.commit(deployment({"app": "web"}, {"app": "web"}))
    hshop.install()
    before = identity(shop.running(2))
    old = shop.live("apps/v1", "Deployment", "web")
    both = {"app": "web", "tier": "front"}
    hshop.commit(deployment(both, both))
    r = recreate(hshop, "deployment/web", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "lack the new selector's labels" in r.stderr
    now = shop.live("apps/v1", "Deployment", "web")
    assert now is not None and old is not None
    # Unchanged: the same object at the same generation (its controller may still be
    # writing the readiness of the pods into its status).
    kept = ("uid", "generation")
    assert [now["metadata"][k] for k in kept] == [old["metadata"][k] for k in kept]
    assert now["spec"] == old["spec"]
    assert identity(shop.pods()) == before
    assert hshop.release().version == 1


def test_two_stuck_objects_of_a_release_the_upgrade_runs_after_the_last(
    hshop: HelmShop,
) -> None:
    shop = hshop.shop
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    both = {"app": "web", "tier": "front"}
    hshop.commit(statefulset(shop), deployment({"app": "web"}, both), message="db and web")
    hshop.install()
    before = identity(shop.running(4))
    hshop.commit(statefulset(shop, service="db-v2"), deployment(both, both))
    assert hshop.upgrade(check=False).returncode != 0

    plan = recreate(hshop, "statefulset/db", "--backend", "helm", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert f"the release's Deployment/{shop.ns}/web also need(s) a recreate" in plan.output

    r = run_cli("-c", str(shop.config), "recreate", "--all", "--backend", "helm", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    assert f"helm upgrade of release {shop.ns}/{RELEASE} waits: " in r.output
    assert f"helm upgrade of release {shop.ns}/{RELEASE}: revision 3 deployed" in r.output
    assert shop.live("apps/v1", "StatefulSet", "db")["spec"]["serviceName"] == "db-v2"
    assert shop.live("apps/v1", "Deployment", "web")["spec"]["selector"]["matchLabels"] == both
    assert identity(shop.pods()) == before
    assert hshop.release().status == "deployed"
    assert hshop.upgrade().returncode == 0
