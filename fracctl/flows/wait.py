"""Wait, by watching, until every node a selector matches reports the readiness condition.

One LIST, then a WATCH from its resourceVersion: no sleep loop. Nodes that start or stop
matching while we wait are followed. Progress goes to stderr: a live table per node on a
terminal, a plain line per change otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fracctl.core.nodes import describe_condition, is_ready, selector_of, selector_string
from fracctl.core.resources import NODES
from fracctl.errors import Refused, TimedOut
from fracctl.flows.context import Context

Obj = dict[str, Any]


@dataclass
class ReadyResult:
    """How the wait ended."""

    selector: dict[str, str]
    nodes: dict[str, str] = field(default_factory=dict)  # name -> condition description
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {"selector": self.selector, "nodes": self.nodes, "seconds": round(self.seconds, 1)}


class _Progress:
    def __init__(self, ctx: Context, condition: str) -> None:
        self.ctx = ctx
        self.condition = condition
        self.live: Any = None
        self.last: dict[str, str] = {}
        if ctx.err.is_terminal:
            from rich.live import Live

            self.live = Live(console=ctx.err, refresh_per_second=4, transient=False)
            self.live.start()

    def show(self, nodes: dict[str, Obj]) -> None:
        states = {n: describe_condition(o, self.condition) for n, o in sorted(nodes.items())}
        if self.live is not None:
            from rich.table import Table

            ready = sum(1 for o in nodes.values() if is_ready(o, self.condition))
            table = Table(title=f"{ready}/{len(nodes)} nodes ready", title_justify="left")
            table.add_column("node")
            table.add_column(self.condition)
            for name, text in states.items():
                style = "green" if text.startswith("True") else "yellow"
                table.add_row(name, f"[{style}]{_escape(text)}[/]")
            self.live.update(table)
        else:
            for name, text in states.items():
                if self.last.get(name) != text:
                    self.ctx.info(f"node {name}: {self.condition} {text}")
        self.last = states

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def wait_ready(
    ctx: Context,
    *,
    selector: dict[str, str],
    timeout: float | None = None,
    quiet: bool = False,
) -> ReadyResult:
    """Block until every node ``selector`` matches has the readiness condition True.

    Raises:
        TimedOut: naming each node that is not ready, with status, reason and message.
    """
    cond = ctx.config.condition
    timeout = ctx.config.timeouts.ready if timeout is None else timeout
    label_selector = selector_string(selector)
    start = ctx.clock.monotonic()
    progress = None if quiet else _Progress(ctx, cond)

    def all_ready(view: dict[str, Obj]) -> bool:
        return all(is_ready(o, cond) for o in view.values())

    try:
        nodes, finished = ctx.kube.watch_until(
            NODES,
            all_ready,
            deadline=start + timeout,
            monotonic=ctx.clock.monotonic,
            sleep=ctx.clock.sleep,
            label_selector=label_selector or None,
            on_change=progress.show if progress else None,
        )
    finally:
        if progress:
            progress.stop()
    if not nodes:
        ctx.warn(f"no node matches {label_selector or 'the selector'}; nothing to wait for")
    elapsed = ctx.clock.monotonic() - start
    states = {n: describe_condition(o, cond) for n, o in sorted(nodes.items())}
    if not finished:
        waiting = "; ".join(f"{n}: {s}" for n, s in states.items() if not s.startswith("True"))
        raise TimedOut(
            f"not every node reports {cond}=True after {timeout:.0f}s: {waiting}",
            hint="check the mpsd and fractiond pods on those nodes "
            "(kubectl -n gpu-fractioning get pods -o wide), then rerun",
        )
    return ReadyResult(selector=selector, nodes=states, seconds=elapsed)


def wait_for_target(ctx: Context, *, timeout: float | None = None) -> ReadyResult:
    """``fracctl wait``: wait for the nodes the live target object selects."""
    t = ctx.config.target
    live = ctx.kube.get_or_none(t.ref, t.name)
    if live is None:
        raise Refused(
            f"{t.kind}/{t.name} does not exist; nothing selects nodes yet",
            hint="create it (fracctl recreate) first",
        )
    selector = selector_of(live, t.selector_field) or {}
    return wait_ready(ctx, selector=selector, timeout=timeout)
