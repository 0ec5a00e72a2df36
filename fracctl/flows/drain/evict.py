"""Evicting the planned pods group by group, and waiting until fractions have left.

Every eviction goes through the Eviction API with the pod's uid as precondition and no
grace-period override, several at once. A budget that answers 429 is asked again after
its Retry-After; while evictions run and while waiting, a fence the operator overwrote is
written again.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from fracctl.adapters.kube.evictions import BLOCKED, EVICTED, GONE, MULTIPLE_BUDGETS
from fracctl.core.drain import DrainPlan, DrainPod, Group
from fracctl.errors import FracctlError, Refused, TimedOut
from fracctl.flows.context import Context, DrainProgress
from fracctl.flows.drain import fence as fences
from fracctl.flows.drain import journal as journals
from fracctl.flows.drain.journal import Journal

#: Seconds between looks at the pods (and at the fence) while waiting.
POLL = 0.5
#: Evictions in flight at once. The API server serialises the budget updates itself
#: (a conflicting one is retried server-side); more senders than this gain nothing on
#: a control plane of one API server (``benchmarks/bench_drain.py``).
WORKERS = 16
#: PodGroups the live table shows at once (the first still to go).
TABLE_ROWS = 12
#: Seconds between looks at the fence while evictions run.
WATCH_EVERY = 1.0
#: Seconds between writes of the journal's evicted pods while evictions run.
JOURNAL_EVERY = 2.0
#: Seconds an admitted eviction's record must still have when the drain deletes its pod.
FINISH_WITHIN = 5.0


@dataclass
class Progress:
    """How far the evictions got: the live table's rows."""

    groups: int
    pods: int
    evicted: int = 0
    groups_done: int = 0
    refenced: list[str] = field(default_factory=list)

    def totals(self) -> str:
        """Where the evictions stand, in one line."""
        return (
            f"evicted {self.evicted}/{self.pods} pod(s), "
            f"{self.groups_done}/{self.groups} PodGroup(s) gone"
        )

    def line(self, group: Group) -> str:
        """One row: the group just evicted and the totals."""
        return (
            f"evicted {group.label} ({len(group.pods)} pod(s)): {self.groups_done}/{self.groups} "
            f"group(s), {self.evicted}/{self.pods} pod(s)"
        )


def watch_fence(ctx: Context, journal: Journal, progress: Progress) -> None:
    """Fence again every journaled node written ``True`` since, and say so."""
    again = fences.refence(ctx, journal)
    if again:
        progress.refenced.extend(again)
        ctx.info(f"the operator wrote the condition True on {', '.join(again)}: fenced again")


def evict_groups(ctx: Context, plan: DrainPlan, journal: Journal, *, deadline: float) -> Progress:
    """Evict every planned group, whole; record the evicted pods in the journal.

    Up to :data:`WORKERS` evictions are in flight at once, taken in the plan's order
    (group after group), so a group is gone moments after its first pod. The fence is
    watched, and the journal written (at most every :data:`JOURNAL_EVERY` seconds), from
    this thread while they run.

    Raises:
        Refused: the API server will not evict a pod (two budgets select it).
        TimedOut: a budget still forbade an eviction at ``deadline``.
    """
    progress = Progress(groups=len(plan.groups), pods=len(plan.pods))
    board = _Board(ctx, plan, progress, ctx.drain_progress(ctx) if ctx.drain_progress else None)
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="evict")
    try:
        running = _submit(ctx, plan, journal, board, pool, deadline, stop)
        for index in range(len(plan.groups)):
            if not board.left[index]:
                board.gone(index)
        written = ctx.clock.monotonic()
        board.redraw()
        while running:
            finished, _ = wait(running, timeout=WATCH_EVERY, return_when=FIRST_COMPLETED)
            for future in finished:
                index, pod = running.pop(future)
                if future.result() == EVICTED:  # raises what the eviction raised
                    journal.evicted.append(pod.key)
                board.evicted(index)
            board.redraw()
            if ctx.clock.monotonic() - written >= JOURNAL_EVERY:
                journals.write(ctx, journal)
                written = ctx.clock.monotonic()
            watch_fence(ctx, journal, progress)
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        board.close()
        with contextlib.suppress(FracctlError):  # an error on the way out says more
            journals.write(ctx, journal)
    return progress


@dataclass
class _Board:
    """The pods each planned group still has to lose, and the table (or lines) showing it."""

    ctx: Context
    plan: DrainPlan
    progress: Progress
    table: DrainProgress | None
    left: dict[int, int] = field(default_factory=dict)

    def gone(self, index: int) -> None:
        """The group at ``index`` is gone."""
        self.progress.groups_done += 1
        if self.table is None:
            self.ctx.info(self.progress.line(self.plan.groups[index]))

    def evicted(self, index: int) -> None:
        """One pod of the group at ``index`` went (evicted, or gone already)."""
        self.progress.evicted += 1
        self.left[index] -= 1
        if not self.left[index]:
            self.gone(index)

    def redraw(self) -> None:
        """Show the groups still going on the live table, if there is one."""
        if self.table is not None:
            groups = self.plan.groups
            going = [i for i in range(len(groups)) if self.left[i]]
            rows = [
                (groups[i].label, len(groups[i].pods), len(groups[i].pods) - self.left[i])
                for i in going[:TABLE_ROWS]
            ]
            self.table.show(rows, max(0, len(going) - TABLE_ROWS), self.progress.totals())

    def close(self) -> None:
        """Stop the live table and leave the totals in a line."""
        if self.table is not None:
            self.table.stop()
            self.ctx.info(self.progress.totals())


def _submit(
    ctx: Context,
    plan: DrainPlan,
    journal: Journal,
    board: _Board,
    pool: ThreadPoolExecutor,
    deadline: float,
    stop: threading.Event,
) -> dict[Future[str], tuple[int, DrainPod]]:
    """Start every planned eviction not journaled yet, in the plan's order.

    Returns the evictions in flight, each with its group's index and its pod.
    """
    done = set(journal.evicted)
    running: dict[Future[str], tuple[int, DrainPod]] = {}
    for index, group in enumerate(plan.groups):
        board.left[index] = 0
        for pod in group.pods:
            if pod.key in done:
                board.progress.evicted += 1
                continue
            board.left[index] += 1
            finish = pod.key in plan.finish
            running[pool.submit(_evict_one, ctx, pod, deadline, stop, finish)] = (index, pod)
    return running


def _evict_one(
    ctx: Context, pod: DrainPod, deadline: float, stop: threading.Event, finish: bool = False
) -> str:
    """One eviction, asked again after each 429's Retry-After until ``deadline``.

    With ``finish``, an eviction the API server admitted earlier is finished with a delete.
    """
    if finish and (done := _finish_admitted(ctx, pod)) is not None:
        return done
    while True:
        answer = ctx.kube.evict(pod.namespace, pod.name, uid=pod.uid)
        if answer.outcome == MULTIPLE_BUDGETS:
            raise Refused(f"the Eviction API will not evict {pod.key}: {answer.message}")
        if answer.outcome != BLOCKED:
            return answer.outcome
        if ctx.clock.monotonic() + answer.retry_after > deadline:
            raise TimedOut(
                f"a PodDisruptionBudget still forbids evicting {pod.key}: {answer.message}"
            )
        if stop.wait(answer.retry_after):
            return BLOCKED  # the run stops: this pod was not evicted


def _finish_admitted(ctx: Context, pod: DrainPod) -> str | None:
    """Finish an admitted eviction: delete this incarnation of the pod, own grace period.

    None (nothing done) when no budget's record of it is fresh enough any more.
    """
    from fracctl.core.drain import DELETION_TIMEOUT
    from fracctl.core.kube.resources import PDBS, PODS
    from fracctl.core.recreate.lock import parse_time
    from fracctl.errors import Conflict, NotFound

    now = ctx.clock.now()
    for pdb in ctx.kube.list(PDBS, namespace=pod.namespace):
        when = parse_time(((pdb.get("status") or {}).get("disruptedPods") or {}).get(pod.name))
        if when is not None and when.timestamp() + DELETION_TIMEOUT - now > FINISH_WITHIN:
            break
    else:
        return None
    try:
        ctx.kube.delete(PODS, pod.name, pod.namespace, uid=pod.uid)
    except (NotFound, Conflict):
        return GONE
    return EVICTED


def wait_fractions_gone(
    ctx: Context, journal: Journal, progress: Progress, *, deadline: float, force: bool = False
) -> None:
    """Wait until fractions have left the nodes; keep the fence up meanwhile.

    Left means: no fractional pod on any node (terminating ones included), and no KAI
    reservation pod on a fenced node.

    The evicted pods' replacements wait unscheduled (fractions are fenced everywhere);
    they hold no CUDA context and are placed once the new config's nodes are ready.

    Raises:
        TimedOut: naming the pods still there.
        Refused: a bare pod was placed while a fence was overwritten, and not ``force``.
    """
    from fracctl.flows.guards.scan import scan_fractional_pods

    fenced = set(journal.nodes)
    last = ""
    while True:
        scan = scan_fractional_pods(ctx)
        left = [f"{p.namespace}/{p.name} on {p.node}" for p in scan.pods if p.node]
        held = [
            f"{p.namespace}/{p.name} on {p.node}" for p in scan.reservations if p.node in fenced
        ]
        if not left and not held:
            ctx.info("no fractional pod is on any node, and no reservation pod on a fenced one")
            return
        status = f"waiting for {len(left)} fractional pod(s) and {len(held)} reservation pod(s)"
        if status != last:
            ctx.info(status)
            last = status
        if ctx.clock.monotonic() > deadline:
            raise TimedOut(
                f"fractional pods are still on nodes: {'; '.join((left + held)[:10])}",
                hint="a pod's grace period may be longer than the wait; rerun to go on",
            )
        watch_fence(ctx, journal, progress)
        gone = set(journal.evicted)
        newcomers = [
            (p.namespace, p.name)
            for p in scan.pods
            if p.node and f"{p.namespace}/{p.name}" not in gone
        ]
        _evict_newcomers(ctx, journal, newcomers, force=force)
        ctx.clock.sleep(POLL)


def _evict_newcomers(
    ctx: Context, journal: Journal, placed: list[tuple[str, str]], *, force: bool
) -> None:
    """Evict a fractional pod placed during the drain (while a fence was overwritten).

    The rest of its group went already; a budget that refuses it now is asked again on
    the next look. A bare pod is not evicted without ``force``: nothing would recreate it.
    """
    from fracctl.core.kube.resources import PODS

    for ns, name in placed:
        # A list by name: the role lists pods everywhere and gets none.
        found = ctx.kube.list(PODS, namespace=ns, field_selector=f"metadata.name={name}")
        if not found or found[0]["metadata"].get("deletionTimestamp"):
            continue
        pod = found[0]
        node = pod["spec"].get("nodeName")
        owners = pod["metadata"].get("ownerReferences") or []
        if not force and not any(o.get("controller") for o in owners):
            raise Refused(
                f"the bare pod {ns}/{name} was placed on {node} while the fence was "
                "overwritten: evicting it deletes it for good",
                hint="delete or move it yourself and rerun, or rerun with --force to evict it",
            )
        answer = ctx.kube.evict(ns, name, uid=pod["metadata"]["uid"])
        if answer.outcome == EVICTED:
            journal.evicted.append(f"{ns}/{name}")
            journals.write(ctx, journal)
            ctx.info(f"evicted {ns}/{name}: placed on {node} while the fence was overwritten")
