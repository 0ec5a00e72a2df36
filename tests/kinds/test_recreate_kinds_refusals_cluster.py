"""Every refusal of ``recreate KIND/NAME`` on the real API server: exit 1, nothing changed.

Each case makes the live object, commits git's change, and runs ``recreate --yes``: the
command refuses with the reason and the fix, and the live object is the same incarnation
with the same generation and content (only controllers' status may move). The other
refusals (a StatefulSet's selector or shrinking claim, a Deployment's pods that do not
fit, a claim's spec, an immutable ConfigMap, a new cluster IP, a controller owner) are
in ``test_recreate_kinds_cluster.py``.
"""

from __future__ import annotations

import copy
from typing import Any

from fracctl.core.kube.resources import PVCS, STORAGE_CLASSES
from fracctl.errors import ExitCode
from tests.support.helpers import run_cli
from tests.support.kinds_fixtures import Shop, identity, statefulset

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"


def refused(shop: Shop, obj: Obj, then: Obj, *words: str, live: Obj | None = None) -> None:
    """Commit ``then`` over the live ``obj``; recreate refuses saying ``words``; unchanged."""
    old = live if live is not None else shop.create(obj)
    shop.commit(then)
    name = then["metadata"]["name"]
    r = run_cli("-c", str(shop.config), "recreate", f"{then['kind']}/{name}", "-n", shop.ns,
                "--yes")  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.stderr.startswith("Error: ") and "nothing changed" in r.stderr, r.stderr
    for word in words:
        assert word in r.stderr, r.stderr
    key = f"{then['kind']}/{shop.ns}/{name}"
    key = key if key in r.stderr else f"{then['kind']}/{name}"  # cluster-scoped
    assert r.stderr.count(key) == 1, f"the refusal names its object once: {r.stderr}"
    now = shop.live(then["apiVersion"], then["kind"], name)
    assert now is not None and now["metadata"]["uid"] == old["metadata"]["uid"]
    assert now["metadata"].get("generation") == old["metadata"].get("generation")
    assert _content(now) == _content(old)


def _content(obj: Obj) -> Obj:
    """Everything but metadata and status (which controllers write)."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def binding(role: str, **meta: Any) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": "team", **meta},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "alice"}]}  # fmt: skip


def test_two_gitops_owners_are_refused(shop: Shop) -> None:
    tracking = f"shop:{RBAC}/RoleBinding:{shop.ns}/team"
    marks = {"labels": {"kustomize.toolkit.fluxcd.io/name": "apps",
                        "kustomize.toolkit.fluxcd.io/namespace": "flux-system"},
             "annotations": {"argocd.argoproj.io/tracking-id": tracking}}  # fmt: skip
    shop.commit(binding("view", **marks))
    refused(shop, binding("view", **marks), binding("edit", **marks),
            "Flux Kustomization", "Argo CD Application shop")  # fmt: skip


def test_a_difference_that_is_only_defaulting_is_refused_with_the_line_for_git(
    shop: Shop,
) -> None:
    """git says ``volumeName: ""``; the cluster bound the claim to a volume: git's object
    cannot be applied (a claim's spec is immutable), yet nothing really changes."""
    from tests.support.waiting import until

    shop.bound_claims(["d"], claims=False)
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d"},
           "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "",
                    "storageClassName": f"{shop.ns}-expandable",
                    "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    shop.commit(pvc)
    shop.create(pvc)
    live = until("the claim is bound", lambda: _bound(shop))
    volume = live["spec"]["volumeName"]
    refused(shop, pvc, pvc, "differs only by defaulting", f"volumeName: {volume}", live=live)


def _bound(shop: Shop) -> Obj | None:
    live = shop.live("v1", "PersistentVolumeClaim", "d")
    return live if live and (live.get("spec") or {}).get("volumeName") else None


def test_an_active_job_is_refused_unless_allowed(shop: Shop) -> None:
    """A Job whose pod waits for a node it will never get is active; a rerun would kill it."""

    def job(image: str) -> Obj:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
                "spec": {"backoffLimit": 0, "template": {"spec": {
                    "restartPolicy": "Never", "nodeSelector": {"example.org/none": "x"},
                    "containers": [{"name": "m", "image": image}]}}}}  # fmt: skip

    shop.commit(job("registry.invalid/m:1"))
    shop.create(job("registry.invalid/m:1"))
    from tests.support.waiting import until

    live = until("the Job counts its pending pod active", lambda: _active(shop))
    refused(shop, job("registry.invalid/m:1"), job("registry.invalid/m:2"),
            "is running (1 active pod(s))", "--allow-active", live=live)  # fmt: skip


def _active(shop: Shop) -> Obj | None:
    live = shop.live("batch/v1", "Job", "migrate")
    return live if live and (live.get("status") or {}).get("active") else None


def test_a_claim_that_must_grow_in_a_class_without_expansion_is_refused(shop: Shop) -> None:
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    sts = statefulset(shop)
    shop.commit(sts)
    live = shop.create(sts)
    before = identity(shop.running(2))
    claims = {c["metadata"]["name"]: c for c in shop.kube.list(PVCS, namespace=shop.ns)}
    shop.kube.patch(STORAGE_CLASSES, f"{shop.ns}-expandable", {"allowVolumeExpansion": False})
    refused(shop, sts, statefulset(shop, size="2Gi"), "does not allow volume expansion",
            f"set allowVolumeExpansion: true on StorageClass {shop.ns}-expandable",
            live=shop.live("apps/v1", "StatefulSet", "db") or live)  # fmt: skip
    assert identity(shop.pods()) == before
    assert {c["metadata"]["name"]: c for c in shop.kube.list(PVCS, namespace=shop.ns)} == claims


def test_an_immutable_secret_is_refused_with_a_new_name_suggested(shop: Shop) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"},
              "immutable": True, "stringData": {"a": "1"}}  # fmt: skip
    shop.commit(secret)
    changed = copy.deepcopy(secret)
    changed["stringData"] = {"a": "2"}
    refused(shop, secret, changed, "is immutable", "secretGenerator")


def test_a_crd_scope_change_is_refused(shop: Shop) -> None:
    group = f"{shop.ns}.example.org"

    def crd(scope: str) -> Obj:
        return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": f"widgets.{group}"},
                "spec": {"group": group, "scope": scope,
                         "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                             "openAPIV3Schema": {"type": "object"}}}]}}  # fmt: skip

    shop.commit(crd("Namespaced"))
    refused(shop, crd("Namespaced"), crd("Cluster"), "deletes every object of its kind")
