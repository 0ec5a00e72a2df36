"""Blast radius and the report, as plain data."""

from __future__ import annotations

from fracctl.core.fractions.fractional import Fractions
from fracctl.core.recreate.blast import BlastRadius, Effect, PodRef, blast_radius
from fracctl.flows.guards.preflight import GuardCheck, PreflightReport
from fracctl.flows.guards.scan import FractionalScan

NODES = {
    "rtx-0": {"class": "rtx", "opt": "on"},
    "b200-0": {"class": "b200", "opt": "on"},
    "h200-0": {"class": "h200"},
    "cpu-0": {},
}
POD = PodRef("ml", "train")


def names(r: BlastRadius, *effects: Effect) -> list[str]:
    return [n.name for n in r.nodes if not effects or n.effect in effects]


def test_class_to_label_migration() -> None:
    r = blast_radius(NODES, old={"class": "rtx"}, new={"opt": "on"}, pods_by_node={"rtx-0": [POD]})
    assert [(n.name, n.effect) for n in r.nodes] == [
        ("b200-0", Effect.START),
        ("rtx-0", Effect.RESTART),
    ]
    assert r.pods == [POD]
    assert names(r, Effect.RESTART) == ["rtx-0"]
    s = r.summary()
    assert "daemons restart on 1 node(s) (rtx-0)" in s
    assert "daemons start on 1 node(s) (b200-0)" in s
    assert "1 fractional pod(s) lose their GPU daemon: ml/train" in s


def test_nodes_dropped_by_the_new_selector_stop() -> None:
    r = blast_radius(NODES, old={"opt": "on"}, new={"class": "b200"}, pods_by_node={})
    assert [(n.name, n.effect) for n in r.nodes] == [
        ("b200-0", Effect.RESTART),
        ("rtx-0", Effect.STOP),
    ]


def test_no_live_object_only_starts_and_no_pod_loses_anything() -> None:
    r = blast_radius(NODES, old=None, new={"opt": "on"}, pods_by_node={"b200-0": [POD]})
    assert {n.effect for n in r.nodes} == {Effect.START}
    assert r.pods == []


def test_nothing_matched() -> None:
    r = blast_radius(NODES, old=None, new=None, pods_by_node={})
    assert r.nodes == ()
    assert r.summary() == "no node matched by the old or the new selector"
    assert r.to_dict() == {"nodes": [], "pods": []}


def test_report_ok_and_json() -> None:
    report = PreflightReport(
        [GuardCheck("a", True, "fine"), GuardCheck("b", False, "bad", "do this")],
        BlastRadius(),
        FractionalScan(scanned=3, pages=1, fractions=Fractions.of([], "gpu-fractioning")),
        {"opt": "on"},
        None,
    )
    assert not report.ok
    assert [c.name for c in report.failed] == ["b"]
    d = report.to_dict()
    assert d["ok"] is False
    assert d["checks"][1] == {"name": "b", "ok": False, "evidence": "bad", "fix": "do this"}
    prefixes = d["pods"].pop("prefixes")
    assert d["pods"] == {"scanned": 3, "pages": 1, "fractional": [], "reservations": []}
    assert [p["prefix"] for p in prefixes] == [
        "nvidia.com/container.",
        "nvidia.com/gpu-memory.container.",
    ]
    assert d["desired_selector"] == {"opt": "on"}
    assert d["live_selector"] is None


def test_denied_nodes_are_marked() -> None:
    r = blast_radius(NODES, old=None, new={}, pods_by_node={}, denied={"h200-0"})
    assert names(r) == ["b200-0", "cpu-0", "h200-0", "rtx-0"]
    assert "h200-0 (denied)" in r.summary()
    assert [n["denied"] for n in r.to_dict()["nodes"]] == [False, False, True, False]
