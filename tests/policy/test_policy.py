"""The node opt-in policy, its settings and node names, as plain data."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.config import LabelsConfig
from fracctl.core.fractions.findings import denied_selected, node_findings, selector_findings
from fracctl.core.fractions.policy import (
    PolicyRule,
    Verdict,
    is_denied,
    is_gpu_node,
    label_decision,
    parse_selector,
    product_matches,
    product_words,
    standing,
)
from fracctl.core.kube.nodes import node_name_problems
from fracctl.core.kube.resources import NODES
from fracctl.core.recreate import guard_policy
from fracctl.errors import UsageError

P = LabelsConfig()
CLASS = "example.org/gpu-class"
OPT = {"example.org/gpu-fractions": "enabled"}


def node(cls: str | None = None, *, on: bool = False, **extra: str) -> dict[str, str]:
    labels = {CLASS: cls} if cls else {}
    return {**labels, **(OPT if on else {}), **extra}


@pytest.mark.parametrize(
    ("labels", "verdict"),
    [
        (node("rtx-pro-6000", on=True), Verdict.OK),
        (node("b200"), Verdict.MISSING_OPT_IN),
        (node("h200"), Verdict.EXCLUDED),
        (node("h200", on=True), Verdict.DENIED_OPTED_IN),
        (node("a100", on=True), Verdict.UNKNOWN_CLASS),
        (node(on=True), Verdict.UNKNOWN_CLASS),
        (node("a100"), Verdict.UNCLASSIFIED),
        (node(**{"nvidia.com/gpu.present": "true"}), Verdict.UNCLASSIFIED),
        (node(), Verdict.NOT_GPU),
        ({"example.org/gpu-fractions": "disabled", CLASS: "b200"}, Verdict.MISSING_OPT_IN),
    ],
)
def test_standing(labels: dict[str, str], verdict: Verdict) -> None:
    assert standing("n", labels, P).verdict is verdict


def test_gpu_nodes() -> None:
    assert is_gpu_node(node("b200"), P)
    assert is_gpu_node({"nvidia.com/gpu.present": "true"}, P)
    assert not is_gpu_node({"nvidia.com/gpu.present": "false"}, P)
    assert not is_gpu_node({}, P)


def test_all_good_has_no_findings() -> None:
    nodes = {"rtx-0": node("rtx-pro-6000", on=True), "b200-0": node("b200", on=True),
             "h200-0": node("h200"), "cpu-0": node()}  # fmt: skip
    assert all(f is None for f in node_findings(nodes, P).values())


def test_findings_name_nodes_and_the_fix() -> None:
    nodes = {
        "b200-0": node("b200"),
        "b200-1": node("b200"),
        "h200-0": node("h200", on=True),
        "odd-0": node("a100", on=True),
    }
    f = node_findings(nodes, P)
    missing = f[PolicyRule.MISSING_OPT_IN]
    assert missing is not None
    assert missing.nodes == ("b200-0", "b200-1")
    assert missing.fix == "fracctl nodes label b200-0 b200-1"
    assert "b200-0 (b200)" in missing.message
    denied = f[PolicyRule.DENIED_OPTED_IN]
    assert denied is not None
    assert denied.nodes == ("h200-0",)
    assert "h200-0 (h200)" in denied.message
    assert denied.fix == "fracctl nodes unlabel h200-0"
    unknown = f[PolicyRule.UNKNOWN_CLASS]
    assert unknown is not None
    assert "odd-0 (example.org/gpu-class=a100)" in unknown.message
    assert "fracctl nodes unlabel odd-0" in unknown.fix


def test_long_lists_are_cut() -> None:
    nodes = {f"b200-{i:02}": node("b200") for i in range(13)}
    missing = node_findings(nodes, P)[PolicyRule.MISSING_OPT_IN]
    assert missing is not None
    assert missing.message.endswith("and 3 more")
    assert len(missing.nodes) == 13  # the fix still names every node
    assert missing.fix.endswith("b200-12")


def test_selector_by_opt_in_label_is_clean() -> None:
    nodes = {"rtx-0": node("rtx-pro-6000", on=True), "h200-0": node("h200")}
    assert all(f is None for f in selector_findings(OPT, nodes, P).values())


def test_selector_that_selects_a_denied_node() -> None:
    nodes = {"rtx-0": node("rtx-pro-6000", on=True), "h200-0": node("h200", **{"gpu": "y"})}
    f = selector_findings({"gpu": "y"}, nodes, P)
    denied = f[PolicyRule.SELECTOR_DENIED]
    assert denied is not None and denied.nodes == ("h200-0",)
    assert "gpu=y" in denied.message
    missed = f[PolicyRule.SELECTOR_MISSES]
    assert missed is not None and missed.nodes == ("rtx-0",)


def test_empty_selector_selects_everything() -> None:
    nodes = {"h200-0": node("h200")}
    denied = selector_findings({}, nodes, P)[PolicyRule.SELECTOR_DENIED]
    assert denied is not None
    assert "every node" in denied.message


def test_class_selector_misses_an_opted_in_node() -> None:
    nodes = {"rtx-0": node("rtx-pro-6000", on=True), "b200-0": node("b200", on=True)}
    missed = selector_findings({CLASS: "rtx-pro-6000"}, nodes, P)[PolicyRule.SELECTOR_MISSES]
    assert missed is not None and missed.nodes == ("b200-0",)


@pytest.mark.parametrize(
    ("labels", "allowed", "already"),
    [
        (node("b200"), True, False),
        (node("b200", on=True), True, True),
        (node("h200"), False, False),
        (node("h200", on=True), False, True),
        (node("a100"), False, False),
        (node(), False, False),
    ],
)
def test_label_decision(labels: dict[str, str], allowed: bool, already: bool) -> None:
    d = label_decision("n", labels, P)
    assert (d.allowed, d.already) == (allowed, already)
    assert d.reason


def test_label_decision_reasons() -> None:
    assert "denied class h200" in label_decision("h200-0", node("h200"), P).reason
    assert "no example.org/gpu-class label" in label_decision("x", node(), P).reason
    assert "not allowed" in label_decision("x", node("a100"), P).reason


def test_parse_selector() -> None:
    assert parse_selector(["a=b", "c=d=e", "f="]) == {"a": "b", "c": "d=e", "f": ""}
    assert parse_selector(["a=b", "a=b"]) == {"a": "b"}
    for bad in (["a"], ["=b"], ["a=b", "a=c"]):
        with pytest.raises(ValueError):
            parse_selector(bad)


# --- the GPU product label: the hardware, not only the class label -------------------

PRODUCT = "nvidia.com/gpu.product"


def gpu(cls: str | None, product: str, *, on: bool = False) -> dict[str, str]:
    return node(cls, on=on, **{PRODUCT: product})


@pytest.mark.parametrize(
    "product",
    [
        "NVIDIA-H200",
        "NVIDIA-H200-NVL",
        "NVIDIA-H200-141GB-HBM3e",
        "nvidia-h200-nvl",
        "NVIDIA H200 NVL",
        "H200",
        "NVIDIA-H200-SHARED",
    ],
)
def test_h200_products_are_denied_by_default(product: str) -> None:
    assert product_matches(product, "H200")
    assert is_denied({PRODUCT: product}, P)


@pytest.mark.parametrize(
    "product",
    ["NVIDIA-H20", "NVIDIA-H100", "NVIDIA-H100-80GB-HBM3", "NVIDIA-GH200-480GB", "NVIDIA-B200",
     "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "NVIDIA-H2000", ""],
)  # fmt: skip
def test_other_products_are_not(product: str) -> None:
    assert not product_matches(product, "H200")
    assert not is_denied({PRODUCT: product}, P)


def test_product_patterns() -> None:
    assert product_matches("NVIDIA-H200-NVL", "nvidia-h200")
    assert product_matches("NVIDIA-H200-NVL", "H200-NVL")
    assert not product_matches("NVIDIA-H200", "H200-NVL")
    assert product_matches("NVIDIA-H100-80GB", "H1??")
    assert product_matches("NVIDIA-H200-NVL", "H2*")
    assert not product_matches("NVIDIA-H200", "")
    assert product_words(" NVIDIA-H200_NVL  x ") == ("nvidia", "h200", "nvl", "x")


@pytest.mark.parametrize(
    ("labels", "verdict"),
    [
        # The class label says b200; the hardware says H200: denied, whatever the class.
        (gpu("b200", "NVIDIA-H200", on=True), Verdict.DENIED_OPTED_IN),
        (gpu("b200", "NVIDIA-H200-NVL"), Verdict.CLASS_CONTRADICTS_PRODUCT),
        (gpu(None, "NVIDIA-H200", on=True), Verdict.DENIED_OPTED_IN),
        (gpu(None, "NVIDIA-H200"), Verdict.EXCLUDED),
        (gpu("a100", "nvidia-h200-nvl", on=True), Verdict.DENIED_OPTED_IN),
        (gpu("h200", "NVIDIA-H200-141GB-HBM3e"), Verdict.EXCLUDED),
        (gpu("h200", "NVIDIA-B200"), Verdict.CLASS_CONTRADICTS_PRODUCT),
        (gpu("b200", "NVIDIA-B200", on=True), Verdict.OK),
        (gpu("b200", "NVIDIA-H20", on=True), Verdict.OK),
        (gpu(None, "NVIDIA-B200"), Verdict.UNCLASSIFIED),
    ],
)
def test_standing_checks_the_product(labels: dict[str, str], verdict: Verdict) -> None:
    s = standing("n", labels, P)
    assert s.verdict is verdict
    assert s.product == labels[PRODUCT]


def test_a_product_label_alone_marks_a_gpu_node() -> None:
    assert is_gpu_node({PRODUCT: "NVIDIA-B200"}, P)


def test_an_h200_labelled_b200_is_a_finding_and_never_advised_a_label() -> None:
    nodes = {
        "gpu-7": gpu("b200", "NVIDIA-H200", on=True),
        "gpu-8": gpu("b200", "NVIDIA-H200-NVL"),
        "gpu-9": gpu(None, "NVIDIA-H200", on=True),
    }
    f = node_findings(nodes, P)
    assert f[PolicyRule.MISSING_OPT_IN] is None  # never "fracctl nodes label gpu-8"
    assert f[PolicyRule.UNKNOWN_CLASS] is None  # never "set the class to an allowed one"
    denied = f[PolicyRule.DENIED_OPTED_IN]
    assert denied is not None
    assert denied.nodes == ("gpu-7", "gpu-9")
    assert denied.fix == "fracctl nodes unlabel gpu-7 gpu-9"
    assert "gpu-7 (class b200, product NVIDIA-H200)" in denied.message
    contra = f[PolicyRule.CLASS_CONTRADICTS_PRODUCT]
    assert contra is not None
    assert contra.nodes == ("gpu-7", "gpu-8")
    assert "gpu-8 (class b200, product NVIDIA-H200-NVL)" in contra.message
    assert contra.fix == (
        "correct the class to match the hardware: "
        "kubectl label node gpu-7 gpu-8 example.org/gpu-class=h200 --overwrite"
    )


def test_a_denied_class_on_other_hardware_is_a_contradiction_too() -> None:
    contra = node_findings({"x": gpu("h200", "NVIDIA-B200")}, P)[
        PolicyRule.CLASS_CONTRADICTS_PRODUCT
    ]
    assert contra is not None
    assert contra.fix == "check the hardware of x and correct example.org/gpu-class"


def test_unknown_class_fix_is_unchanged_where_the_product_is_fine() -> None:
    unknown = node_findings({"x": gpu("a100", "NVIDIA-A100", on=True)}, P)[PolicyRule.UNKNOWN_CLASS]
    assert unknown is not None
    assert "set example.org/gpu-class to an allowed class" in unknown.fix


def test_label_decision_refuses_a_denied_product_whatever_the_class() -> None:
    for labels in (gpu("b200", "NVIDIA-H200-NVL"), gpu(None, "nvidia-h200"),
                   gpu("rtx-pro-6000", "NVIDIA-H200", on=True)):  # fmt: skip
        d = label_decision("gpu-7", labels, P)
        assert not d.allowed
        assert "denied GPU product" in d.reason
    d = label_decision("gpu-7", gpu("b200", "NVIDIA-H200"), P)
    assert d.reason == (
        "gpu-7 has a denied GPU product, NVIDIA-H200, and must never run fractions, "
        "although its example.org/gpu-class says b200"
    )
    assert label_decision("b", gpu("b200", "NVIDIA-B200"), P).allowed


def test_product_checks_follow_the_configuration() -> None:
    off = LabelsConfig(product_keys=[])
    assert label_decision("x", gpu("b200", "NVIDIA-H200"), off).allowed
    more = LabelsConfig(product_keys=["example.org/gpu-product", PRODUCT],
                        denied_products=["H200", "H100"])  # fmt: skip
    assert is_denied({"example.org/gpu-product": "NVIDIA-H100-80GB-HBM3"}, more)


# --- the selector checks: denied by class or product, and the right fix --------------


def test_selector_denied_fix_is_unlabel_when_the_opt_in_label_selects_it() -> None:
    nodes = {"rtx-0": node("rtx-pro-6000", on=True), "h200-0": node("h200", on=True)}
    denied = selector_findings(OPT, nodes, P)[PolicyRule.SELECTOR_DENIED]
    assert denied is not None
    assert denied.fix == "fracctl nodes unlabel h200-0"
    assert "git" not in denied.fix


def test_selector_denied_fix_is_git_when_other_labels_select_it() -> None:
    nodes = {"h200-0": node("h200", gpu="y"), "h200-1": node("h200", on=True, gpu="y")}
    denied = selector_findings({"gpu": "y"}, nodes, P)[PolicyRule.SELECTOR_DENIED]
    assert denied is not None and denied.nodes == ("h200-0", "h200-1")
    assert denied.fix.startswith("select by the opt-in label in git")
    assert "h200-0, h200-1 by other labels" in denied.fix
    assert "unlabel" not in denied.fix  # unlabelling would not take them out


def test_denied_selected_splits_by_what_selects_them() -> None:
    nodes = {"a": node("h200", on=True), "b": node("h200", on=True, gpu="y"), "c": node("h200")}
    assert denied_selected(OPT, nodes, P) == (["a", "b"], [])
    assert denied_selected({"gpu": "y"}, nodes, P) == ([], ["b"])
    assert denied_selected({}, nodes, P) == ([], ["a", "b", "c"])


def test_an_opt_in_key_with_another_value_is_not_fixed_by_unlabel() -> None:
    nodes = {"h200-0": node("h200", **{"example.org/gpu-fractions": "yes"})}
    sel = {"example.org/gpu-fractions": "yes"}
    assert denied_selected(sel, nodes, P) == ([], ["h200-0"])


def test_selector_checks_see_the_product() -> None:
    nodes = {"gpu-7": gpu("b200", "NVIDIA-H200", on=True), "b200-0": gpu("b200", "NVIDIA-B200")}
    f = selector_findings({CLASS: "b200"}, nodes, P)
    denied = f[PolicyRule.SELECTOR_DENIED]
    assert denied is not None and denied.nodes == ("gpu-7",)
    assert "gpu-7 (class b200, product NVIDIA-H200)" in denied.message
    assert "by other labels" in denied.fix  # the class selector picks it: fix git


def test_coverage_does_not_ask_to_select_a_denied_node() -> None:
    nodes = {"rtx-0": node("rtx-pro-6000", on=True), "h200-0": node("h200", on=True),
             "gpu-7": gpu("b200", "NVIDIA-H200", on=True)}  # fmt: skip
    f = selector_findings({CLASS: "rtx-pro-6000"}, nodes, P)
    assert f[PolicyRule.SELECTOR_MISSES] is None
    missed = selector_findings({CLASS: "h200"}, nodes, P)[PolicyRule.SELECTOR_MISSES]
    assert missed is not None and missed.nodes == ("rtx-0",)
    assert missed.fix.endswith("fracctl nodes unlabel rtx-0")


# --- configuration and names -----------------------------------------------------------


def test_product_settings_load_and_are_checked() -> None:
    c = cfg.load(env={"FRACCTL_LABELS_DENIED_PRODUCTS": "H200,NVIDIA-H100-80GB"})
    assert c.labels.denied_products == ["H200", "NVIDIA-H100-80GB"]
    assert cfg.load(env={}).labels.product_keys == ["nvidia.com/gpu.product"]
    assert cfg.load(env={"FRACCTL_LABELS_PRODUCT_KEYS": ""}).labels.product_keys == []
    with pytest.raises(cfg.ConfigError, match="denied_products: '--' names no product"):
        cfg.load(env={"FRACCTL_LABELS_DENIED_PRODUCTS": "H200,--"})


@pytest.mark.parametrize(
    "env",
    [
        {"FRACCTL_TARGET_NAME": " "},
        {"FRACCTL_RECREATE_LOCK_NAME": ""},
        {"FRACCTL_RECREATE_LOCK_NAMESPACE": " "},
        {"FRACCTL_PROBE_NAMESPACE": ""},
        {"FRACCTL_FLUX_KUSTOMIZATION": ""},
        {"FRACCTL_FLUX_NAMESPACE": ""},
    ],
)
def test_blank_object_names_in_config_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(cfg.ConfigError, match="cannot be empty"):
        cfg.load(env=env)


@pytest.mark.parametrize("name", ["", " ", ".", "..", "a/status", "a%2Fb"])
def test_a_blank_or_odd_name_never_addresses_a_collection(name: str) -> None:
    with pytest.raises(UsageError, match="cannot name a Node"):
        NODES.path(name=name)
    assert NODES.path() == "/api/v1/nodes"
    assert NODES.path(name="b200-0") == "/api/v1/nodes/b200-0"


def test_node_name_problems() -> None:
    assert node_name_problems(["b200-0", "ip-10-0-0-1.ec2.internal"]) == []
    assert node_name_problems(["", "  ", "\t"]) == ["a node name cannot be empty"]
    assert node_name_problems(["B200-0", "a/status", "-a", "a" * 254]) == [
        "'B200-0' is not a node name (lower-case letters, digits, '-' and '.')",
        "'a/status' is not a node name (lower-case letters, digits, '-' and '.')",
        "'-a' is not a node name (lower-case letters, digits, '-' and '.')",
        f"'{'a' * 254}' is not a node name (lower-case letters, digits, '-' and '.')",
    ]


# --- the guard policy's update rule ----------------------------------------------------


def _guard(naming: str = "gpu-fractioning") -> tuple[Any, Any, list[dict[str, Any]]]:
    c = cfg.load(env={"FRACCTL_TARGET_NAMING": naming})
    return c.target, c.recreate, guard_policy.objects(c.target, c.recreate)


def test_the_guard_policy_holds_deletes_and_daemon_restarting_updates() -> None:
    t, lock, (policy, binding, *_rest) = _guard()
    spec = policy["spec"]
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["DELETE", "UPDATE"]
    deleting, updating = spec["validations"]
    assert deleting["expression"].startswith("request.operation != 'DELETE' ? true : ")
    assert "request.userInfo.username" in deleting["messageExpression"]
    assert (
        json.dumps(guard_policy.message(t, lock) + " (refused: ") in deleting["messageExpression"]
    )
    expr = updating["expression"]
    assert expr.startswith("request.operation != 'UPDATE' || request.dryRun || ")
    assert f'"{guard_policy.UPDATE_ARMED}"] == oldObject.metadata.uid' in expr
    assert "object.spec == oldObject.spec" in expr  # the whole spec: unknown fields too
    assert "fracctl recreate" in updating["messageExpression"]
    assert updating["reason"] == deleting["reason"] == "Forbidden"
    assert guard_policy.binding_problems(policy, binding, t, lock) == []


def test_the_update_rule_holds_the_older_generations_spec_the_same_way() -> None:
    t, _lock, (policy, *_rest) = _guard("gpu-sharing")
    assert "object.spec == oldObject.spec" in policy["spec"]["validations"][1]["expression"]
    assert t.kind == "GpuSharingConfig"


def test_a_policy_from_before_the_update_rule_is_not_fracctls() -> None:
    """An installed policy of DELETE alone (its rule as it was) is reported."""
    t, lock, (policy, binding, *_rest) = _guard()
    old = copy.deepcopy(policy)
    old["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["DELETE"]
    rule = old["spec"]["validations"][0]
    rule["expression"] = rule["expression"].split(" ? true : ", 1)[1]
    del old["spec"]["validations"][1]
    want = f"the policy does not refuse daemon-restarting updates of {t.plural}.{t.group}"
    found = guard_policy.binding_problems(old, binding, t, lock)
    assert want in found and "the policy's rule is not fracctl's" in found, found
    assert not any("does not match DELETE" in p for p in found)
    half = copy.deepcopy(policy)  # the UPDATE matched, but no rule for it
    del half["spec"]["validations"][1]
    assert guard_policy.binding_problems(half, binding, t, lock) == [want]
    unmatched = copy.deepcopy(policy)  # the rule, but UPDATE not matched
    unmatched["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["DELETE"]
    assert guard_policy.binding_problems(unmatched, binding, t, lock) == [want]
    every = copy.deepcopy(policy)  # "*" matches both
    every["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = ["*"]
    assert guard_policy.binding_problems(every, binding, t, lock) == []
    extra = copy.deepcopy(policy)
    extra["spec"]["validations"].append({"expression": "true"})
    assert guard_policy.binding_problems(extra, binding, t, lock) == [
        "the policy's rule is not fracctl's"
    ]
