"""The fence: the readiness condition set ``False`` with fracctl's reason, and its undo.

Undoing restores each node's condition as the journal saw it, and only where the fence of
this run is still there: a condition the operator wrote since is its word, and stands.
The condition is never deleted to undo (the operator would not write it back while
healthy).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.core.drain import fence_condition, fence_run
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import NODES
from fracctl.flows.context import Context
from fracctl.flows.drain.journal import Journal

Obj = dict[str, Any]
SMP = "application/strategic-merge-patch+json"
#: Node status writes in flight at once while fencing.
WRITERS = 16


def _target(ctx: Context) -> str:
    t = ctx.config.target
    return f"{t.kind}/{t.name}"


def _write(ctx: Context, node: str, cond: Obj) -> None:
    """Merge ``cond`` into the node's conditions by type (``$patch: delete`` removes it)."""
    ctx.kube.patch(NODES, node, {"status": {"conditions": [cond]}},
                   content_type=SMP, subresource="status")  # fmt: skip


def nodes_by_name(ctx: Context) -> dict[str, Obj]:
    """Every node, by name: one list (the drain's nodes are many; a GET each is not)."""
    return {n["metadata"]["name"]: n for n in ctx.kube.list(NODES)}


def fence(ctx: Context, journal: Journal, names: Iterable[str]) -> list[str]:
    """Fence ``names`` (the journal already holds their conditions); those fenced now."""
    from concurrent.futures import ThreadPoolExecutor

    cond_type = ctx.config.condition
    nodes = nodes_by_name(ctx)
    todo = [
        name
        for name in names
        if name in nodes and fence_run(condition(nodes[name], cond_type)) != journal.run_id
    ]
    cond = fence_condition(cond_type, journal.run_id, _target(ctx), utc_timestamp())
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        list(pool.map(lambda name: _write(ctx, name, cond), todo))
    return todo


def refence(ctx: Context, journal: Journal) -> list[str]:
    """Fence again every journaled node whose condition was written ``True`` since."""
    cond_type = ctx.config.condition
    wanted = set(journal.nodes)
    again = []
    for node in ctx.kube.list(NODES):
        name = node["metadata"]["name"]
        cond = condition(node, cond_type)
        if name in wanted and cond is not None and str(cond.get("status")) == "True":
            stamp = utc_timestamp()
            _write(ctx, name, fence_condition(cond_type, journal.run_id, _target(ctx), stamp))
            again.append(name)
    return again


def open_nodes(ctx: Context, journal: Journal) -> list[str]:
    """Journaled nodes on which KAI would place a fraction now (condition ``True``)."""
    cond_type = ctx.config.condition
    return sorted(
        n["metadata"]["name"]
        for n in ctx.kube.list(NODES)
        if n["metadata"]["name"] in journal.nodes
        and str((condition(n, cond_type) or {}).get("status")) == "True"
    )


def restore(ctx: Context, journal: Journal) -> list[str]:
    """Put back each node's condition where this run's fence still stands; those restored."""
    cond_type = ctx.config.condition
    restored = []
    nodes = nodes_by_name(ctx)
    for name, before in sorted(journal.nodes.items()):
        node = nodes.get(name)
        if node is None or fence_run(condition(node, cond_type)) != journal.run_id:
            continue
        if before is None:  # it had none: the snapshot is its absence
            _write(ctx, name, {"type": cond_type, "$patch": "delete"})
        else:
            _write(ctx, name, {**before, "lastHeartbeatTime": utc_timestamp()})
        restored.append(name)
    return restored


def lift_outside(ctx: Context, journal: Journal, selector: dict[str, str]) -> list[str]:
    """After the recreate: remove this run's fence from nodes the new config does not select.

    The operator removes its condition from the old selection when the config is deleted;
    a fence it left (a node it no longer targeted) would keep claiming a reason nobody
    acts on. Nodes the new config selects get the operator's own word.
    """
    from fracctl.core.kube.nodes import labels_of, matches

    cond_type = ctx.config.condition
    lifted = []
    nodes = nodes_by_name(ctx)
    for name in sorted(journal.nodes):
        node = nodes.get(name)
        if node is None or fence_run(condition(node, cond_type)) != journal.run_id:
            continue
        if selector and matches(selector, labels_of(node)):
            continue
        _write(ctx, name, {"type": cond_type, "$patch": "delete"})
        lifted.append(name)
    return lifted
