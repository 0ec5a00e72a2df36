"""A finding lists its first LISTED subjects and counts the rest: a report stays one size.

One check can name a large share of a cluster (every CPU pod on its GPU nodes). Its
finding lists the first ``LISTED`` subjects and evidence lines, says the total in its
symptom and counts the others in ``unlisted``; the terminal shows fewer lines still and
says what it leaves out.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from fracctl import config as cfg
from fracctl.cli.doctor import SHOWN, render
from fracctl.core.doctor import CHECKS, DoctorReport, Finding, Signature, Snapshot, diagnose, model
from fracctl.core.doctor.helpers import listing
from fracctl.core.doctor.model import CheckResult
from fracctl.core.doctor.taints import gpu_nodes_for_gpu_pods
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.flows.doctor import settings
from tests.support.helpers import unit_context

GPU_NODE = {"metadata": {"name": "g0", "labels": {"nvidia.com/gpu.present": "true"}}}


def _cpu_pod(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"web-{i:02d}", "namespace": "web"},
            "spec": {"nodeName": "g0", "containers": [{"name": "c"}]}}  # fmt: skip


def test_a_finding_keeps_its_first_listed_subjects_and_counts_the_rest() -> None:
    names = tuple(f"web/p{i}" for i in range(model.LISTED + 5))
    sig = Signature("s", "c", "f", names, tuple(f"{n} on g0" for n in names), unlisted=7)
    f = Finding.of("gpu-nodes-for-gpu-pods", sig)
    assert f.subjects == names[: model.LISTED]
    assert f.evidence == tuple(f"{n} on g0" for n in names[: model.LISTED])
    assert f.unlisted == 12  # five cut here, seven the flow only counted
    d = f.to_dict()
    assert (len(d["subjects"]), len(d["evidence"]), d["unlisted"]) == (model.LISTED,) * 2 + (12,)


def test_a_short_finding_is_whole_and_says_so() -> None:
    f = Finding.of("x", Signature("s", "c", "f", ("a", "b"), ("e",)))
    assert (f.subjects, f.evidence, f.unlisted) == (("a", "b"), ("e",), 0)
    assert f.to_dict()["unlisted"] == 0


def test_listing_counts_from_the_total_when_more_were_found() -> None:
    assert listing(["a", "b"]) == "a, b"
    assert listing([str(i) for i in range(12)]) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 2 more"
    assert listing(["a", "b"], total=7) == "a, b and 5 more"
    assert listing([str(i) for i in range(12)], total=30).endswith("9 and 20 more")


def test_the_cpu_pod_check_counts_the_pods_the_flow_only_counted() -> None:
    s = settings(unit_context(cfg.Config()))
    m = AnnotationMatcher.compile(s.pods.fraction_annotations)
    snap = Snapshot(nodes=[GPU_NODE], pods=[_cpu_pod(0), _cpu_pod(1)], strays_unlisted=5)
    (sig,) = gpu_nodes_for_gpu_pods.judge(snap, s, m)
    assert sig.symptom.startswith("7 pod(s) that request no GPU run on GPU nodes: ")
    assert "web/web-00 on g0, web/web-01 on g0 and 5 more" in sig.symptom
    assert sig.subjects == ("web/web-00", "web/web-01") and sig.unlisted == 5
    # Counted pods alone, none listed, still make the finding.
    (only,) = gpu_nodes_for_gpu_pods.judge(Snapshot(nodes=[GPU_NODE], strays_unlisted=3), s, m)
    assert only.symptom.startswith("3 pod(s)") and only.subjects == () and only.unlisted == 3
    assert gpu_nodes_for_gpu_pods.judge(Snapshot(nodes=[GPU_NODE]), s, m) == []


def test_a_whole_snapshot_and_a_counted_one_give_one_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What the flow keeps (the first LISTED strays and a count) judges as the whole list.
    monkeypatch.setattr(model, "LISTED", 12)
    s = settings(unit_context(cfg.Config()))
    pods = [_cpu_pod(i) for i in range(30)]
    whole = diagnose(Snapshot(nodes=[GPU_NODE], pods=pods), s).to_dict()
    counted = diagnose(Snapshot(nodes=[GPU_NODE], pods=pods[:12], strays_unlisted=18), s)
    assert counted.to_dict() == whole
    (f,) = [f for f in whole["findings"] if f["check"] == "gpu-nodes-for-gpu-pods"]
    assert f["symptom"].startswith("30 pod(s)") and f["unlisted"] == 18


def _rendered(finding: Finding) -> list[str]:
    sink = io.StringIO()
    report = DoctorReport([CheckResult(CHECKS[-1], "finding")], [finding])
    render(Console(file=sink, width=200, color_system=None), report)
    return sink.getvalue().splitlines()


def test_the_terminal_shows_the_first_lines_and_says_what_it_leaves_out() -> None:
    lines = tuple(f"web/p{i} on g0" for i in range(SHOWN + 5))
    out = _rendered(Finding("gpu-nodes-for-gpu-pods", "s", "c", "f", (), lines, unlisted=3))
    shown = [line for line in out if line.startswith("  - ")]
    assert shown == [f"  - {line}" for line in lines[:SHOWN]]
    assert "  … 5 more line(s): fracctl doctor -o json lists them" in out
    assert f"  … 3 more counted, not listed (a finding lists {model.LISTED:,})" in out
    # A finding within the terminal's lines says nothing more.
    short = _rendered(Finding("gpu-nodes-for-gpu-pods", "s", "c", "f", (), lines[:2]))
    assert [line for line in short if line.startswith("  - ")] == [f"  - {x}" for x in lines[:2]]
    assert not any(line.startswith("  …") for line in short)
