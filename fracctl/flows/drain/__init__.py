"""``recreate --drain``: fence fractional scheduling, evict the fractional pods, recreate.

The steps, each recorded in the journal (:mod:`.journal`) so that a rerun from any
machine resumes: fence every node where KAI would place a fraction (:mod:`.fence`),
evict the fractional pods PodGroup by PodGroup through the Eviction API (:mod:`.evict`),
wait until none is on a node, check the fence still holds; then the recreate as without
the drain, and the operator's conditions on the new selection reopen scheduling.

Before the delete every failure (and Ctrl-C) undoes the fence; from the delete on there
is no undo, only forward (a rerun) or ``--restore-from``.
"""

from __future__ import annotations

from typing import Any

from fracctl.core.drain import DELETING, EVICTED, FENCED, DrainPlan
from fracctl.core.kube.nodes import condition
from fracctl.errors import Refused
from fracctl.flows.context import Context
from fracctl.flows.drain import fence as fences
from fracctl.flows.drain import journal as journals
from fracctl.flows.drain.evict import Progress, evict_groups, wait_fractions_gone, watch_fence
from fracctl.flows.drain.journal import Journal
from fracctl.flows.drain.plan import plan

Obj = dict[str, Any]

__all__ = ["Journal", "abort", "before_delete", "execute", "finish", "plan", "start", "undo"]


def start(
    ctx: Context, p: DrainPlan, *, live: Obj, desired: Obj, journal: Journal | None
) -> Journal:
    """The journal, written (or brought up to date) before the first fence."""
    cond_type = ctx.config.condition
    if journal is None:
        journal = Journal(run_id=p.run_id, phase=FENCED, old=live, new=desired)
    nodes = fences.nodes_by_name(ctx)
    for name in p.nodes:
        if name not in journal.nodes:
            node = nodes.get(name)
            journal.nodes[name] = condition(node, cond_type) if node else None
    journal.new = desired
    journals.write(ctx, journal)  # before the first fence: the undo needs the snapshots
    return journal


def execute(ctx: Context, p: DrainPlan, journal: Journal) -> None:
    """Fence, evict, wait: every step before the delete.

    Raises on any failure; the caller undoes the fence.
    """
    fenced = fences.fence(ctx, journal, p.nodes)
    ctx.info(
        f"fenced {len(p.nodes)} node(s) for run {journal.run_id}"
        + (f" ({', '.join(fenced)} now)" if fenced else " (already)")
        + ": KAI places no fractional pod until the recreate is done"
    )
    deadline = ctx.clock.monotonic() + max(ctx.config.timeouts.delete, p.grace + 30)
    if p.finish:
        ctx.info(
            f"finishing the eviction of {len(p.finish)} pod(s) that the API server admitted "
            "for an earlier run and never deleted: deleting them (their budget counted them "
            "already)"
        )
    if p.budget_wait > 0:
        ctx.info(
            f"a budget still counts pods whose eviction an earlier run started as being "
            f"evicted: their evictions may wait up to {p.budget_wait:.0f}s, until the API "
            "server forgets them"
        )
        deadline += p.budget_wait
    progress = evict_groups(ctx, p, journal, deadline=deadline)
    wait_fractions_gone(ctx, journal, progress, deadline=deadline, force=p.force)
    # The operator may write True again between the re-fence and the look that follows
    # (it rewrites every node when an agent restarts): fence again, and wait again for
    # any fraction placed meanwhile, until a look finds every fence standing.
    while still := _reopened(ctx, journal, progress):
        if ctx.clock.monotonic() > deadline:
            raise Refused(
                f"the fence does not hold on {', '.join(still)}: the condition is True",
                hint="something keeps writing the condition True; find it and rerun",
            )
        wait_fractions_gone(ctx, journal, progress, deadline=deadline, force=p.force)
    journal.phase = EVICTED
    journals.write(ctx, journal)


def _reopened(ctx: Context, journal: Journal, progress: Progress) -> list[str]:
    """Fence again what was written True; the journaled nodes still open after that."""
    watch_fence(ctx, journal, progress)
    return fences.open_nodes(ctx, journal)


def before_delete(ctx: Context, journal: Journal) -> None:
    """Record that the delete follows: from here there is no undo, only forward."""
    journal.phase = DELETING
    journals.write(ctx, journal)


def undo(ctx: Context, journal: Journal) -> str:
    """Lift this run's fence (restoring each node's condition) and clear the journal."""
    restored = fences.restore(ctx, journal)
    journals.clear(ctx)
    evicted = ", ".join(journal.evicted[:10]) + (
        f" and {len(journal.evicted) - 10} more" if len(journal.evicted) > 10 else ""
    )
    return (
        f"the drain of run {journal.run_id} was undone: the condition is restored on "
        f"{', '.join(restored) or 'no node (none still fenced)'}; "
        + (
            f"{len(journal.evicted)} pod(s) were evicted: {evicted}"
            if journal.evicted
            else "no pod was evicted"
        )  # fmt: skip
    )


def finish(ctx: Context, journal: Journal, selector: dict[str, str]) -> None:
    """After the recreate: no fence of this run outside the new selection; clear the journal."""
    lifted = fences.lift_outside(ctx, journal, selector)
    if lifted:
        ctx.info(f"lifted the fence from {', '.join(lifted)} (not selected by git's config)")
    journals.clear(ctx)
    ctx.info(f"the drain of run {journal.run_id} is done: scheduling follows the operator again")


def abort(ctx: Context) -> str:
    """Undo a journaled drain that has not reached the delete.

    Raises:
        Refused: the drain reached the delete (the original is gone): no undo.
    """
    journal = journals.read(ctx)
    if journal is None:
        return "no drain is journaled: nothing to undo"
    if journal.phase == DELETING:
        t = ctx.config.target
        live = ctx.kube.get_or_none(t.ref, t.name)
        if live is None or (live.get("metadata") or {}).get("uid") != journal.old_uid:
            raise Refused(
                f"the drain of run {journal.run_id} reached the delete of {t.kind}/{t.name}: "
                "there is no undo",
                hint="go forward: fracctl recreate --drain --yes (or --restore-from a backup)",
            )
    return undo(ctx, journal)
