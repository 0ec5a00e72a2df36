"""Pure drift comparisons, rejection reading and CI report formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml

from fracctl.core import drift as d
from fracctl.core.drift import rejection
from fracctl.core.drift.immutability import builtin_rules, rules_from_crd
from fracctl.core.drift.report import annotation, describe, to_github, to_junit, value_text
from fracctl.core.fractions.crd import fractioning_crd
from fracctl.core.gitops.helm_release import hook_of
from fracctl.errors import Cause

CEL = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
RULES = rules_from_crd(
    fractioning_crd(
        group="gpu-fractioning.kai.scheduler",
        kind="GpuFractioningConfig",
        plural="gpufractioningconfigs",
    )
)


def gfc(selector: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gpu-fractioning.kai.scheduler/v1alpha1",
        "kind": "GpuFractioningConfig",
        "metadata": {"name": "default"},
        "spec": {"nodeSelector": selector, **spec},
    }


def deployment(labels: dict[str, str], replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


# --- comparing ---------------------------------------------------------------------------


def test_the_incident_selector_change_is_an_immutable_diff() -> None:
    live = gfc({"example.org/gpu-class": "rtx-pro-6000"}, runtimeClassName="nvidia")
    desired = gfc({"example.org/gpu-fractions": "enabled"})
    (f,) = d.immutable_diffs(live, desired, RULES)
    assert f.path == "spec.nodeSelector"
    assert f.live == {"example.org/gpu-class": "rtx-pro-6000"}
    assert f.desired == {"example.org/gpu-fractions": "enabled"}
    assert f.constraint == "immutable"
    assert f.message == CEL


def test_a_selector_map_is_compared_whole_not_as_a_subset() -> None:
    live = gfc({"a": "1", "b": "2"})
    assert d.immutable_diffs(live, gfc({"a": "1"}), RULES)
    assert not d.immutable_diffs(live, gfc({"b": "2", "a": "1"}), RULES)


def test_server_defaults_are_not_differences() -> None:
    live = deployment({"app": "web"})
    live["spec"]["template"]["spec"]["containers"][0].update(
        {"imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log"}
    )
    live["spec"]["strategy"] = {"type": "RollingUpdate"}
    live["metadata"].update({"uid": "u", "resourceVersion": "7", "generation": 2})
    live["status"] = {"replicas": 1}
    desired = deployment({"app": "web"})
    assert d.changed_fields(live, desired) == []
    assert d.immutable_diffs(live, desired, builtin_rules("apps", "Deployment")) == []


def test_changed_fields_names_each_differing_path() -> None:
    changes = d.changed_fields(deployment({"app": "web"}), deployment({"app": "web"}, 3))
    assert [(c.path, c.live, c.desired) for c in changes] == [("spec.replicas", 1, 3)]


def test_deployment_selector_change_is_immutable_but_replicas_are_not() -> None:
    rules = builtin_rules("apps", "Deployment")
    live = deployment({"app": "web"})
    (f,) = d.immutable_diffs(live, deployment({"app": "web-v2"}), rules)
    assert (f.path, f.source) == ("spec.selector", "built-in")
    assert d.immutable_diffs(live, deployment({"app": "web"}, 5), rules) == []


def test_statefulset_changes_only_outside_the_updatable_fields_count() -> None:
    rules = builtin_rules("apps", "StatefulSet")
    live = {"spec": {"replicas": 1, "serviceName": "db", "template": {"x": 1}}}
    assert d.immutable_diffs(live, {"spec": {"replicas": 3, "template": {"x": 2}}}, rules) == []
    (f,) = d.immutable_diffs(live, {"spec": {"serviceName": "db2"}}, rules)
    assert f.path == "spec"
    assert f.live == {"serviceName": "db"}
    assert f.desired == {"serviceName": "db2"}


def test_configmap_data_only_guarded_when_immutable() -> None:
    rules = builtin_rules("", "ConfigMap")
    live = {"data": {"a": "1"}}
    assert d.immutable_diffs(live, {"data": {"a": "2"}}, rules) == []
    live["immutable"] = True  # type: ignore[assignment]
    assert [f.path for f in d.immutable_diffs(live, {"data": {"a": "2"}}, rules)] == ["data"]


def test_subset_equal_edge_cases() -> None:
    assert d.subset_equal({"a": 1}, None)
    assert d.subset_equal(None, {})
    assert not d.subset_equal({"a": 1}, {})
    assert d.subset_equal(1, 1.0)
    assert not d.subset_equal(True, 1)
    assert not d.subset_equal([1, 2], [1])
    assert not d.subset_equal("x", {"a": 1})
    assert not d.subset_equal({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}})  # a label map
    assert d.subset_equal({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, exact_maps=False)
    assert d.subset_equal({"a": {"b": [1], "c": 2}}, {"a": {"b": [1]}})  # not a label map


def test_update_changes_compares_both_sides_but_not_server_metadata() -> None:
    live = deployment({"app": "web"})
    live["metadata"]["managedFields"] = [{"manager": "x"}]
    after = deployment({"app": "web"}, 2)
    after["metadata"]["managedFields"] = [{"manager": "fracctl"}]
    after["metadata"]["resourceVersion"] = "9"
    assert [c.path for c in d.update_changes(live, after)] == ["spec.replicas"]
    assert d.update_changes(live, deployment({"app": "web"})) == []


def test_diff_paths_is_bounded() -> None:
    live = {str(i): i for i in range(50)}
    desired = {str(i): i + 1 for i in range(50)}
    assert len(d.diff_paths(live, desired, limit=7)) == 7


def test_apply_body_drops_status_and_server_metadata_and_sets_the_namespace() -> None:
    obj = deployment({"app": "web"})
    obj["metadata"].update({"resourceVersion": "1", "uid": "u", "namespace": ""})
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    obj["status"] = {"x": 1}
    body = d.apply_body(obj, "team")
    assert body["metadata"] == {"name": "web", "namespace": "team"}
    assert "status" not in body


# --- reading rejections ---------------------------------------------------------------------


def test_a_prefixed_cel_message_is_an_immutable_rejection() -> None:
    cause = Cause("FieldValueInvalid", f'Invalid value: "object": {CEL}', "spec.nodeSelector")
    assert rejection.is_immutable_rejection([cause], "", RULES)


def test_a_cel_rule_without_the_word_immutable_is_recognised_by_its_field() -> None:
    schema_rules = RULES
    cause = Cause("FieldValueInvalid", 'Invalid value: "object": must stay', "spec.nodeSelector")
    assert rejection.is_immutable_rejection([cause], "", schema_rules)
    other = Cause("FieldValueInvalid", "Invalid value: 3: out of range", "spec.replicas")
    assert not rejection.is_immutable_rejection([other], "", schema_rules)


def test_wildcard_rule_paths_match_concrete_cause_fields() -> None:
    crd = {
        "spec": {
            "versions": [
                {
                    "name": "v1",
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "properties": {
                                "spec": {
                                    "properties": {
                                        "disks": {
                                            "items": {
                                                "properties": {
                                                    "name": {
                                                        "x-kubernetes-validations": [
                                                            {"rule": "self >= oldSelf"}
                                                        ]
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    },
                }
            ]
        }
    }
    rules = rules_from_crd(crd)
    hit = Cause("FieldValueInvalid", "Invalid value: x", "spec.disks[2].name")
    miss = Cause("FieldValueInvalid", "Invalid value: x", "spec.disks[2].size")
    assert rejection.is_immutable_rejection([hit], "", rules)
    assert not rejection.is_immutable_rejection([miss], "", rules)


def test_builtin_immutable_and_statefulset_messages() -> None:
    sel = Cause(
        "FieldValueInvalid",
        "Invalid value: v1.LabelSelector{...}: field is immutable",
        "spec.selector",
    )
    assert rejection.is_immutable_rejection([sel], "", [])
    sts = Cause(
        "FieldValueForbidden",
        "Forbidden: updates to statefulset spec for fields other than 'replicas' ... forbidden",
        "spec",
    )
    assert rejection.is_immutable_rejection([sts], "", [])
    assert rejection.is_immutable_rejection([], "x: field is immutable", [])
    assert not rejection.is_immutable_rejection([], "spec.replicas: must be >= 0", [])


def test_fields_from_causes_adds_only_new_paths() -> None:
    live = deployment({"app": "web"})
    desired = deployment({"app": "v2"})
    known = [d.FieldDiff("spec.selector", 1, 2)]
    causes = [
        Cause("FieldValueInvalid", "field is immutable", "spec.selector"),
        Cause("FieldValueInvalid", "field is immutable", "spec.selector.matchLabels"),
        Cause("FieldValueInvalid", "`selector` does not match", "spec.template.metadata.labels"),
        Cause("FieldValueInvalid", "no field", ""),
    ]
    (extra,) = rejection.fields_from_causes(causes, live, desired, known)
    assert extra.path == "spec.template.metadata.labels"
    assert extra.live == {"app": "web"}
    assert extra.desired == {"app": "v2"}
    assert extra.source == "api-server"


def test_causes_about_the_whole_object_are_not_fields() -> None:
    # what the API server adds after "Required value" or a type error on a CEL-guarded map
    nil = Cause(
        "FieldValueInvalid",
        "Invalid value: null: some validation rules were not checked because the object "
        "was invalid; correct the existing errors to complete validation",
        "<nil>",
    )
    known = [d.FieldDiff("spec.nodeSelector", {"a": "b"}, {})]
    assert rejection.fields_from_causes([nil], gfc({"a": "b"}), gfc({}), known) == []
    assert not rejection.is_field_path("<nil>") and not rejection.is_field_path("")
    assert rejection.is_field_path("spec.template.spec.containers[0].image")


def test_guarded_fields_an_apply_left_alone_are_found_and_patched_alone() -> None:
    live_sel = {"a": "1", "b": "2"}
    f = d.FieldDiff("spec.nodeSelector", live_sel, {"b": "2"})
    # server-side apply kept "a" (another field manager owns it)
    assert d.unapplied(gfc(live_sel), [f]) == [f]
    assert d.unapplied(gfc({"b": "2"}), [f]) == []
    assert d.set_fields_patch([f]) == [
        {"op": "add", "path": "/spec/nodeSelector", "value": {"b": "2"}}
    ]
    assert d.json_pointer("spec.containers[2].env~x/y") == "/spec/containers/2/env~0x~1y"


def test_the_next_step_names_the_kinds_procedure_or_the_refusal() -> None:
    from fracctl.core.procedures import Facts, choose, next_step

    target = ("gpu-fractioning.kai.scheduler", "GpuFractioningConfig", "default")
    o = d.ObjectDrift(
        "gpu-fractioning.kai.scheduler/v1alpha1",
        "GpuFractioningConfig",
        "",
        "default",
        d.NEEDS_RECREATE,
    )
    assert "fracctl recreate runs it guarded" in next_step(o, choose(o, Facts(), target=target))
    job = d.ObjectDrift("batch/v1", "Job", "web", "migrate", d.NEEDS_RECREATE, live={})
    step = next_step(job, choose(job, Facts(), target=target))
    assert "fracctl recreate Job/migrate -n web --backend apply runs the rerun procedure" in step
    assert "it costs a run of the Job from the start" in step
    job.next_step = step
    assert f"Next: {step}" in describe(job)
    pvc = d.ObjectDrift("v1", "PersistentVolumeClaim", "web", "data", d.NEEDS_RECREATE)
    assert next_step(pvc, choose(pvc, Facts(), target=target)).startswith("no safe recreate: ")
    # without a step from the flow, the hint names no command
    assert "fracctl recreate" not in describe(
        d.ObjectDrift("apps/v1", "Deployment", "web", "api", d.NEEDS_RECREATE)
    )


def report() -> d.DriftReport:
    bad = d.ObjectDrift(
        "gpu-fractioning.kai.scheduler/v1alpha1",
        "GpuFractioningConfig",
        "",
        "default",
        d.NEEDS_RECREATE,
        fields=[
            d.FieldDiff(
                "spec.nodeSelector",
                {"example.org/gpu-class": "rtx-pro-6000"},
                {"example.org/gpu-fractions": "enabled"},
                "immutable",
                CEL,
                "crd",
            )
        ],
        message=f'GpuFractioningConfig "default" is invalid: spec.nodeSelector: {CEL}',
        location=d.Location("gpu-fractioning/gpufractioningconfig.yaml", 9),
        argocd={"status": "Synced"},
    )
    ok = d.ObjectDrift("v1", "ConfigMap", "ns", "cm", d.IN_SYNC)
    moved = d.ObjectDrift(
        "apps/v1",
        "Deployment",
        "ns",
        "web",
        d.APPLIES_IN_PLACE,
        changes=[d.FieldDiff("spec.replicas", 1, 3)],
    )
    return d.DriftReport(
        objects=[bad, ok, moved],
        source={"repo": "r", "revision": "HEAD", "commit": "abc"},
        argocd={"app": "gpu-fractioning", "sync": "Synced"},
        warnings=["Argo CD reports Synced but the live object differs: x"],
    )


def test_report_counts_and_json() -> None:
    r = report()
    assert r.drifted
    assert r.counts()["needs-recreate"] == 1
    assert r.counts()["in-sync"] == 1
    data = json.loads(json.dumps(r.to_dict()))
    assert data["objects"][0]["fields"][0]["path"] == "spec.nodeSelector"
    assert data["objects"][0]["file"] == "gpu-fractioning/gpufractioningconfig.yaml"
    assert r.objects[0].key == "GpuFractioningConfig/default"
    assert r.objects[1].key == "ConfigMap/ns/cm"
    assert not d.DriftReport(objects=[r.objects[1]]).drifted


def test_describe_says_what_differs_what_the_server_said_and_what_to_do() -> None:
    text = describe(report().objects[0])
    assert "spec.nodeSelector is immutable" in text
    assert '{"example.org/gpu-class": "rtx-pro-6000"}' in text
    assert '{"example.org/gpu-fractions": "enabled"}' in text
    assert CEL in text
    assert "Argo CD reports Synced but the live object differs" in text
    assert "Next: only delete + recreate" in text


def test_value_text() -> None:
    assert value_text(None) == "<absent>"
    assert value_text({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
    assert len(value_text("x" * 1000, 20)) == 20


def test_junit_validates_and_fails_the_drifted_cases(tmp_path: Path) -> None:
    path = tmp_path / "drift.xml"
    path.write_text(to_junit(report()))
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    assert suite.tests == 3
    assert suite.failures == 2
    cases = {c.name: c for c in suite}
    assert cases["ConfigMap/ns/cm"].is_passed
    (failure,) = cases["GpuFractioningConfig/default"].result
    assert isinstance(failure, Failure)
    assert failure.type == "needs-recreate"
    assert "spec.nodeSelector" in failure.message
    assert CEL in (failure.text or "")


def test_github_annotations_use_the_error_file_form() -> None:
    out = to_github(report(), "3 objects").splitlines()
    assert out[0].startswith(
        "::error file=gpu-fractioning/gpufractioningconfig.yaml,line=9,title=fracctl drift%3A "
        "needs-recreate%3A GpuFractioningConfig/default (spec.nodeSelector)::"
    )
    assert "%0A" in out[0] and "\n" not in out[0]
    assert out[1].startswith("::error title=")  # no location known
    assert out[2].startswith("::warning title=fracctl drift%3A Argo CD::Argo CD reports Synced")
    assert out[3] == "::notice title=fracctl drift::3 objects"


@pytest.mark.parametrize(
    ("message", "expected"),
    [("50% done\r\n", "50%25 done%0D%0A"), ("a:b,c", "a:b,c")],
)
def test_annotation_escaping(message: str, expected: str) -> None:
    assert annotation("error", message, title="t:1,2") == f"::error title=t%3A1%2C2::{expected}"


def test_a_hook_is_drift_and_its_description_never_says_prune() -> None:
    from fracctl.core.drift import report as drift_report

    hooked = {
        "metadata": {
            "name": "default",
            "annotations": {"helm.sh/hook": "post-install,post-upgrade"},
        }
    }
    plain = {"metadata": {"name": "default"}}
    assert hook_of(plain, plain) is None
    from_git = hook_of(plain, hooked)
    assert from_git is not None and from_git["source"] == "in the rendering"
    assert from_git["recreated_on"] == ["post-install", "post-upgrade"]
    assert hook_of(hooked, None) == {**from_git, "source": "on the live object"}

    o = d.ObjectDrift(
        "gpu-fractioning.kai.scheduler/v1alpha1", "GpuFractioningConfig", "", "default",
        d.IN_SYNC, hook=from_git, argocd={"status": "Synced"},
    )  # fmt: skip
    assert o.drifted and not o.argocd_claims_synced
    text = drift_report.describe(o)
    assert "a hook (helm.sh/hook=post-install,post-upgrade" in text
    assert "prune" not in text
    o.verdict = d.HOOK
    assert "do not prune it" not in drift_report.describe(o)  # the hook's own step wins
    assert "runbooks/operator-upgrades.md" in drift_report.describe(o)
    assert o.to_dict()["hook"] == from_git


def test_a_hook_fracctl_carries_is_not_drift_while_in_sync() -> None:
    """``recreate.backend: helm``: the chart's hook is the chosen path, said, not a finding."""
    from fracctl.core.drift import report as drift_report

    hook = hook_of(None, {"metadata": {"annotations": {"helm.sh/hook": "post-upgrade"}}})
    assert hook is not None
    carried = {**hook, "carried_by": "fracctl recreate (recreate.backend: helm) runs it"}
    o = d.ObjectDrift("g/v1", "GpuFractioningConfig", "", "default", d.IN_SYNC, hook=carried)
    assert not o.drifted
    text = drift_report.describe(o)
    assert "carried: fracctl recreate (recreate.backend: helm)" in text
    assert "runbooks/operator-upgrades.md" not in text  # no advice to stop the hook
    o.verdict = d.NEEDS_RECREATE
    assert o.drifted  # a carried hook that differs from git still needs the recreate
    assert "Next: " in drift_report.describe(o)


def test_a_whole_spec_field_narrows_to_what_git_changes() -> None:
    """A StatefulSet's rule names ``spec``: what git changes, not the server's defaults."""
    live = {"serviceName": "db", "podManagementPolicy": "OrderedReady",
            "revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": "db"}}}  # fmt: skip
    desired = {"serviceName": "db-v2", "selector": {"matchLabels": {"app": "db"}}}
    (f,) = d.narrow([d.FieldDiff("spec", live, desired, "immutable", "m", "built-in")])
    assert (f.path, f.live, f.desired) == ("spec.serviceName", "db", "db-v2")
    assert (f.constraint, f.message, f.source) == ("immutable", "m", "built-in")
    # A Job's template: the controller's labels are not git's change; the image is.
    live_t = {"metadata": {"labels": {"app": "m", "controller-uid": "u",
                                      "batch.kubernetes.io/controller-uid": "u"}},
              "spec": {"containers": [{"name": "m", "image": "m:1"}]}}  # fmt: skip
    desired_t = {"metadata": {"labels": {"app": "m"}},
                 "spec": {"containers": [{"name": "m", "image": "m:2"}]}}  # fmt: skip
    got = d.narrow([d.FieldDiff("spec.template", live_t, desired_t, "immutable")])
    assert [f.path for f in got] == ["spec.template.spec.containers[0].image"]
    # A selector map stays whole: a key git removed is a change too.
    sel = d.FieldDiff("spec.nodeSelector", {"a": "1", "b": "2"}, {"a": "1"}, "immutable")
    assert d.narrow([sel]) == [sel]
    labels = d.FieldDiff("spec.selector", {"matchLabels": {"a": "1", "b": "2"}},
                         {"matchLabels": {"a": "2"}}, "immutable")  # fmt: skip
    assert d.narrow([labels]) == [labels]


def test_a_go_value_in_an_api_message_is_cut_short() -> None:
    value = (
        'core.PodTemplateSpec{ObjectMeta:v1.ObjectMeta{Name:"", Labels:map[string]string{'
        + "x" * 2000
        + "}}}"
    )
    message = f'Job.batch "m" is invalid: spec.template: Invalid value: {value}: field is immutable'
    short = rejection.short_message(message)
    assert short == (
        'Job.batch "m" is invalid: spec.template: Invalid value: core.PodTemplateSpec{…}: '
        "field is immutable"
    )
    assert rejection.short_message("nodeSelector is immutable") == "nodeSelector is immutable"
    as_json = 'spec.template: Invalid value: {"labels":{"a":"u"},"Spec":{}}: field is immutable'
    assert (
        rejection.short_message(as_json) == "spec.template: Invalid value: {…}: field is immutable"
    )
    cut = 'spec.template: Invalid value: {"labels":{"controller-uid":"u"},"Spec":{"Host'
    assert rejection.short_message(cut) == "spec.template: Invalid value: {…}"


def test_the_restarts_line_names_daemons_nodes_and_pods_or_what_was_not_seen() -> None:
    from fracctl.core.drift.report import restarts_line

    seen = {"daemons": ["mpsd", "fractiond"], "nodes": ["rtx-0"], "pods": ["ml/t-0"],
            "fields": []}  # fmt: skip
    assert restarts_line(seen) == (
        "restarts the mpsd, fractiond daemons on 1 node(s) (rtx-0); 1 fractional pod(s) "
        "there lose their GPU daemon: ml/t-0"
    )
    quiet = {**seen, "pods": []}
    assert restarts_line(quiet).endswith("; no fractional pod runs there")
    unread = {**seen, "nodes": [], "pods": [], "unread": "the nodes and pods there are not "
              "known: nodes is forbidden"}  # fmt: skip
    assert restarts_line(unread) == (
        "restarts the mpsd, fractiond daemons on every selected node; the nodes and pods "
        "there are not known: nodes is forbidden"
    )
