"""The built-in kinds' refusals, as cases a Helm release's chart can hold.

Each case is what a release installs, what git then changes it to (a change ``helm
upgrade`` cannot apply), the object ``recreate`` is asked to carry, and the refusal it
must give unchanged through ``--backend helm`` and through a HelmRelease
(``tests/helm/test_helm_release_refusals_cluster.py``,
``tests/flux/test_helmrelease_refusals_e2e.py``). The same refusals without Helm are in
``tests/kinds/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.kinds_fixtures import STORAGE_CLASSES, Shop, deployment, job, statefulset

Obj = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One refusal: the release's objects, git's change, and what fracctl must say."""

    id: str
    target: str  # recreate's KIND/NAME
    api: tuple[str, str]  # the live object's apiVersion and kind
    said: str
    # (what the release installs, what git changes it to), given the shop
    objects: Callable[[Shop], tuple[list[Obj], list[Obj]]]
    settle: Callable[[Shop], None] = lambda shop: None  # once installed, before the change

    @property
    def name(self) -> str:
        return self.target.split("/", 1)[1]


def _shrink(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    return [statefulset(shop)], [statefulset(shop, size="512Mi")]


def _no_expansion(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
    return [statefulset(shop)], [statefulset(shop, size="2Gi")]


def _two_running(shop: Shop) -> None:
    shop.running(2)


def _forbid_expansion(shop: Shop) -> None:
    shop.running(2)
    shop.kube.patch(STORAGE_CLASSES, f"{shop.ns}-expandable", {"allowVolumeExpansion": False})


def _selector(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    both = {"app": "web", "tier": "front"}
    return [deployment({"app": "web"}, {"app": "web"})], [deployment(both, both)]


def _configmap(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    def cm(value: str) -> Obj:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                "immutable": True, "data": {"a": value}}  # fmt: skip

    return [cm("1")], [cm("2")]


def _service(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    first, then = shop.free_ips()

    def service(ip: str) -> Obj:
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                "spec": {"clusterIP": ip, "selector": {"app": "web"},
                         "ports": [{"port": 80, "targetPort": 8080}]}}  # fmt: skip

    return [service(first)], [service(then)]


def _claim(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    def pvc(mode: str) -> Obj:
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d"},
                "spec": {"accessModes": [mode], "storageClassName": "none",
                         "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip

    return [pvc("ReadWriteOnce")], [pvc("ReadWriteMany")]


def _stuck_job(image: str) -> Obj:
    """A Job whose pod waits for a node it will never get: active for ever."""
    body = job(image)
    body["spec"]["template"]["spec"]["nodeSelector"] = {"example.org/none": "x"}
    return body


def _active_job(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    return [_stuck_job("registry.invalid/m:1")], [_stuck_job("registry.invalid/m:2")]


def _active(shop: Shop) -> None:
    from tests.support.waiting import until

    def counted() -> Obj | None:
        live = shop.live("batch/v1", "Job", "migrate")
        return live if live and (live.get("status") or {}).get("active") else None

    until("the Job counts its pending pod active", counted)


def _owned(shop: Shop) -> tuple[list[Obj], list[Obj]]:
    owner = shop.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    ref = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner["metadata"]["uid"], "controller": True}]  # fmt: skip
    first, then = job("registry.invalid/m:1"), job("registry.invalid/m:2")
    for body in (first, then):
        body["metadata"]["ownerReferences"] = ref
    return [first], [then]


CASES = (
    Case("claim-shrinks", "statefulset/db", ("apps/v1", "StatefulSet"),
         "shrinks from 1Gi to 512Mi", _shrink, _two_running),
    Case("no-volume-expansion", "statefulset/db", ("apps/v1", "StatefulSet"),
         "does not allow volume expansion", _no_expansion, _forbid_expansion),
    Case("pods-do-not-fit", "deployment/web", ("apps/v1", "Deployment"),
         "lack the new selector's labels", _selector, _two_running),
    Case("immutable-configmap", "configmap/settings", ("v1", "ConfigMap"),
         "content-hashed name", _configmap),
    Case("new-cluster-ip", "service/web", ("v1", "Service"), "--allow-new-ip", _service),
    Case("claim-spec", "persistentvolumeclaim/d", ("v1", "PersistentVolumeClaim"),
         "release its volume and its data", _claim),
    Case("active-job", "job/migrate", ("batch/v1", "Job"), "is running (1 active pod(s))",
         _active_job, _active),
    Case("controlled-object", "job/migrate", ("batch/v1", "Job"),
         "controlled by ConfigMap/owner, which would recreate it first", _owned),
)  # fmt: skip
