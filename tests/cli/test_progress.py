"""Waiting shows the nodes: a live table on a terminal, a line per change otherwise."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from fracctl import config as cfg
from fracctl.cli.progress import LiveNodeTable
from fracctl.flows.context import Context
from fracctl.flows.recreate.wait import PlainProgress, wait_ready
from tests.support.helpers import Cluster, unit_context

COND = cfg.Config().condition


def node(name: str, status: str, reason: str = "AllDaemonsReady") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": COND, "status": status, "reason": reason}]},
    }


def context_on(console: Console, **kwargs: Any) -> Context:
    ctx = unit_context(cfg.Config(), **kwargs)
    ctx._err = console
    return ctx


def test_the_live_table_counts_ready_nodes_and_names_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERM", "xterm")  # a real terminal: every frame is drawn
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120, color_system=None)
    table = LiveNodeTable(context_on(console), COND)
    table.show({"b200-0": node("b200-0", "False", "MPSStarting"), "rtx-0": node("rtx-0", "True")})
    table.show({"b200-0": node("b200-0", "True"), "rtx-0": node("rtx-0", "True")})
    table.stop()
    out = buf.getvalue()
    assert "1/2 nodes ready" in out and "2/2 nodes ready" in out
    assert "b200-0" in out and "MPSStarting" in out


def test_plain_progress_prints_a_line_only_when_a_node_changes() -> None:
    buf = io.StringIO()
    progress = PlainProgress(context_on(Console(file=buf, width=200)), COND)
    progress.show({"b200-0": node("b200-0", "False", "MPSStarting")})
    progress.show({"b200-0": node("b200-0", "False", "MPSStarting")})
    progress.show({"b200-0": node("b200-0", "True")})
    progress.stop()
    lines = buf.getvalue().strip().splitlines()
    assert len(lines) == 2, lines
    assert "False" in lines[0] and "True" in lines[1]


def test_wait_uses_the_progress_the_cli_chose(cluster: Cluster) -> None:
    cluster.node("p-0", labels={"example.org/progress": "x"}, ready=True)
    seen: list[list[str]] = []

    class Recording:
        def __init__(self, ctx: Context, condition: str) -> None:
            assert condition == COND

        def show(self, nodes: dict[str, Any]) -> None:
            seen.append(sorted(nodes))

        def stop(self) -> None:
            seen.append(["stopped"])

    ctx = Context(config=cluster.config, kube_factory=lambda: cluster.kube, node_progress=Recording)
    result = wait_ready(ctx, selector={"example.org/progress": "x"}, timeout=10)
    assert list(result.nodes) == ["p-0"]
    assert seen == [["p-0"], ["stopped"]]


def test_the_live_drain_table_shows_totals_groups_to_go_and_how_many_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fracctl.cli.progress import LiveDrainTable

    monkeypatch.setenv("TERM", "xterm")
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120, color_system=None)
    table = LiveDrainTable(context_on(console))
    table.show([("PodGroup ml/g0", 4, 1), ("PodGroup ml/g1", 4, 0)], 3, "evicted 1/20 pod(s)")
    table.show([], 0, "evicted 20/20 pod(s), 5/5 PodGroup(s) gone")
    table.stop()
    out = buf.getvalue()
    assert "evicted 1/20 pod(s)" in out and "PodGroup ml/g0" in out
    assert "and 3 more PodGroup(s) to go" in out
    assert "evicted 20/20 pod(s), 5/5 PodGroup(s) gone" in out
