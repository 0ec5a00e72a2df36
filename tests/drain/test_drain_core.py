"""The drain's pure judgement: fences, pods, groups and budgets."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl.core.drain import (
    FENCE_REASON,
    POD_GROUP,
    DrainPod,
    budgets_for,
    fence_condition,
    fence_run,
    groups_of,
)
from fracctl.core.kube.labels import selector_matches


def pod(
    name: str, *, group: str = "", owner: bool = True, phase: str = "Running",
    ready: bool = True, terminating: bool = False, ns: str = "ml",
) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}",
                            "annotations": {POD_GROUP: group} if group else {}}  # fmt: skip
    if owner:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "controller": True}]
    if terminating:
        meta["deletionTimestamp"] = "2026-12-03T00:00:00Z"
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    return {"metadata": meta, "spec": {"nodeName": "n0"}, "status": status}


def pdb(name: str, allowed: int, *, selector: Any = None, generation: int = 1,
        observed: int = 1, disrupted: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": "ml", "generation": generation},
        "spec": {"selector": {"matchLabels": {"app": "frac"}} if selector is None else selector},
        "status": {"disruptionsAllowed": allowed, "observedGeneration": observed,
                   "disruptedPods": dict.fromkeys(disrupted, "2026-12-03T00:00:00Z")},
    }  # fmt: skip


def test_a_fence_names_its_run_and_only_a_fracctl_fence_reads_as_one() -> None:
    cond = fence_condition("gpu-fractioning.nvidia.com/Ready", "ab12cd34", "X/default", "t")
    assert cond["status"] == "False" and cond["reason"] == FENCE_REASON
    assert fence_run(cond) == "ab12cd34"
    assert fence_run({**cond, "status": "True"}) is None
    assert fence_run({**cond, "reason": "Pending"}) is None
    assert fence_run({**cond, "message": "something else"}) is None
    assert fence_run(None) is None


def expr(op: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": "app", "operator": op, "values": list(values)}]}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"app": "frac"}, False),
        ({}, {"app": "frac"}, True),
        ({"matchLabels": {"app": "frac"}}, {"app": "frac"}, True),
        ({"matchLabels": {"app": "frac"}}, {"app": "cpu"}, False),
        (expr("In", "a"), {"app": "a"}, True),
        (expr("In", "a"), {}, False),
        (expr("NotIn", "a"), {}, True),
        (expr("NotIn", "a"), {"app": "a"}, False),
        (expr("Exists"), {"app": "x"}, True),
        (expr("Exists"), {}, False),
        (expr("DoesNotExist"), {"app": "x"}, False),
        (expr("DoesNotExist"), {}, True),
    ],
)  # fmt: skip
def test_a_budget_selector_is_read_as_policy_v1_reads_it(
    selector: Any, labels: dict[str, str], expected: bool
) -> None:
    assert selector_matches(selector, labels) is expected


@pytest.mark.parametrize(
    ("kwargs", "takes"),
    [
        ({}, True),
        ({"ready": False}, False),
        ({"phase": "Pending"}, False),
        ({"phase": "Succeeded"}, False),
        ({"terminating": True}, False),
    ],
)
def test_only_a_running_ready_pod_takes_a_budget_disruption(
    kwargs: dict[str, Any], takes: bool
) -> None:
    assert DrainPod.of(pod("p", **kwargs), fractional=True).takes_budget is takes


def test_a_pod_knows_its_controller_and_a_bare_pod_has_none() -> None:
    assert DrainPod.of(pod("p"), fractional=True).owner == "ReplicaSet/rs"
    assert DrainPod.of(pod("p", owner=False), fractional=True).owner == ""


def test_pods_are_grouped_by_pod_group_and_a_loner_is_its_own_group() -> None:
    pods = [DrainPod.of(pod(n, group=g), fractional=True)
            for n, g in [("b", "g1"), ("a", "g1"), ("c", ""), ("d", "g0")]]  # fmt: skip
    groups = groups_of(pods)
    assert [(g.label, [p.name for p in g.pods]) for g in groups] == [
        ("pod ml/c", ["c"]),
        ("PodGroup ml/g0", ["d"]),
        ("PodGroup ml/g1", ["a", "b"]),
    ]


def labels(*names: str) -> dict[str, dict[str, str]]:
    return {f"ml/{n}": {"app": "frac"} for n in names}


def test_a_budget_needs_one_disruption_per_running_ready_pod() -> None:
    pods = [DrainPod.of(pod("a"), fractional=True), DrainPod.of(pod("b"), fractional=True),
            DrainPod.of(pod("c", ready=False), fractional=True)]  # fmt: skip
    (tight,), doubled = budgets_for(pods, [pdb("frac", 1)], labels("a", "b", "c"))
    assert not doubled
    assert (tight.allowed, tight.needs, tight.ok) == (1, 2, False)
    assert tight.pods == ["ml/a", "ml/b", "ml/c"]
    (enough,), _ = budgets_for(pods, [pdb("frac", 2)], labels("a", "b", "c"))
    assert enough.ok


def test_a_pod_the_budget_lists_as_disrupted_needs_no_allowance() -> None:
    pods = [DrainPod.of(pod(n), fractional=True) for n in "abc"]
    (b,), _ = budgets_for(pods, [pdb("frac", 2, disrupted=("a",))], labels(*"abc"))
    assert (b.needs, b.ok) == (2, True)


def test_a_budget_not_computed_for_its_generation_is_stale_and_never_ok() -> None:
    pods = [DrainPod.of(pod("a"), fractional=True)]
    (b,), _ = budgets_for(pods, [pdb("frac", 5, generation=2, observed=1)], labels("a"))
    assert b.stale and not b.ok


def test_a_pod_under_two_budgets_is_named_and_a_pod_under_none_is_free() -> None:
    pods = [DrainPod.of(pod("a"), fractional=True)]
    budgets, doubled = budgets_for(pods, [pdb("one", 1), pdb("two", 1)], labels("a"))
    assert doubled == ["ml/a (budgets one, two)"] and len(budgets) == 2
    budgets, doubled = budgets_for(pods, [pdb("other", 0, selector={"matchLabels": {"x": "y"}})],
                                   labels("a"))  # fmt: skip
    assert budgets == [] and doubled == []
