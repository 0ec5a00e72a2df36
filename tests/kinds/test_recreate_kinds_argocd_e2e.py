"""``fracctl recreate KIND/NAME --backend argocd`` against the REAL Argo CD and controllers.

The application that manages the object brings it back: Argo CD's rendering is what the
rehearsal holds to git's immutable fields and what Argo CD's own dry run syncs; a
workload is created held from that rendering (Argo CD's tracking annotation on it),
adopts its pods without a restart, and Argo CD's sync of the one resource ends it;
a binding is created by Argo CD's sync behind the bridge.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from fracctl.core.recreate.rehearsal import ARGOCD_TRACKING
from fracctl.errors import ExitCode
from tests.support.argocd_real import RealArgoCD
from tests.support.helpers import run_cli
from tests.support.kinds_fixtures import (
    PVCS,
    Shop,
    controller_of,
    deployment,
    identity,
    statefulset,
)

pytestmark = pytest.mark.e2e
Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def app(shop: Shop, real_argocd: RealArgoCD) -> Iterator[str]:
    """An Argo CD application over the shop's repository, and fracctl.yaml pointing at it."""
    name = f"kinds-{uuid.uuid4().hex[:6]}"
    token = shop.config.parent / "argocd-token"
    token.write_text(real_argocd.token() + "\n")
    token.chmod(0o600)
    section = real_argocd.config_section(name, token)
    with shop.config.open("a") as f:
        f.write("argocd:\n" + "".join(f"  {k}: {v}\n" for k, v in section.items()))
    with real_argocd.app(name, repo=shop.repo, path=".", namespace=shop.ns, compared=False):
        yield name


def head(shop: Shop) -> str:
    return subprocess.run(["git", "-C", str(shop.repo), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip


def seen(real_argocd: RealArgoCD, app: str, shop: Shop) -> None:
    """Until Argo CD has compared the application with git's newest commit."""
    want, deadline = head(shop), time.monotonic() + 90
    with real_argocd.client("admin") as c:
        while True:
            doc = c.get_application(app, refresh="hard")
            if ((doc.get("status") or {}).get("sync") or {}).get("revision") == want:
                return
            assert time.monotonic() < deadline, f"Argo CD never compared {app} at {want}"
            time.sleep(0.5)


def synced(real_argocd: RealArgoCD, app: str, shop: Shop) -> None:
    """Argo CD creates what git has (the first sync)."""
    seen(real_argocd, app, shop)
    state, _ = real_argocd.sync(app)
    assert state.get("phase") == "Succeeded", state


def recreate(shop: Shop, obj: str, *more: str) -> Any:
    return run_cli("-c", str(shop.config), "recreate", obj, "-n", shop.ns, "--backend",
                   "argocd", *more)  # fmt: skip


def resource_status(real_argocd: RealArgoCD, app: str, kind: str, name: str) -> str:
    with real_argocd.client("admin") as c:
        doc = c.get_application(app, refresh="hard")
    for r in (doc.get("status") or {}).get("resources") or []:
        if r.get("kind") == kind and r.get("name") == name:
            return str(r.get("status"))
    return "absent"


def test_argocd_brings_a_statefulset_back_held_and_no_pod_restarts(
    shop: Shop, real_argocd: RealArgoCD, app: str
) -> None:
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    shop.commit(statefulset(shop), message="db")
    synced(real_argocd, app, shop)
    before = identity(shop.running(2, timeout=120))
    old = shop.live("apps/v1", "StatefulSet", "db")
    unchanged = shop.written("apps/v1", "StatefulSet", "db")
    assert old is not None and ARGOCD_TRACKING in old["metadata"]["annotations"]
    shop.commit(statefulset(shop, service="db-v2", size="2Gi"), message="serviceName, size")
    seen(real_argocd, app, shop)

    plan = recreate(shop, "StatefulSet/db", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "the orphan-and-adopt procedure" in plan.stdout
    assert f"proven: Argo CD renders StatefulSet/{shop.ns}/db at " in plan.stdout
    assert "proven: Argo CD's dry run of this sync succeeded" in plan.stdout
    assert shop.written("apps/v1", "StatefulSet", "db") == unchanged

    r = recreate(shop, "StatefulSet/db", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    assert "created from Argo CD's rendering, held" in r.stderr
    assert f"Argo CD sync of {app}" in r.stderr
    assert "verified: drift judges the live" in r.stdout
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["serviceName"] == "db-v2"
    rolling = new["spec"]["updateStrategy"].get("rollingUpdate") or {}
    assert rolling.get("partition", 0) == 0  # the hold is gone
    assert ARGOCD_TRACKING in new["metadata"]["annotations"]
    pods = shop.pods()
    assert identity(pods) == before  # the same pods, none restarted
    assert {controller_of(p) for p in pods.values()} == {new["metadata"]["uid"]}
    claims = {c["metadata"]["name"]: c for c in shop.kube.list(PVCS, namespace=shop.ns)}
    assert set(claims) == {"data-db-0", "data-db-1"}
    assert resource_status(real_argocd, app, "StatefulSet", "db") == "Synced"


def test_argocd_brings_a_deployment_back_held_and_it_adopts_its_pods(
    shop: Shop, real_argocd: RealArgoCD, app: str
) -> None:
    both = {"app": "web", "tier": "front"}
    shop.commit(deployment({"app": "web"}, both), message="labels in the template first")
    synced(real_argocd, app, shop)
    before = identity(shop.running(2, timeout=120))
    old = shop.live("apps/v1", "Deployment", "web")
    assert old is not None
    shop.commit(deployment(both, both), message="the selector second")
    seen(real_argocd, app, shop)

    r = recreate(shop, "Deployment/web", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    assert "created from Argo CD's rendering, held" in r.stderr
    new = shop.live("apps/v1", "Deployment", "web")
    assert new is not None and new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["selector"] == {"matchLabels": both}
    assert not new["spec"].get("paused")  # the hold is gone
    assert ARGOCD_TRACKING in new["metadata"]["annotations"]
    assert identity(shop.pods()) == before  # the same pods, none restarted
    assert resource_status(real_argocd, app, "Deployment", "web") == "Synced"


def binding(role: str) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": "team"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "alice"}]}  # fmt: skip


def test_argocd_creates_a_binding_behind_the_bridge(
    shop: Shop, real_argocd: RealArgoCD, app: str
) -> None:
    shop.commit(binding("view"))
    synced(real_argocd, app, shop)
    old = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
    assert old is not None
    shop.commit(binding("edit"))
    seen(real_argocd, app, shop)

    r = recreate(shop, "RoleBinding/team", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    assert f"Argo CD sync of {app}" in r.stderr
    assert "User alice has the new role's access" in r.stdout + r.stderr
    new = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
    assert new is not None and new["roleRef"]["name"] == "edit"
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert ARGOCD_TRACKING in (new["metadata"].get("annotations") or {})
    assert shop.live(f"{RBAC}/v1", "RoleBinding", "team-fracctl-bridge") is None
    assert resource_status(real_argocd, app, "RoleBinding", "team") == "Synced"


def test_argocd_rendering_another_object_is_refused_and_nothing_changes(
    shop: Shop, real_argocd: RealArgoCD, app: str
) -> None:
    """Argo CD tracks an older commit than fracctl's git: its sync would bring back the
    old roleRef, so the rehearsal refuses before any change."""
    from fracctl.sandbox import argocd_local

    shop.commit(binding("view"))
    synced(real_argocd, app, shop)
    old = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
    real_argocd.kube.patch(argocd_local.APPLICATIONS, app,
                           {"spec": {"source": {"targetRevision": head(shop)}}},
                           namespace=argocd_local.NAMESPACE)  # fmt: skip
    shop.commit(binding("edit"))
    r = recreate(shop, "RoleBinding/team", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert f"Argo CD would create RoleBinding/{shop.ns}/team with roleRef " in r.stderr
    assert "'name': 'view'" in r.stderr and "'name': 'edit'" in r.stderr
    assert shop.live(f"{RBAC}/v1", "RoleBinding", "team") == old
    assert shop.live(f"{RBAC}/v1", "RoleBinding", "team-fracctl-bridge") is None


# --- automated sync with selfHeal: held from the delete until the object is git's --------


@contextmanager
def healing_app(shop: Shop, real_argocd: RealArgoCD, account: str) -> Iterator[str]:
    """An application with ``automated: {selfHeal: true}`` over the shop's repository,
    and fracctl.yaml pointing at it with ``account``'s token."""
    name = f"heal-{uuid.uuid4().hex[:6]}"
    token = shop.config.parent / "argocd-token"
    token.write_text(real_argocd.token(account) + "\n")
    token.chmod(0o600)
    section = real_argocd.config_section(name, token)
    with shop.config.open("a") as f:
        f.write("argocd:\n" + "".join(f"  {k}: {v}\n" for k, v in section.items()))
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    shop.commit(statefulset(shop), message="db")
    with real_argocd.app(name, repo=shop.repo, path=".", namespace=shop.ns,
                         automated={"selfHeal": True}):  # fmt: skip
        yield name


@pytest.fixture
def self_healing(shop: Shop, real_argocd: RealArgoCD) -> Iterator[str]:
    """:func:`healing_app` with the admin's token: turning automation off is the
    ``update`` action, which the CI account (get and sync only) lacks."""
    with healing_app(shop, real_argocd, "admin") as name:
        yield name


def automation(real_argocd: RealArgoCD, app: str) -> dict[str, Any]:
    with real_argocd.client("admin") as c:
        doc = c.get_application(app)
    return dict(((doc.get("spec") or {}).get("syncPolicy") or {}).get("automated") or {})


def failing(real_argocd: RealArgoCD, app: str, shop: Shop) -> None:
    """Until Argo CD's automated sync has tried git's newest commit (and failed)."""
    seen(real_argocd, app, shop)
    deadline = time.monotonic() + 90
    with real_argocd.client("admin") as c:
        while True:
            state = (c.get_application(app).get("status") or {}).get("operationState") or {}
            if "immutable" in str(state.get("message")) or "Forbidden" in str(state):
                return
            assert time.monotonic() < deadline, f"no failing automated sync: {state}"
            time.sleep(0.5)


def test_self_heal_is_held_and_restored_and_no_pod_restarts(
    shop: Shop, real_argocd: RealArgoCD, self_healing: str
) -> None:
    app = self_healing
    before = identity(shop.running(2, timeout=120))
    old = shop.live("apps/v1", "StatefulSet", "db")
    shop.commit(statefulset(shop, service="db-v2", size="2Gi"), message="serviceName, size")
    failing(real_argocd, app, shop)

    plan = recreate(shop, "StatefulSet/db", "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "fracctl turns it off (spec.syncPolicy.automated.enabled: false)" in plan.stdout
    assert automation(real_argocd, app) == {"selfHeal": True}

    r = recreate(shop, "StatefulSet/db", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    assert f"turned Argo CD's automated sync of {app} off" in r.stderr
    assert f"turned Argo CD's automated sync of {app} on again" in r.stderr
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["serviceName"] == "db-v2"
    pods = shop.pods()
    assert identity(pods) == before  # the same pods, none restarted
    assert {controller_of(p) for p in pods.values()} == {new["metadata"]["uid"]}
    assert automation(real_argocd, app) == {"selfHeal": True}  # as it was


def test_self_heal_an_account_may_not_turn_off_is_refused(
    shop: Shop, real_argocd: RealArgoCD
) -> None:
    with healing_app(shop, real_argocd, "fracctl-ci") as app:
        shop.running(2, timeout=120)
        old = shop.live("apps/v1", "StatefulSet", "db")
        shop.commit(statefulset(shop, service="db-v2"), message="serviceName")
        failing(real_argocd, app, shop)
        r = recreate(shop, "StatefulSet/db", "--yes")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "the account may not turn it off (can-i applications update" in r.stderr
        assert "nothing changed" in r.stderr
        now = shop.live("apps/v1", "StatefulSet", "db")
        assert now["metadata"]["uid"] == old["metadata"]["uid"]
        assert automation(real_argocd, app) == {"selfHeal": True}


@pytest.mark.parametrize("moment", ["held", "deleted", "created", "released"])
def test_self_heal_after_a_sigkill_the_rerun_converges_and_restores_it(
    shop: Shop, real_argocd: RealArgoCD, self_healing: str, moment: str
) -> None:
    import json

    from tests.support.killing import kill_then_rerun

    app = self_healing
    before = identity(shop.running(2, timeout=120))
    old = shop.live("apps/v1", "StatefulSet", "db")
    shop.commit(statefulset(shop, service="db-v2"), message="serviceName")
    failing(real_argocd, app, shop)
    journal = shop.config.parent / "state" / "objects" / f"StatefulSet_{shop.ns}_db.json"

    def reached() -> bool:
        try:
            said = json.loads(journal.read_text())
        except (OSError, ValueError):
            return False
        if moment == "held":  # the automated sync off, nothing deleted yet
            held = not said["phase"] and bool(said.get("suspended"))
            return held and automation(real_argocd, app).get("enabled") is False
        return bool(said["phase"] == moment)

    args = ["-c", str(shop.config), "recreate", "StatefulSet/db", "-n", shop.ns,
            "--backend", "argocd", "--yes"]  # fmt: skip
    r = kill_then_rerun(args, reached, moment, timeout=180)
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live("apps/v1", "StatefulSet", "db")
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["serviceName"] == "db-v2"
    assert identity(shop.pods()) == before, "no pod was lost or restarted"
    assert automation(real_argocd, app) == {"selfHeal": True}
    assert not journal.exists()
