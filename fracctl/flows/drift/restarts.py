"""A change of the config that a sync applies in place but that restarts the MPS daemons.

The dry-run update says such a change ``applies-in-place``; the operator then rewrites
its DaemonSets' pod templates and ``RollingUpdate`` replaces the daemons on every selected
node, under the fractional pods running there (:mod:`fracctl.core.fractions.daemons`).
Such a change gets its own verdict, ``restarts-daemons``, naming which daemons, on which
nodes, and the fractional pods there, and its next step is the guarded run.
"""

from __future__ import annotations

from typing import Any

from fracctl.core import drift as d
from fracctl.core.fractions.daemons import daemons_of, restarts
from fracctl.core.kube.nodes import matches, selector_of
from fracctl.flows.context import Context


def mark(ctx: Context, out: d.ObjectDrift) -> None:
    """Turn an in-place verdict on the config into ``restarts-daemons`` where it rolls them."""
    t = ctx.config.target
    if out.verdict != d.APPLIES_IN_PLACE or out.desired is None or not t.matches(out.desired):
        return
    found = restarts((c.path, c.live, c.desired) for c in out.changes)
    if not found:
        return
    out.verdict = d.RESTARTS_DAEMONS
    out.restarts = blast(ctx, out.live, [r.to_dict() for r in found], daemons_of(found))
    pods = out.restarts["pods"]
    drain = " --drain" if pods else ""
    out.next_step = (
        f"carry it guarded, not by a plain sync: {ctx.rerun('recreate', *drain.split(), '--yes')}"
        + (f" (fractional pods run there: {', '.join(pods[:5])})" if pods else "")
    )


def blast(
    ctx: Context,
    live: dict[str, Any] | None,
    fields: list[dict[str, Any]],
    daemons: tuple[str, ...],
) -> dict[str, Any]:
    """Which daemons restart on which nodes, and the fractional pods running there.

    An identity that may not list nodes or pods (drift's own role reads neither) gets the
    daemons and the fields, and ``unread`` says what it could not see.
    """
    from fracctl.errors import Forbidden
    from fracctl.flows.guards.preflight import node_labels
    from fracctl.flows.guards.scan import fractions, scan_fractional_pods

    out: dict[str, Any] = {"daemons": list(daemons), "nodes": [], "pods": [], "fields": fields}
    selector = selector_of(live, ctx.config.target.selector_field) or {}
    try:
        nodes = sorted(n for n, labels in node_labels(ctx).items() if matches(selector, labels))
        out["nodes"] = nodes
        by_node = scan_fractional_pods(ctx, fractions(ctx, live=live)).by_node()
    except Forbidden as e:
        out["unread"] = f"the nodes and pods there are not known: {e.message}"
        return out
    out["pods"] = [str(p) for n in nodes for p in by_node.get(n, [])]
    return out
