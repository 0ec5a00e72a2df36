"""``fracctl recreate KIND/NAME`` on the real controllers: each procedure converges, nothing lost.

The StatefulSet, Deployment, garbage collector, Job controllers and the scheduler are the
real ones; KWOK plays the kubelets (pods run, Job pods complete).
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from fracctl.errors import ExitCode
from tests.support.helpers import run_cli
from tests.support.killing import kill_when
from tests.support.kinds_fixtures import (
    PVCS,
    REPLICASETS,
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
RBAC = "rbac.authorization.k8s.io"


def recreate(shop: Shop, obj: str, *more: str) -> Any:
    return run_cli("-c", str(shop.config), "recreate", obj, "-n", shop.ns, *more)


# --- StatefulSet ---------------------------------------------------------------------------


@pytest.fixture
def db(shop: Shop) -> dict[str, tuple[str, int]]:
    """Two StatefulSet pods running on bound claims; their identities."""
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    sts = statefulset(shop)
    shop.commit(sts, message="db")
    shop.create(sts)
    return identity(shop.running(2))


def test_a_statefulset_is_recreated_without_a_pod_restart_and_claims_grow(
    shop: Shop, db: dict[str, tuple[str, int]]
) -> None:
    old = shop.live("apps/v1", "StatefulSet", "db")
    assert old is not None
    shop.commit(statefulset(shop, service="db-v2", size="2Gi"), message="serviceName, size")

    plan = recreate(shop, "StatefulSet/db", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "the orphan-and-adopt procedure" in plan.stdout
    assert "expand claim data-db-0 from 1Gi to 2Gi" in plan.stdout
    assert "proven: a dry-run expansion of claim data-db-1 to 2Gi passes" in plan.stdout
    assert shop.live("apps/v1", "StatefulSet", "db")["metadata"]["uid"] == old["metadata"]["uid"]

    r = recreate(shop, "StatefulSet/db", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["serviceName"] == "db-v2"
    rolling = (new["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
    assert rolling.get("partition", 0) == 0  # the hold is released
    pods = shop.pods()
    assert identity(pods) == db  # same uids, same restart counts: nothing restarted
    assert {controller_of(p) for p in pods.values()} == {new["metadata"]["uid"]}
    for claim in ("data-db-0", "data-db-1"):
        live = shop.kube.get(PVCS, claim, shop.ns)
        assert live["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert "outcome: recreated" in r.stdout
    again = recreate(shop, "StatefulSet/db", "--yes")
    assert again.exit_code == ExitCode.OK and "nothing-to-do" in again.stdout, again.output


def test_a_statefulset_selector_change_is_refused_and_nothing_changes(
    shop: Shop, db: dict[str, tuple[str, int]]
) -> None:
    unchanged = shop.written("apps/v1", "StatefulSet", "db")
    changed = statefulset(shop)
    changed["spec"]["selector"] = {"matchLabels": {"app": "db", "v": "2"}}
    changed["spec"]["template"]["metadata"]["labels"]["v"] = "2"
    shop.commit(changed)
    r = recreate(shop, "StatefulSet/db", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "spec.selector changes" in r.stderr and "nothing changed" in r.stderr
    assert shop.written("apps/v1", "StatefulSet", "db") == unchanged
    assert identity(shop.pods()) == db


def test_shrinking_a_claim_is_refused(shop: Shop, db: dict[str, tuple[str, int]]) -> None:
    shop.commit(statefulset(shop, size="512Mi"))
    r = recreate(shop, "StatefulSet/db", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "shrinks from 1Gi to 512Mi" in r.stderr
    assert identity(shop.pods()) == db


# --- Deployment ----------------------------------------------------------------------------


def test_a_deployment_selector_is_recreated_by_adoption_when_the_pods_fit(shop: Shop) -> None:
    both = {"app": "web", "tier": "front"}
    first = deployment({"app": "web"}, both)  # labels in the template first, rolled out
    shop.commit(first)
    shop.create(first)
    before = identity(shop.running(2))
    old = shop.live("apps/v1", "Deployment", "web")
    (old_rs,) = shop.kube.list(REPLICASETS, namespace=shop.ns)
    shop.commit(deployment(both, both), message="the selector second")

    r = recreate(shop, "Deployment/web", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", "Deployment", "web")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["selector"] == {"matchLabels": both}
    assert not new["spec"].get("paused")
    assert identity(shop.pods()) == before
    (rs,) = shop.kube.list(REPLICASETS, namespace=shop.ns)
    assert rs["metadata"]["uid"] == old_rs["metadata"]["uid"]
    assert controller_of(rs) == new["metadata"]["uid"]


def test_a_daemonset_selector_is_recreated_by_adoption_when_the_pods_fit(shop: Shop) -> None:
    both = {"app": "agent", "tier": "node"}

    def daemonset(selector: dict[str, str]) -> Obj:
        pod = {"containers": [{"name": "a", "image": "registry.invalid/a:1"}]}
        return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": selector},
                         "template": {"metadata": {"labels": both}, "spec": pod}}}  # fmt: skip

    shop.commit(daemonset({"app": "agent"}))
    old = shop.create(daemonset({"app": "agent"}))
    before = identity(shop.running(1))
    shop.commit(daemonset(both))
    r = recreate(shop, "DaemonSet/agent", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", "DaemonSet", "agent")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["updateStrategy"]["type"] == "RollingUpdate"  # the hold is released
    pods = shop.pods()
    assert identity(pods) == before
    assert {controller_of(p) for p in pods.values()} == {new["metadata"]["uid"]}


def test_a_deployment_selector_the_pods_do_not_fit_is_refused_with_two_commits(
    shop: Shop,
) -> None:
    first = deployment({"app": "web"}, {"app": "web"})
    shop.commit(first)
    shop.create(first)
    before = identity(shop.running(2))
    unchanged = shop.written("apps/v1", "Deployment", "web")
    both = {"app": "web", "tier": "front"}
    shop.commit(deployment(both, both))
    r = recreate(shop, "Deployment/web", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "lack the new selector's labels" in r.stderr
    assert "first add {'app': 'web', 'tier': 'front'} to spec.template.metadata.labels" in r.stderr
    assert "a Service that selects both the running pods and git's template" in r.stderr
    assert shop.written("apps/v1", "Deployment", "web") == unchanged
    assert identity(shop.pods()) == before


def test_a_deployment_selector_the_pods_do_not_fit_surges_behind_a_service_that_selects_both(
    shop: Shop,
) -> None:
    from fracctl import config as cfg
    from fracctl.flows.context import Context
    from fracctl.flows.kinds import recreate_object

    first = deployment({"app": "web"}, {"app": "web"})
    shop.commit(first)
    shop.create(first)
    before = identity(shop.running(2))
    old = shop.live("apps/v1", "Deployment", "web")
    unchanged = shop.written("apps/v1", "Deployment", "web")
    (old_rs,) = shop.kube.list(REPLICASETS, namespace=shop.ns)
    shop.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                 "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})  # fmt: skip
    both = {"app": "web", "tier": "front"}
    shop.commit(deployment(both, both))

    plan = recreate(shop, "Deployment/web", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "the surge procedure" in plan.stdout
    assert "Service web selects both" in plan.stdout
    assert "it costs: its 2 pod(s), replaced by new ones once those are available" in plan.stdout
    assert shop.written("apps/v1", "Deployment", "web") == unchanged

    serving: dict[str, set[str]] = {}

    def at(step: str) -> None:  # which of the old pods still run at each step
        serving[step] = {n for n in shop.pods() if n in before}

    ctx = Context(config=cfg.load(str(shop.config), env={}), kube_factory=lambda: shop.kube)
    result = recreate_object(ctx, "Deployment/web", namespace=shop.ns, yes=True, boundary=at)
    assert result.outcome == "recreated"
    assert serving["created"] == serving["available"] == set(before)  # old pods served until
    new = shop.live("apps/v1", "Deployment", "web")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["selector"] == {"matchLabels": both}
    wait_for(lambda: not set(shop.pods()) & set(before), "the old pods go", timeout=120)
    now = shop.running(2, timeout=120)
    assert all(p["metadata"]["labels"]["tier"] == "front" for p in now.values())
    assert shop.kube.get_or_none(REPLICASETS, old_rs["metadata"]["name"], shop.ns) is None


# --- Job -----------------------------------------------------------------------------------


def test_a_job_runs_again_only_with_yes_and_the_recreated_one_completes(shop: Shop) -> None:
    shop.commit(job("registry.invalid/m:1"))
    old = shop.create(job("registry.invalid/m:1"))
    wait_for(lambda: job_done(shop), "the first Job completes")
    shop.commit(job("registry.invalid/m:2"))
    plan = recreate(shop, "Job/migrate", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "it costs: a run of the Job from the start" in plan.stdout
    r = recreate(shop, "Job/migrate", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("batch/v1", "Job", "migrate")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert "ended Complete" in r.stdout


# --- RoleBinding ---------------------------------------------------------------------------


def binding(role: str) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": "team"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "alice"}]}  # fmt: skip


def test_a_rolebinding_role_ref_changes_behind_a_bridge(shop: Shop) -> None:
    from fracctl import config as cfg
    from fracctl.core.kube.resources import PODS
    from fracctl.flows.context import Context
    from fracctl.flows.kinds import recreate_object

    shop.commit(binding("view"))
    old = shop.create(binding("view"))
    shop.commit(binding("edit"))
    access: dict[str, bool] = {}

    def at(step: str) -> None:  # alice may read pods at every step: no window without access
        access[step], _ = shop.kube.can_they("alice", "get", PODS, namespace=shop.ns)

    ctx = Context(config=cfg.load(str(shop.config), env={}), kube_factory=lambda: shop.kube)
    result = recreate_object(ctx, "RoleBinding/team", namespace=shop.ns, yes=True, boundary=at)
    assert result.outcome == "recreated"
    assert access == dict.fromkeys(["locked", "proven", "journaled", "bridged", "deleted",
                                    "created"], True)  # fmt: skip
    assert "User alice has the new role's access" in result.notes
    new = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
    assert new is not None and new["roleRef"]["name"] == "edit"
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert shop.live(f"{RBAC}/v1", "RoleBinding", "team-fracctl-bridge") is None


def cluster_binding(shop: Shop, role: str) -> Obj:
    return {**binding(role), "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{shop.ns}-team"},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": f"{shop.ns}-bob"}]}  # fmt: skip


def test_all_recreates_every_object_drift_finds_and_reports_each_refusal(shop: Shop) -> None:
    """--all: a RoleBinding and a ClusterRoleBinding behind bridges; an immutable ConfigMap
    refused and unchanged; an object in sync left alone."""
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                "immutable": True, "data": {"a": "1"}}  # fmt: skip
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"},
             "data": {"a": "1"}}  # fmt: skip
    objects = [binding("view"), cluster_binding(shop, "view"), settings, plain]
    shop.commit(*objects)
    old = {(o["kind"], o["metadata"]["name"]): shop.create(o) for o in objects}
    changed = copy.deepcopy(settings)
    changed["data"] = {"a": "2"}
    shop.commit(binding("edit"), cluster_binding(shop, "edit"), changed)
    crb = f"{shop.ns}-team"

    plan = run_cli("-c", str(shop.config), "recreate", "--all", "--dry-run")
    assert plan.exit_code == ExitCode.FINDING, plan.output
    assert f"Plan for RoleBinding/{shop.ns}/team: the bridge-binding procedure" in plan.stdout
    assert f"Plan for ClusterRoleBinding/{crb}: the bridge-binding procedure" in plan.stdout
    assert f"Plan for ConfigMap/{shop.ns}/settings: refused" in plan.stdout
    assert "content-hashed name" in plan.stdout
    assert "plain" not in plan.stdout
    assert "3 object(s): 2 dry-run, 1 refused" in plan.stdout
    for (kind, name), obj in old.items():
        live = shop.live(obj["apiVersion"], kind, name)
        assert live is not None and live["metadata"]["uid"] == obj["metadata"]["uid"]

    r = run_cli("-c", str(shop.config), "recreate", "--all", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "3 object(s): 2 recreated, 1 refused" in r.stdout
    assert f"{shop.ns}-bob has the new role's access" in r.stdout
    for kind, name in (("RoleBinding", "team"), ("ClusterRoleBinding", crb)):
        new = shop.live(f"{RBAC}/v1", kind, name)
        assert new is not None and new["roleRef"]["name"] == "edit"
        assert new["metadata"]["uid"] != old[kind, name]["metadata"]["uid"]
        assert shop.live(f"{RBAC}/v1", kind, f"{name}-fracctl-bridge") is None
    for name in ("settings", "plain"):  # refused, and in sync: both untouched
        assert shop.live("v1", "ConfigMap", name) == old["ConfigMap", name]

    again = run_cli("-c", str(shop.config), "recreate", "--all", "--yes")
    assert again.exit_code == ExitCode.FINDING, again.output
    assert "1 object(s): 1 refused" in again.stdout


def test_all_takes_no_object_and_no_config_flags(shop: Shop) -> None:
    for more in (["ConfigMap/x"], ["--drain"], ["-n", shop.ns], ["--abort"]):
        r = run_cli("-c", str(shop.config), "recreate", "--all", *more)
        assert r.exit_code == ExitCode.USAGE, r.output
        assert r.stderr.startswith("Error: ") and len(r.stderr.strip().splitlines()) == 1


# --- what no procedure recreates --------------------------------------------------------------


def test_an_immutable_configmap_is_refused_with_a_new_name_suggested(shop: Shop) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
          "immutable": True, "data": {"a": "1"}}  # fmt: skip
    shop.commit(cm)
    old = shop.create(cm)
    changed = copy.deepcopy(cm)
    changed["data"] = {"a": "2"}
    shop.commit(changed)
    r = recreate(shop, "ConfigMap/settings", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "content-hashed name" in r.stderr
    key = f"ConfigMap/{shop.ns}/settings"
    assert r.stderr.startswith(f"Error: {key}: the ConfigMap is immutable"), r.stderr
    assert r.stderr.count(key) == 1, r.stderr  # the object is named once, not twice
    assert shop.live("v1", "ConfigMap", "settings") == old


# --- SIGKILL -------------------------------------------------------------------------------

#: Where a run is killed (a moment of the procedure, then a seeded random delay).
MOMENTS = ["journaled", "deleted", "created"]


@pytest.mark.parametrize("kind", ["StatefulSet", "Deployment"])
@pytest.mark.parametrize("moment", MOMENTS)
def test_sigkill_at_a_random_moment_then_the_rerun_converges_with_no_pod_lost(
    shop: Shop, kind: str, moment: str
) -> None:
    import os
    import random

    seed = int(os.environ.get("FRACCTL_TEST_SEED", "0")) or random.randrange(1, 10**6)
    jitter = random.Random(seed).uniform(0, 0.08)
    print(f"{kind} killed at {moment} + {jitter:.2f}s (FRACCTL_TEST_SEED={seed})")
    if kind == "StatefulSet":
        shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
        first, then, name = statefulset(shop), statefulset(shop, service="db-v2"), "db"
    else:
        both = {"app": "web", "tier": "front"}
        first, then, name = deployment({"app": "web"}, both), deployment(both, both), "web"
    shop.commit(first)
    old = shop.create(first)
    before = identity(shop.running(2))
    shop.commit(then)
    state = shop.config.parent / "state" / "objects" / f"{kind}_{shop.ns}_{name}.json"

    def reached() -> bool:  # the journal says which step is done
        try:
            phase = json.loads(state.read_text())["phase"]
        except (OSError, ValueError):
            return False
        return moment == "journaled" or phase == moment

    args = ["-c", str(shop.config), "recreate", f"{kind}/{name}", "-n", shop.ns, "--yes"]
    env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "2s"}
    mid = kill_when(args, env, reached, jitter=jitter, what=moment)
    print("killed mid-run" if mid else "the run had ended before the kill")
    time.sleep(2.5)  # the dead holder's lease expires
    r = run_cli(*args)
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", kind, name)
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"] == {**new["spec"], **{k: v for k, v in then["spec"].items()
                                             if k in ("serviceName", "selector")}}  # fmt: skip
    assert identity(shop.pods()) == before, "no pod was lost or restarted"
    assert not state.exists(), "the journal is gone once the procedure ended"


# --- Service, claims, owners ---------------------------------------------------------------


def service(ip: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"clusterIP": ip, "selector": {"app": "web"},
                     "ports": [{"port": 80, "targetPort": 8080}]}}  # fmt: skip


def test_a_new_cluster_ip_is_refused_then_recreated_with_allow_new_ip(shop: Shop) -> None:
    first, then = shop.free_ips()
    shop.commit(service(first))
    old = shop.create(service(first))
    shop.commit(service(then))
    r = recreate(shop, "Service/web", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert f"new cluster IP ({first} -> {then})" in r.stderr and "--allow-new-ip" in r.stderr
    assert shop.live("v1", "Service", "web") == old
    r = recreate(shop, "Service/web", "--yes", "--allow-new-ip")
    assert r.exit_code == ExitCode.OK, r.output
    assert shop.live("v1", "Service", "web")["spec"]["clusterIP"] == then


def test_a_claims_spec_is_refused(shop: Shop) -> None:
    def pvc(mode: str) -> Obj:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d"},
                "spec": {"accessModes": [mode], "storageClassName": "none",
                         "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip

    shop.commit(pvc("ReadWriteOnce"))
    old = shop.create(pvc("ReadWriteOnce"))
    shop.commit(pvc("ReadWriteMany"))
    r = recreate(shop, "PersistentVolumeClaim/d", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "release its volume and its data" in r.stderr
    live = shop.live("v1", "PersistentVolumeClaim", "d")
    assert live is not None and live["metadata"]["uid"] == old["metadata"]["uid"]


def test_an_object_with_a_controller_is_refused(shop: Shop) -> None:
    owner = shop.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    owned = job("registry.invalid/m:1")
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "owner", "uid": owner["metadata"]["uid"], "controller": True}]  # fmt: skip
    shop.commit(job("registry.invalid/m:1"))
    old = shop.create(owned)
    shop.commit(job("registry.invalid/m:2"))
    r = recreate(shop, "Job/migrate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "controlled by ConfigMap/owner, which would recreate it first" in r.stderr
    live = shop.live("batch/v1", "Job", "migrate")
    assert live is not None and live["metadata"]["uid"] == old["metadata"]["uid"]


def test_a_journal_naming_the_original_is_dropped_once_git_no_longer_changes_it(
    shop: Shop,
) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1"}}
    shop.commit(cm)
    live = shop.create(cm)
    state = shop.config.parent / "state" / "objects" / f"ConfigMap_{shop.ns}_s.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"key": f"ConfigMap/{shop.ns}/s", "procedure": "rerun",
                                 "uid": live["metadata"]["uid"]}))  # fmt: skip
    r = recreate(shop, "ConfigMap/s", "--dry-run")
    assert r.exit_code == ExitCode.OK and "nothing-to-do" in r.stdout, r.output
    assert state.exists(), "a dry run changes nothing, not even local state"
    r = recreate(shop, "ConfigMap/s", "--yes")
    assert r.exit_code == ExitCode.OK and "nothing-to-do" in r.stdout, r.output
    assert not state.exists()
