"""Which procedure each kind gets, and every refusal, judged from drift and facts."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl.core.drift import FieldDiff, ObjectDrift, immutable_diffs
from fracctl.core.drift.immutability import builtin_rules
from fracctl.core.kube.resources import split_api_version
from fracctl.core.procedures import (
    BRIDGE,
    GUARDED,
    NEW_IP,
    ORPHAN_ADOPT,
    RERUN,
    SURGE,
    Facts,
    Procedure,
    Refusal,
    choose,
)

TARGET = ("gpu-fractioning.kai.scheduler", "GpuFractioningConfig", "default")
Obj = dict[str, Any]


def drift(live: Obj, desired: Obj) -> ObjectDrift:
    """The drift the judge reports: the built-in rules' differing fields."""
    group, _ = split_api_version(desired["apiVersion"])
    meta = desired["metadata"]
    return ObjectDrift(
        desired["apiVersion"], desired["kind"], meta.get("namespace", ""), meta["name"],
        "needs-recreate", live=live, desired=desired,
        fields=immutable_diffs(live, desired, builtin_rules(group, desired["kind"])),
    )  # fmt: skip


def sts(*, size: str = "1Gi", service: str = "db", selector: str = "db", cls: str = "fast",
        when_deleted: str = "Retain", extra: Obj | None = None) -> Obj:  # fmt: skip
    tpl = {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
        "resources": {"requests": {"storage": size}}}}  # fmt: skip
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop", **(extra or {})},
        "spec": {"serviceName": service, "replicas": 2,
                 "selector": {"matchLabels": {"app": selector}},
                 "persistentVolumeClaimRetentionPolicy": {"whenDeleted": when_deleted},
                 "template": {"metadata": {"labels": {"app": selector}}},
                 "volumeClaimTemplates": [tpl]},
    }  # fmt: skip


def claim(name: str, size: str = "1Gi", cls: str = "fast") -> Obj:
    return {"metadata": {"name": name, "namespace": "shop"},
            "spec": {"storageClassName": cls,
                     "resources": {"requests": {"storage": size}}}}  # fmt: skip


def facts(**kw: Any) -> Facts:
    claims = {n: claim(n) for n in ("data-db-0", "data-db-1")}
    base: dict[str, Any] = {
        "claims": claims,
        "storage_classes": {"fast": {"allowVolumeExpansion": True}, "slow": {}},
        "pods": [pod("db-0", app="db"), pod("db-1", app="db")],
    }
    return Facts(**{**base, **kw})


def pod(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def procedure(choice: Any) -> Procedure:
    assert isinstance(choice, Procedure), choice
    return choice


def refusal(choice: Any) -> Refusal:
    assert isinstance(choice, Refusal), choice
    return choice


# --- StatefulSet ---------------------------------------------------------------------------


def test_a_statefulset_service_name_is_orphaned_and_adopted() -> None:
    p = procedure(choose(drift(sts(), sts(service="db-headless")), facts(), target=TARGET))
    assert p.name == ORPHAN_ADOPT and p.loses == "" and p.expand == ()
    assert "delete StatefulSet/shop/db with propagationPolicy Orphan" in p.steps[0]
    assert any("adopted every pod (2)" in s for s in p.steps)


def test_growing_claims_expands_each_existing_claim_first() -> None:
    p = procedure(choose(drift(sts(), sts(size="5Gi")), facts(), target=TARGET))
    assert p.expand == (("data-db-0", "1Gi", "5Gi"), ("data-db-1", "1Gi", "5Gi"))
    assert p.steps[:2] == ("expand claim data-db-0 from 1Gi to 5Gi",
                           "expand claim data-db-1 from 1Gi to 5Gi")  # fmt: skip


def test_a_claim_already_grown_is_not_patched_again() -> None:
    f = facts()
    f.claims["data-db-0"] = claim("data-db-0", "5Gi")
    p = procedure(choose(drift(sts(), sts(size="5Gi")), f, target=TARGET))
    assert p.expand == (("data-db-1", "1Gi", "5Gi"),)


def test_shrinking_a_claim_template_is_refused() -> None:
    r = refusal(choose(drift(sts(size="5Gi"), sts(size="1Gi")), facts(), target=TARGET))
    assert "shrinks from 5Gi to 1Gi" in r.reason and "5Gi or more" in r.fix


def test_growth_without_expansion_in_the_class_is_refused() -> None:
    f = facts(claims={"data-db-0": claim("data-db-0", cls="slow")})
    r = refusal(choose(drift(sts(cls="slow"), sts(cls="slow", size="5Gi")), f, target=TARGET))
    assert "StorageClass slow does not allow volume expansion" in r.reason
    assert "allowVolumeExpansion: true" in r.fix


def test_a_template_change_beyond_its_size_is_refused() -> None:
    r = refusal(choose(drift(sts(), sts(cls="slow")), facts(), target=TARGET))
    assert "claim template data changes more than its size" in r.reason


def test_a_new_statefulset_selector_is_refused() -> None:
    r = refusal(choose(drift(sts(), sts(selector="db2")), facts(), target=TARGET))
    assert r.reason.startswith("spec.selector changes")


def test_when_deleted_delete_is_named_in_the_plan() -> None:
    live, desired = sts(when_deleted="Delete"), sts(service="x", when_deleted="Delete")
    p = procedure(choose(drift(live, desired), facts(), target=TARGET))
    assert any("only the orphan delete is allowed" in n for n in p.notes)


# --- every kind ----------------------------------------------------------------------------


def test_an_object_with_a_controller_is_refused() -> None:
    owner = {"ownerReferences": [{"kind": "Shop", "name": "main", "controller": True}]}
    r = refusal(choose(drift(sts(extra=owner), sts(service="x")), facts(), target=TARGET))
    assert "controlled by Shop/main" in r.reason


def test_two_gitops_owners_are_refused() -> None:
    marks = {
        "labels": {"kustomize.toolkit.fluxcd.io/name": "apps"},
        "annotations": {"argocd.argoproj.io/tracking-id": "shop:apps/StatefulSet:shop/db"},
    }
    r = refusal(choose(drift(sts(extra=marks), sts(service="x")), facts(), target=TARGET))
    assert "Flux Kustomization apps and Argo CD Application shop" in r.reason


def test_a_difference_from_defaulting_is_refused_with_the_line_for_git() -> None:
    d = ObjectDrift("v1", "Service", "shop", "web", "needs-recreate",
                    fields=[FieldDiff("spec.clusterIP", "10.0.0.7", "")])  # fmt: skip
    r = refusal(choose(d, Facts(), target=TARGET))
    assert "differs only by defaulting" in r.reason and "clusterIP: 10.0.0.7" in r.fix


def test_the_fractioning_config_keeps_its_guarded_procedure() -> None:
    d = ObjectDrift(f"{TARGET[0]}/v1alpha1", TARGET[1], "", "default", "needs-recreate")
    p = procedure(choose(d, Facts(), target=TARGET))
    assert p.name == GUARDED and "MPS daemons" in p.loses


def test_a_kind_without_a_procedure_is_refused() -> None:
    d = ObjectDrift("storage.k8s.io/v1", "StorageClass", "", "fast", "needs-recreate",
                    fields=[FieldDiff("provisioner", "a", "b")])  # fmt: skip
    r = refusal(choose(d, Facts(), target=TARGET))
    assert "no safe procedure for a StorageClass" in r.reason


# --- Deployment, DaemonSet -----------------------------------------------------------------


def deploy(kind: str, selector: Obj) -> Obj:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": selector}}}  # fmt: skip


@pytest.mark.parametrize("kind", ["Deployment", "DaemonSet"])
def test_a_new_selector_the_pods_already_fit_is_orphaned_and_adopted(kind: str) -> None:
    d = drift(deploy(kind, {"app": "web"}), deploy(kind, {"app": "web", "tier": "front"}))
    pods = [pod("web-1", app="web", tier="front")]
    p = procedure(choose(d, Facts(pods=pods), target=TARGET))
    assert p.name == ORPHAN_ADOPT and p.loses == ""
    assert ("delete the ReplicaSets left without pods that nothing adopted" in p.steps) is (
        kind == "Deployment"
    )


@pytest.mark.parametrize("kind", ["Deployment", "DaemonSet"])
def test_a_new_selector_the_pods_do_not_fit_is_refused_with_two_commits(kind: str) -> None:
    d = drift(deploy(kind, {"app": "web"}), deploy(kind, {"app": "web", "tier": "front"}))
    r = refusal(choose(d, Facts(pods=[pod("web-1", app="web")]), target=TARGET))
    assert "1 of 1 pod(s) lack the new selector's labels (e.g. web-1)" in r.reason
    assert "first add {'app': 'web', 'tier': 'front'} to spec.template.metadata.labels" in r.fix


def templated(kind: str, labels: Obj) -> Obj:
    """A workload whose selector and template labels are both ``labels``."""
    obj = deploy(kind, labels)
    obj["spec"]["template"] = {"metadata": {"labels": labels}}
    return obj


def service(name: str, selector: Obj) -> Obj:
    return {"metadata": {"name": name, "namespace": "shop"}, "spec": {"selector": selector}}


def test_a_deployment_whose_pods_do_not_fit_surges_behind_a_service_selecting_both() -> None:
    d = drift(templated("Deployment", {"app": "web"}),
              templated("Deployment", {"app": "web", "tier": "front"}))  # fmt: skip
    services = [service("other", {"app": "db"}), service("web", {"app": "web"})]
    p = procedure(choose(d, Facts(pods=[pod("web-1", app="web")], services=services),
                         target=TARGET))  # fmt: skip
    assert p.name == SURGE
    assert p.loses == "its 1 pod(s), replaced by new ones once those are available"
    assert any("Service web selects both" in step for step in p.steps)
    assert p.steps[-1].startswith("delete the old ReplicaSets")


@pytest.mark.parametrize(
    ("kind", "selects"),
    [
        ("Deployment", {"app": "web", "tier": "back"}),  # only the old pods: no
        ("Deployment", {"tier": "front"}),  # only git's template: no
        ("Deployment", {}),  # a Service without a selector selects nothing by itself
        ("DaemonSet", {"app": "web"}),  # no surge for a DaemonSet: one pod per node
    ],
)
def test_no_surge_without_a_service_that_selects_both(kind: str, selects: Obj) -> None:
    d = drift(templated(kind, {"app": "web", "tier": "back"}),
              templated(kind, {"app": "web", "tier": "front"}))  # fmt: skip
    facts = Facts(pods=[pod("web-1", app="web", tier="back")],
                  services=[service("web", selects)])  # fmt: skip
    r = refusal(choose(d, facts, target=TARGET))
    assert "lack the new selector's labels" in r.reason
    assert ("a Service that selects both" in r.fix) is (kind == "Deployment")


# --- Job, bindings, Service, refused kinds -------------------------------------------------


def job(active: int, image: str) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "m", "namespace": "shop"},
            "spec": {"template": {"spec": {"containers": [{"name": "m", "image": image}]}}},
            "status": {"active": active}}  # fmt: skip


def test_a_finished_job_runs_again_and_the_plan_says_so() -> None:
    p = procedure(choose(drift(job(0, "a"), job(0, "b")), Facts(), target=TARGET))
    assert p.name == RERUN and p.loses == "a run of the Job from the start"
    assert "propagationPolicy Background" in p.steps[0]


def test_a_running_job_is_refused_unless_asked() -> None:
    d = drift(job(2, "a"), job(0, "b"))
    assert "running (2 active pod(s))" in refusal(choose(d, Facts(), target=TARGET)).reason
    p = procedure(choose(d, Facts(allow_active=True), target=TARGET))
    assert p.loses.endswith("and its 2 running pod(s) are killed")


@pytest.mark.parametrize("kind", ["RoleBinding", "ClusterRoleBinding"])
def test_a_binding_gets_a_bridge(kind: str) -> None:
    def rb(role: str) -> Obj:
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                "metadata": {"name": "readers"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": role}}  # fmt: skip

    p = procedure(choose(drift(rb("view"), rb("edit")), Facts(), target=TARGET))
    assert p.name == BRIDGE and p.loses == ""
    assert p.steps[0].startswith(f"create the bridge {kind} readers-fracctl-bridge")
    assert "old roleRef ClusterRole/view" in p.steps[0]


def test_a_new_cluster_ip_is_refused_unless_allowed() -> None:
    def svc(ip: str) -> Obj:
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "s"},
                "spec": {"clusterIP": ip}}  # fmt: skip

    d = drift(svc("10.0.0.7"), svc("None"))
    assert "new cluster IP (10.0.0.7 -> None)" in refusal(choose(d, Facts(), target=TARGET)).reason
    p = procedure(choose(d, Facts(allow_new_ip=True), target=TARGET))
    assert p.name == NEW_IP and "the cluster IP 10.0.0.7" in p.loses


@pytest.mark.parametrize(
    ("api_version", "kind", "field", "words"),
    [
        ("v1", "PersistentVolumeClaim", "spec.accessModes", "release its volume"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "spec.scope", "every object"),
        ("v1", "ConfigMap", "data", "content-hashed name (kustomize's configMapGenerator)"),
        ("v1", "Secret", "data", "content-hashed name (kustomize's secretGenerator)"),
    ],
)
def test_kinds_that_are_never_recreated(
    api_version: str, kind: str, field: str, words: str
) -> None:
    d = ObjectDrift(api_version, kind, "shop", "x", "needs-recreate",
                    fields=[FieldDiff(field, "a", "b")])  # fmt: skip
    r = refusal(choose(d, Facts(), target=TARGET))
    assert words in f"{r.reason} {r.fix}"
