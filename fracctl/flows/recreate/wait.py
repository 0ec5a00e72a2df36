"""Wait, by watching, until every node a selector matches reports the readiness condition.

One LIST, then a WATCH from its resourceVersion: no sleep loop. Nodes that start or stop
matching while we wait are followed. Progress goes to stderr through
``ctx.node_progress`` (the CLI shows a live table on a terminal), else a plain line per
change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fracctl.core.kube.nodes import describe_condition, is_ready, selector_of, selector_string
from fracctl.core.kube.resources import NODES
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


class PlainProgress:
    """A line on stderr each time a node's condition changes (the default off a terminal)."""

    def __init__(self, ctx: Context, condition: str) -> None:
        self.ctx = ctx
        self.condition = condition
        self.last: dict[str, str] = {}

    def show(self, nodes: dict[str, Obj]) -> None:
        """Report the nodes whose condition changed since the last call."""
        for name in sorted(nodes):
            text = describe_condition(nodes[name], self.condition)
            if self.last.get(name) != text:
                self.ctx.info(f"node {name}: {self.condition} {text}")
                self.last[name] = text

    def stop(self) -> None:
        """Nothing to tear down."""


def wait_ready(
    ctx: Context,
    *,
    selector: dict[str, str],
    timeout: float | None = None,
    quiet: bool = False,
) -> ReadyResult:
    """Block until the daemons rolled out and every node ``selector`` matches is ready.

    The rollout first (:mod:`fracctl.flows.recreate.rollout`): while daemons are being
    replaced a node can still show the condition it had before.

    Raises:
        TimedOut: naming what still rolls, or each node that is not ready, with status,
            reason and message.
    """
    from fracctl.flows.recreate.rollout import wait_rollout

    cond = ctx.config.condition
    timeout = ctx.config.timeouts.ready if timeout is None else timeout
    label_selector = selector_string(selector)
    start = ctx.clock.monotonic()
    wait_rollout(ctx, deadline=start + timeout)
    factory = ctx.node_progress or PlainProgress
    progress = None if quiet else factory(ctx, cond)

    def all_ready(view: dict[str, Obj]) -> bool:
        return all(is_ready(o, cond) for o in view.values())

    try:
        nodes, finished = ctx.kube.watch_until(
            NODES,
            all_ready,
            deadline=start + timeout,
            clock=ctx.clock,
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
