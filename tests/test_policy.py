"""The node opt-in policy, as plain data."""

from __future__ import annotations

import pytest

from fracctl.config import LabelsConfig
from fracctl.core.policy import (
    Rule,
    Verdict,
    is_gpu_node,
    label_decision,
    node_findings,
    parse_selector,
    selector_findings,
    standing,
)

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
    missing = f[Rule.MISSING_OPT_IN]
    assert missing is not None
    assert missing.nodes == ("b200-0", "b200-1")
    assert missing.fix == "fracctl nodes label b200-0 b200-1"
    assert "b200-0 (b200)" in missing.message
    denied = f[Rule.DENIED_OPTED_IN]
    assert denied is not None
    assert denied.nodes == ("h200-0",)
    assert "h200-0 (h200)" in denied.message
    assert denied.fix == "fracctl nodes unlabel h200-0"
    unknown = f[Rule.UNKNOWN_CLASS]
    assert unknown is not None
    assert "odd-0 (example.org/gpu-class=a100)" in unknown.message
    assert "fracctl nodes unlabel odd-0" in unknown.fix


def test_long_lists_are_cut() -> None:
    nodes = {f"b200-{i:02}": node("b200") for i in range(13)}
    missing = node_findings(nodes, P)[Rule.MISSING_OPT_IN]
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
    denied = f[Rule.SELECTOR_DENIED]
    assert denied is not None and denied.nodes == ("h200-0",)
    assert "gpu=y" in denied.message
    missed = f[Rule.SELECTOR_MISSES]
    assert missed is not None and missed.nodes == ("rtx-0",)


def test_empty_selector_selects_everything() -> None:
    nodes = {"h200-0": node("h200")}
    denied = selector_findings({}, nodes, P)[Rule.SELECTOR_DENIED]
    assert denied is not None
    assert "every node" in denied.message


def test_class_selector_misses_an_opted_in_node() -> None:
    nodes = {"rtx-0": node("rtx-pro-6000", on=True), "b200-0": node("b200", on=True)}
    missed = selector_findings({CLASS: "rtx-pro-6000"}, nodes, P)[Rule.SELECTOR_MISSES]
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
