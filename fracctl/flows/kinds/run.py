"""Running a chosen procedure: journal first, then its steps, each done at most once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fracctl.core.kube.resources import PVCS, REPLICASETS
from fracctl.core.procedures import BRIDGE, NEW_IP, ORPHAN_ADOPT, RERUN, SURGE
from fracctl.errors import ExternalError
from fracctl.flows.context import Context
from fracctl.flows.engines import journal as journals
from fracctl.flows.engines.journal import ObjectJournal
from fracctl.flows.engines.steps import (
    Work,
    delete_original,
    expand_claims,
    remove_left_replicasets,
    remove_old_replicasets,
    restart_count,
    wait_adopted,
    wait_available,
    wait_job,
)
from fracctl.flows.kinds.bridge import bridge_down, bridge_up, prove_access
from fracctl.flows.kinds.plan import Planned
from fracctl.flows.recreate.lock import LeaseLock, NoLock
from fracctl.flows.recreate.state import backup

if TYPE_CHECKING:
    from fracctl.flows.kinds.result import ObjectResult

Obj = dict[str, Any]
Boundary = Callable[[str], None]


def execute(
    ctx: Context, p: Planned, result: ObjectResult, lock: LeaseLock | NoLock, at: Boundary
) -> None:
    """Journal (and back up) the original, run the procedure's steps, drop the journal."""
    assert p.procedure is not None
    journal = p.journal if p.resumed and p.journal else _start(ctx, p)
    if journal.rerun != (rerun := ctx.rerun(f"recreate {p.spec}")):
        journal.rerun = rerun  # a resumed run names itself: it was given these flags now
        journals.write(ctx, journal)
    p.journal = journal
    result.backup = journal.backup or None
    at("journaled")
    o = p.drift
    w = Work(ctx, p.ref, o.namespace, o.name, o.desired or {}, journal, o.kind, ctx.info,
             creator=p.creator)  # fmt: skip
    original = p.live if not p.resumed else None
    steps = {
        ORPHAN_ADOPT: _orphan_adopt,
        SURGE: _surge,
        RERUN: _rerun,
        BRIDGE: _bridge,
        NEW_IP: _new_ip,
    }
    run = steps.get(p.procedure.name)
    if run is None:
        raise ExternalError(f"{p.key}: the journal names an unknown procedure {p.procedure.name}")
    lock.check()
    if original is not None:
        for line in p.creator.before_delete(ctx, journal):
            ctx.info(line)
    run(w, p, original, at)
    p.creator.finish(w)
    result.notes += w.notes
    journals.remove(ctx, journal.key)


def _start(ctx: Context, p: Planned) -> ObjectJournal:
    """The journal of a fresh run, written (with the backup) before the first change."""
    assert p.procedure is not None and p.live is not None
    live, facts = p.live, p.facts
    uid = live["metadata"]["uid"]
    j = journals.ObjectJournal(p.key, p.procedure.name, uid)
    # A run killed before its delete leaves its journal, and may have suspended (or held)
    # the backend already: the fresh journal keeps that, so that this run releases it.
    j.suspended = p.journal.suspended if p.journal else ""
    for pod in facts.pods if facts else ():
        j.pods[pod["metadata"]["uid"]] = restart_count(pod)
        j.pod_names[pod["metadata"]["uid"]] = pod["metadata"]["name"]
    if p.drift.kind == "Deployment":
        sets = ctx.kube.list(REPLICASETS, namespace=p.drift.namespace)
        j.replicasets = sorted(
            rs["metadata"]["name"]
            for rs in sets
            if any(r.get("uid") == uid for r in rs["metadata"].get("ownerReferences") or [])
        )
    if p.drift.kind == "StatefulSet" and facts:
        j.claims = sorted(facts.claims)
    j.rerun = ctx.rerun(f"recreate {p.spec}")
    j.backup = backup(ctx, live)
    ctx.info(f"backed up {p.key} to {j.backup}")
    journals.write(ctx, j)
    return j


def _phase(w: Work, phase: str, at: Boundary) -> None:
    w.journal.phase = phase
    journals.write(w.ctx, w.journal)
    at(phase)


def _orphan_adopt(w: Work, p: Planned, original: Obj | None, at: Boundary) -> None:
    if w.journal.phase in ("", "deleted", "created", "adopted"):
        if original is not None and p.procedure is not None:
            expand_claims(w, p.procedure)
        delete_original(w, "Orphan")
        _phase(w, "deleted", at)
        new = w.creator.create(w, held=True)
        _phase(w, "created", at)
        wait_adopted(w, new)
        _phase(w, "adopted", at)
    w.creator.release(w)
    _phase(w, "released", at)
    if w.kind == "Deployment":
        remove_left_replicasets(w)
    have = {c["metadata"]["name"] for c in w.ctx.kube.list(PVCS, namespace=w.ns)}
    lost = [c for c in w.journal.claims if c not in have]
    if lost:
        raise ExternalError(f"claim(s) {', '.join(lost)} of {w.journal.key} no longer exist")
    if w.journal.claims:
        w.say(f"every claim ({len(w.journal.claims)}) still exists")


def _surge(w: Work, p: Planned, original: Obj | None, at: Boundary) -> None:
    if w.journal.phase in ("", "deleted", "created"):
        delete_original(w, "Orphan")
        _phase(w, "deleted", at)
        new = w.creator.create(w)
        _phase(w, "created", at)
        wait_available(w, new)
        _phase(w, "available", at)
    remove_old_replicasets(w)


def _rerun(w: Work, p: Planned, original: Obj | None, at: Boundary) -> None:
    delete_original(w, "Background")
    _phase(w, "deleted", at)
    new = w.creator.create(w)
    _phase(w, "created", at)
    wait_job(w, new)


def _bridge(w: Work, p: Planned, original: Obj | None, at: Boundary) -> None:
    if original is not None:
        bridge_up(w, original)
        _phase(w, "bridged", at)
    delete_original(w, "Background")
    _phase(w, "deleted", at)
    w.creator.create(w)
    _phase(w, "created", at)
    w.notes += prove_access(w)
    for line in w.notes:
        w.say(f"proven: {line}")
    bridge_down(w)


def _new_ip(w: Work, p: Planned, original: Obj | None, at: Boundary) -> None:
    delete_original(w, "Background")
    _phase(w, "deleted", at)
    w.creator.create(w)
