"""Immutable-field knowledge: CRD transition rules and the built-in table (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl.core.drift.immutability import (
    BUILTIN_SOURCE,
    IMMUTABLE,
    TRANSITION,
    WHEN_IMMUTABLE_FLAG,
    FieldRule,
    builtin_rules,
    expand,
    get_path,
    is_builtin_group,
    rules_from_crd,
    split_path,
    without,
)
from fracctl.core.fractions.crd import fractioning_crd

SELECTOR_MESSAGE = (
    "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
)


def crd_with(schema: dict[str, Any], *, versions: list[str] | None = None) -> dict[str, Any]:
    names = versions or ["v1"]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.org"},
        "spec": {
            "versions": [
                {
                    "name": n,
                    "storage": i == len(names) - 1,
                    "schema": {"openAPIV3Schema": schema},
                }
                for i, n in enumerate(names)
            ]
        },
    }


def test_the_fractioning_crd_yields_exactly_the_selector_rule() -> None:
    crd = fractioning_crd(
        group="gpu-fractioning.kai.scheduler",
        kind="GpuFractioningConfig",
        plural="gpufractioningconfigs",
    )
    rules = rules_from_crd(crd)
    assert rules == [
        FieldRule("spec.nodeSelector", IMMUTABLE, SELECTOR_MESSAGE, "self == oldSelf"),
    ]


def test_rules_without_old_self_are_not_transition_rules() -> None:
    crd = crd_with(
        {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.metadata.name == 'x'", "message": "m"}],
            "properties": {"spec": {"type": "object"}},
        }
    )
    assert rules_from_crd(crd) == []


def test_other_old_self_rules_are_transition_constrained_with_their_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {
                        "type": "integer",
                        "x-kubernetes-validations": [
                            {"rule": "self >= oldSelf", "message": "size may only grow"}
                        ],
                    },
                    "disks": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {
                                    "type": "string",
                                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                                }
                            },
                        },
                    },
                    "labels": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "string",
                            "x-kubernetes-validations": [
                                {"rule": "oldSelf == self", "messageExpression": "'fixed'"}
                            ],
                        },
                    },
                },
            }
        },
    }
    rules = rules_from_crd(crd_with(schema))
    assert [(r.path, r.constraint) for r in rules] == [
        ("spec.size", TRANSITION),
        ("spec.disks[*].name", IMMUTABLE),
        ("spec.labels.*", IMMUTABLE),
    ]
    assert rules[0].message == "size may only grow"
    assert rules[1].message == "failed rule: self == oldSelf"
    assert rules[2].message == "'fixed'"


def test_a_rule_on_the_object_comparing_a_sub_field_guards_that_field() -> None:
    schema = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.spec.mode == oldSelf.spec.mode", "message": "mode is fixed"},
            {
                "rule": "!has(oldSelf.spec.zone) || self.spec.zone == oldSelf.spec.zone",
                "message": "zone set once",
            },
        ],
    }
    rules = rules_from_crd(crd_with(schema))
    assert [(r.path, r.constraint, r.message) for r in rules] == [
        ("spec.mode", IMMUTABLE, "mode is fixed"),
        ("spec.zone", TRANSITION, "zone set once"),
    ]


def test_a_root_rule_without_a_sub_path_guards_the_spec() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    assert rules_from_crd(crd_with(schema))[0].path == "spec"


def test_the_version_asked_for_is_the_schema_read() -> None:
    crd = crd_with(
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                }
            },
        },
        versions=["v1alpha1", "v1"],
    )
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {"type": "object"}
    assert rules_from_crd(crd, "v1alpha1") == []
    assert [r.path for r in rules_from_crd(crd, "v1")] == ["spec"]
    assert [r.path for r in rules_from_crd(crd)] == ["spec"]  # the storage version
    assert rules_from_crd(crd, "v9") == []


@pytest.mark.parametrize(
    ("group", "kind", "paths"),
    [
        ("apps", "Deployment", ["spec.selector"]),
        ("apps", "ReplicaSet", ["spec.selector"]),
        ("apps", "DaemonSet", ["spec.selector"]),
        ("batch", "Job", ["spec.selector", "spec.template", "spec.completionMode"]),
        ("", "Service", ["spec.clusterIP", "spec.clusterIPs"]),
        ("apps", "StatefulSet", ["spec"]),
        ("", "PersistentVolumeClaim", ["spec"]),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding", ["roleRef"]),
    ],
)
def test_builtin_table(group: str, kind: str, paths: list[str]) -> None:
    rules = builtin_rules(group, kind)
    assert [r.path for r in rules] == paths
    assert all(r.source == BUILTIN_SOURCE and r.constraint == IMMUTABLE for r in rules)


def test_statefulset_and_pvc_rules_leave_the_updatable_fields_out() -> None:
    (sts,) = builtin_rules("apps", "StatefulSet")
    assert set(sts.except_paths) == {
        "spec.replicas",
        "spec.ordinals",
        "spec.template",
        "spec.updateStrategy",
        "spec.persistentVolumeClaimRetentionPolicy",
        "spec.minReadySeconds",
    }
    assert "Forbidden: updates to statefulset spec" in sts.message
    (pvc,) = builtin_rules("", "PersistentVolumeClaim")
    assert "spec.resources.requests" in pvc.except_paths


def test_configmap_data_is_guarded_only_when_the_live_object_is_immutable() -> None:
    rules = builtin_rules("", "ConfigMap")
    data = next(r for r in rules if r.path == "data")
    assert data.when == WHEN_IMMUTABLE_FLAG
    assert data.applies_to({"immutable": True, "data": {}})
    assert not data.applies_to({"data": {}})
    assert not data.applies_to({"immutable": False})
    assert not data.applies_to(None)
    assert {r.path for r in builtin_rules("", "Secret")} >= {"data", "stringData", "type"}


def test_unknown_kinds_have_no_builtin_rules() -> None:
    assert builtin_rules("example.org", "Thing") == []
    assert builtin_rules("", "Pod") == []


@pytest.mark.parametrize(
    ("group", "builtin"),
    [
        ("", True),
        ("apps", True),
        ("rbac.authorization.k8s.io", True),
        ("gpu-fractioning.kai.scheduler", False),
    ],
)
def test_builtin_groups(group: str, builtin: bool) -> None:
    assert is_builtin_group(group) is builtin


def test_paths_split_expand_and_read() -> None:
    assert split_path("spec.items[*].name") == ["spec", "items", "[*]", "name"]
    assert split_path("spec.labels.*") == ["spec", "labels", "*"]
    live = {"spec": {"items": [{"name": "a"}, {"name": "b"}], "labels": {"x": "1"}}}
    desired = {"spec": {"items": [{"name": "a"}], "labels": {"y": "2"}}}
    assert expand("spec.items[*].name", live, desired) == [
        "spec.items[0].name",
        "spec.items[1].name",
    ]
    assert expand("spec.labels.*", live, desired) == ["spec.labels.x", "spec.labels.y"]
    assert expand("spec.nodeSelector", {"spec": {}}, None) == ["spec.nodeSelector"]
    assert expand("spec.x[*].y", {"spec": {}}) == []
    assert get_path(live, "spec.items[1].name") == "b"
    assert get_path(live, "spec.items[5].name") is None
    assert get_path(live, "spec.labels.x") == "1"
    assert get_path(live, "spec.items.name") is None
    assert get_path(None, "spec") is None


def test_without_drops_the_exempt_sub_paths() -> None:
    spec = {"replicas": 3, "serviceName": "db", "template": {"a": 1}, "x": {"y": 1, "z": 2}}
    assert without(spec, "spec", ["spec.replicas", "spec.template", "spec.x.z"]) == {
        "serviceName": "db",
        "x": {"y": 1},
    }
    assert spec["replicas"] == 3  # not modified in place
    assert without("scalar", "spec", ["spec.a"]) == "scalar"
    assert without({"a": 1}, "spec", ["other.a"]) == {"a": 1}


def test_rule_to_dict_is_plain_data() -> None:
    (r,) = builtin_rules("apps", "Deployment")
    assert r.to_dict()["path"] == "spec.selector"
    assert r.to_dict()["source"] == "built-in"
