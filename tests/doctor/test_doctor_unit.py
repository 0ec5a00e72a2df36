"""``fracctl doctor``'s checks as pure functions, and their runbook."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fracctl import config as cfg
from fracctl.core.doctor import CHECK_IDS, Snapshot, diagnose
from fracctl.core.kube.podspec import image_tag, root_problems, unpinned
from fracctl.flows.doctor import settings
from tests.support.helpers import unit_context

RUNBOOK = Path(__file__).resolve().parents[2] / "runbooks" / "doctor.md"


def doctor_settings() -> Any:
    return settings(unit_context(cfg.Config()))


def test_the_runbook_maps_every_check_in_order() -> None:
    headings = re.findall(r"^### (\S+)$", RUNBOOK.read_text(), re.M)
    assert headings == list(CHECK_IDS)


def test_odd_objects_never_crash_the_checks() -> None:
    # Nodes and pods are validated by the API server; KAI's Config has an open schema.
    odd: list[Any] = [
        {"metadata": {"name": "n0", "labels": None}, "spec": {"taints": "x"}, "status": {}},
        {"metadata": {"name": "n1", "labels": {"nvidia.com/gpu.present": "true"}},
         "spec": {"taints": [None, 5]}, "status": {"capacity": [1]}},
    ]  # fmt: skip
    pods: list[Any] = [
        {"metadata": {"name": "p", "namespace": "ml", "annotations": {"gpu-fraction": "0.5"}},
         "spec": {"containers": "no", "securityContext": []}, "status": {"phase": "Pending",
         "conditions": [None], "containerStatuses": [3, {"state": None}]}},
        {"metadata": {"name": "r", "namespace": "kai-resource-reservation"},
         "spec": None, "status": {"phase": "Failed"}},
    ]  # fmt: skip
    snap = Snapshot(
        nodes=odd,
        target={"metadata": {"name": "default"}, "spec": {"nodeSelector": "x"}, "status": []},
        kai_config={"spec": {"global": None}},
        daemonsets={"gpu-fractioning-mpsd": {"status": {"desiredNumberScheduled": 2}}},
        agent_pods=[{"metadata": {"name": "a", "labels": None}}],
        workloads=[{"kind": "Deployment", "spec": {"template": {"spec": {"containers": [7]}}}}],
        pods=pods,
        events={"ml/p": [{"message": None}, {"reason": "X", "message": "no fit"}]},
    )
    report = diagnose(snap, doctor_settings())
    assert [r.check.id for r in report.results] == list(CHECK_IDS)
    assert not report.ok


def test_image_tags() -> None:
    assert image_tag("r.example.org:5000/a/b:1.2") == "1.2"
    assert image_tag("r.example.org:5000/a/b") == ""
    assert unpinned("r.example.org:5000/a/b")
    assert unpinned("a/b:latest") and unpinned("a/b:0.0.0") and unpinned("a/b:v0.0.0")
    assert not unpinned("a/b@sha256:abc") and not unpinned("a/b:0.0.1")


def test_root_problems() -> None:
    c = [{"name": "main"}]
    assert root_problems({"securityContext": {"runAsNonRoot": True}, "containers": c}) == []
    assert root_problems({"securityContext": {"runAsUser": 1000}, "containers": c}) == []
    assert root_problems({"containers": [{"name": "m", "securityContext": {"runAsUser": 7}}]}) == []
    assert root_problems({"containers": c}) == [
        "container main has no runAsNonRoot: true (nor the pod)"
    ]
    assert root_problems(
        {"securityContext": {"runAsNonRoot": True},
         "containers": [{"name": "m", "securityContext": {"runAsUser": 0}}]}
    ) == ["container m sets runAsUser: 0"]  # fmt: skip


def test_opted_in_nodes_the_live_selector_leaves_out() -> None:
    s = doctor_settings()
    nodes: list[Any] = [
        {"metadata": {"name": n, "labels": {"example.org/gpu-fractions": "enabled", **extra}}}
        for n, extra in (("b200-0", {}), ("rtx-0", {"example.org/gpu-class": "rtx-pro-6000"}))
    ]

    def opted_in(selector: dict[str, str] | None) -> Any:
        target = None if selector is None else {"spec": {"nodeSelector": selector}}
        report = diagnose(Snapshot(nodes=nodes, target=target), s)
        return next(r for r in report.results if r.check.id == "opted-in-selected"), [
            f for f in report.findings if f.check == "opted-in-selected"
        ]

    result, (f,) = opted_in({"example.org/gpu-class": "rtx-pro-6000"})
    assert result.status == "finding"
    assert f.subjects == ("b200-0",)
    assert f.evidence == ("live spec.nodeSelector: example.org/gpu-class=rtx-pro-6000",)
    assert opted_in({"example.org/gpu-fractions": "enabled"})[1] == []
    assert opted_in({})[1] == []  # an empty selector selects every node
    result, found = opted_in(None)
    assert (result.status, found) == ("skipped", [])


def test_a_live_selector_that_takes_a_denied_class_is_said_and_no_wait_is_advised() -> None:
    # The operator chart's default selector takes every GPU node, the H200 among them.
    s = doctor_settings()
    gpu = {"nvidia.com/gpu.present": "true"}
    nodes: list[Any] = [
        {"metadata": {"name": name, "labels": {**gpu, "example.org/gpu-class": cls}}}
        for name, cls in (("h200-0", "h200"), ("b200-0", "b200"))
    ]

    def checks(selector: dict[str, str]) -> dict[str, Any]:
        snap = Snapshot(nodes=nodes, target={"spec": {"nodeSelector": selector}})
        return {f.check: f for f in diagnose(snap, s).findings}

    found = checks(gpu)
    f = found["denied-selected"]
    assert f.subjects == ("h200-0",)
    assert "selects node(s) of a denied GPU class or product: h200-0" in f.symptom
    assert f.evidence == ("live spec.nodeSelector: nvidia.com/gpu.present=true",
                          "denied classes (example.org/gpu-class): h200")  # fmt: skip
    assert "fracctl recreate --yes" in f.fix
    # node-readiness names the allowed node only: waiting never readies a denied one.
    assert found["node-readiness"].subjects == ("b200-0",)
    assert "h200-0" not in found["node-readiness"].fix
    assert "denied-selected" not in checks({"example.org/gpu-class": "b200"})


def test_every_gpu_resource_name_holds_its_patterns_fragment() -> None:
    import fnmatch

    from fracctl.core.kube.podspec import DEFAULT_GPU_RESOURCES, gpu_name_fragments

    fragments = gpu_name_fragments()
    assert fragments == (
        "nvidia.com/gpu",
        "nvidia.com/mig-",
        "amd.com/gpu",
        "gpu.intel.com/i915",
        "gpu.intel.com/xe",
    )
    for name in ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "gpu.intel.com/xe"):
        assert any(fnmatch.fnmatchcase(name, p) for p in DEFAULT_GPU_RESOURCES)
        assert any(f in name for f in fragments)
    assert gpu_name_fragments(["vendor.io/[ab]?gpu*"]) == ("vendor.io/",)  # the longest run
    assert gpu_name_fragments(["*"]) is None  # nothing rules a GPU out


def test_a_fence_left_by_a_drain_that_is_not_running_is_a_finding() -> None:
    from fracctl.core.drain import fence_condition

    s = doctor_settings()
    fence = fence_condition(s.condition, "dead0001", "GpuFractioningConfig/default", "t")
    ready = {"type": s.condition, "status": "True", "reason": "AllDaemonsReady"}
    nodes: list[Any] = [
        {"metadata": {"name": "b200-0"}, "status": {"conditions": [fence]}},
        {"metadata": {"name": "b200-1"}, "status": {"conditions": [ready]}},
    ]

    def found(holder: str) -> list[Any]:
        report = diagnose(Snapshot(nodes=nodes, lock_holder=holder), s)
        return [f for f in report.findings if f.check == "drain-fence"]

    (f,) = found("")
    assert f.subjects == ("b200-0",)
    assert "fenced by fracctl drain run dead0001, which is not running" in f.symptom
    assert "fracctl recreate --abort" in f.fix
    (running,) = found("alice@host pid 7 run dead0001")  # a fence is a fence: say whose
    assert running.subjects == ("b200-0",)
    assert "fenced by fracctl drain run dead0001, under way" in running.symptom
    assert "held by alice@host pid 7 run dead0001" in running.symptom
    assert "fracctl recreate --abort" not in running.fix and "wait" in running.fix
    nodes[0]["status"]["conditions"] = [{**fence, "reason": "Pending"}]
    assert found("") == [], "only fracctl's own reason is a fence"


def test_a_fenced_node_is_not_read_as_agents_that_never_started() -> None:
    """While a drain runs, node-readiness and pending-fractional-pods leave the fence to
    drain-fence, which names the run; neither says the daemons are not running."""
    from fracctl.core.drain import FENCE_REASON, fence_condition
    from fracctl.core.fractions.kai_words import not_ready

    s = doctor_settings()
    fence = fence_condition(s.condition, "3060ba5a", "GpuFractioningConfig/default", "t")
    labels = {"example.org/gpu-fractions": "enabled"}
    nodes: list[Any] = [
        {"metadata": {"name": "b200-0", "labels": labels}, "status": {"conditions": [fence]}},
    ]
    target = {"metadata": {"name": "default"}, "spec": {"nodeSelector": labels}}
    words = not_ready(s.condition, "False", FENCE_REASON, fence["message"])
    pod = {
        "metadata": {"name": "frac-0", "namespace": "ml", "annotations": {"gpu-fraction": "0.5"}},
        "spec": {"schedulerName": "kai-scheduler"},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": words}]},
    }  # fmt: skip
    snap = Snapshot(nodes=nodes, target=target, pods=[pod],
                    lock_holder="alice@host pid 7 run 3060ba5a")  # fmt: skip
    findings = {f.check: f for f in diagnose(snap, s).findings}
    assert "node-readiness" not in findings, findings.get("node-readiness")
    assert "run 3060ba5a" in findings["drain-fence"].symptom
    pending = findings["pending-fractional-pods"]
    assert "daemons not running" not in pending.cause and FENCE_REASON in pending.cause
    assert "fracctl wait" not in pending.fix and "drain-fence" in pending.fix
