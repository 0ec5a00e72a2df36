"""The steps of each built-in kind's procedure, each safe to run again after a crash.

Every step first looks at the cluster: a delete of an object already gone, a create of
an object already created, a bridge already there, are no-ops. The journal
(:mod:`.journal`) says which incarnation was the original and what it owned.

A recreated workload is created *held* (a StatefulSet's partition at its replica count, a
Deployment paused, a DaemonSet ``OnDelete``), so that it adopts its pods without rolling
any; once every pod is proven adopted with its uid and restart count, git's object is
applied again and the update strategy rolls from there.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fracctl.core.kube.resources import PODS, PVCS, REPLICASETS, ResourceRef
from fracctl.core.procedures import Procedure
from fracctl.errors import Conflict, ExternalError, NotFound, TimedOut
from fracctl.flows.context import Context
from fracctl.flows.engines.desired import clean_desired
from fracctl.flows.engines.journal import ObjectJournal

Obj = dict[str, Any]
JOBS_DONE = ("Complete", "Failed")
POLL = 0.5


class Creator(Protocol):
    """How a procedure's create and release steps are done (each engine's ``objects``)."""

    name: str
    # Whether the live object is judged against git after the run: another's create is
    # never trusted; fracctl's own apply of git's object needs no second look.
    verifies: bool

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """Rehearse the create of git's object read-only; the evidence."""
        ...

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """What must happen right before the delete (recorded in ``journal``); the lines."""
        ...

    def create(self, w: Work, *, held: bool = False) -> Obj:
        """The recreated object (created now, or by an earlier run)."""
        ...

    def release(self, w: Work) -> None:
        """Take the hold away: git's object, as the backend renders it, from here on."""
        ...

    def finish(self, w: Work) -> None:
        """What follows the procedure (the helm backend upgrades the release)."""
        ...


@dataclass
class Work:
    """One object's procedure as it runs."""

    ctx: Context
    ref: ResourceRef
    namespace: str
    name: str
    desired: Obj
    journal: ObjectJournal
    kind: str
    say: Callable[[str], None]
    creator: Creator
    notes: list[str] = field(default_factory=list)

    @property
    def ns(self) -> str | None:
        """The namespace for requests (None for a cluster-scoped object)."""
        return self.namespace or None

    def current(self) -> Obj | None:
        """The live object now, whichever incarnation."""
        return self.ctx.kube.get_or_none(self.ref, self.name, self.ns)

    def recreated(self) -> Obj | None:
        """The live object, when it is not the original."""
        now = self.current()
        return now if now is not None and now["metadata"]["uid"] != self.journal.uid else None


# --- the steps every procedure shares -------------------------------------------------


def delete_original(w: Work, propagation: str) -> None:
    """Delete the original (uid precondition) and wait until it is gone."""
    now = w.current()
    if now is not None and now["metadata"]["uid"] == w.journal.uid:
        if not now["metadata"].get("deletionTimestamp"):
            try:
                w.ctx.kube.delete(w.ref, w.name, w.ns, uid=w.journal.uid, propagation=propagation)
            except NotFound:
                pass
            except Conflict as e:
                raise ExternalError(
                    f"{w.journal.key} changed while fracctl was deleting it: {e.status.message}",
                    hint="rerun: fracctl decides again from what the cluster holds",
                ) from None
            w.say(f"deleted {w.journal.key} (uid {w.journal.uid}, propagationPolicy {propagation})")
        _wait_gone(w)


def _wait_gone(w: Work) -> None:
    timeout = w.ctx.config.timeouts.delete

    def gone(view: dict[str, Obj]) -> bool:
        return not any(o["metadata"].get("uid") == w.journal.uid for o in view.values())

    if not watch_object(w, gone, timeout):
        raise TimedOut(
            f"{w.journal.key} is still terminating after {timeout:.0f}s (its finalizers: "
            "the garbage collector orphans or deletes what it owned first)",
            hint="check kube-controller-manager; rerun to resume",
        )
    w.say(f"{w.journal.key} is gone")


def watch_object(w: Work, done: Callable[[dict[str, Obj]], bool], timeout: float) -> bool:
    """Watch the object's name until ``done(view)``; False when ``timeout`` ran out."""
    _view, finished = w.ctx.kube.watch_until(
        w.ref, done, deadline=w.ctx.clock.monotonic() + timeout, clock=w.ctx.clock,
        namespace=w.ns, field_selector=f"metadata.name={w.name}",
    )  # fmt: skip
    return finished


def create(w: Work, body: Obj | None = None, *, manager: str = "fracctl") -> Obj:
    """Create git's object (server-side apply as ``manager``), unless this run created it."""
    done = w.recreated()
    if done is not None:
        return done
    made = w.ctx.kube.apply(w.ref, clean_desired(body or w.desired), field_manager=manager)
    w.say(f"created {w.journal.key} from git (uid {made['metadata']['uid']})")
    return made


# --- orphan and adopt -------------------------------------------------------------------


def expand_claims(w: Work, proc: Procedure) -> None:
    """Grow each claim the StatefulSet's templates grew (a merge patch; again is a no-op)."""
    for claim, before, after in proc.expand:
        patch = {"spec": {"resources": {"requests": {"storage": after}}}}
        w.ctx.kube.patch(PVCS, claim, patch, namespace=w.ns)
        w.say(f"expanded claim {claim} from {before} to {after}")


def held(w: Work, base: Obj | None = None) -> Obj:
    """Git's workload, to be created so that it adopts without rolling a pod.

    ``base`` is the backend's rendering of git's object, where the backend has one.
    """
    body = copy.deepcopy(base if base is not None else w.desired)
    spec = body.setdefault("spec", {})
    if w.kind == "StatefulSet":
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            replicas = max(int(spec.get("replicas", 1)), len(w.journal.pods))
            spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {
                **(strategy.get("rollingUpdate") or {}), "partition": replicas}}  # fmt: skip
    elif w.kind == "Deployment":
        spec["paused"] = True
    elif w.kind == "DaemonSet":
        spec["updateStrategy"] = {"type": "OnDelete"}
    return body


def wait_adopted(w: Work, new: Obj) -> None:
    """Until every pod the original owned is the new object's, with its restarts unchanged."""
    deadline = w.ctx.clock.monotonic() + w.ctx.config.timeouts.sync
    uid = new["metadata"]["uid"]
    while True:
        waiting = _not_adopted(w, uid)
        if not waiting:
            w.say(f"the new {w.kind} adopted all {len(w.journal.pods)} pod(s); none restarted")
            return
        if w.ctx.clock.monotonic() >= deadline:
            raise TimedOut(
                f"the new {w.journal.key} has not adopted {', '.join(waiting)} after "
                f"{w.ctx.config.timeouts.sync:.0f}s",
                hint="check kube-controller-manager; rerun to resume (the pods keep running)",
            )
        w.ctx.clock.sleep(POLL)


def _not_adopted(w: Work, uid: str) -> list[str]:
    pods = {p["metadata"]["uid"]: p for p in w.ctx.kube.list(PODS, namespace=w.ns)}
    owners = {uid}
    if w.kind == "Deployment":
        owners = {
            rs["metadata"]["uid"]
            for rs in w.ctx.kube.list(REPLICASETS, namespace=w.ns)
            if _controller(rs) == uid
        }
    waiting = []
    for pod_uid, restarts in w.journal.pods.items():
        name = w.journal.pod_names.get(pod_uid, pod_uid)
        pod = pods.get(pod_uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            raise ExternalError(
                f"pod {name} (uid {pod_uid}) was deleted while {w.journal.key} was "
                "recreated: something other than this procedure removed it",
                hint=f"see the events of {w.journal.key}'s namespace; rerun to finish",
            )
        if restart_count(pod) != restarts:
            raise ExternalError(
                f"pod {name} restarted ({restarts} -> {restart_count(pod)}) while "
                f"{w.journal.key} was recreated"
            )
        if _controller(pod) not in owners:
            waiting.append(name)
    return waiting


def _controller(obj: Obj) -> str:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((str(r.get("uid")) for r in refs if r.get("controller")), "")


def restart_count(pod: Obj) -> int:
    """The pod's restarts over all its containers."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount") or 0) for s in statuses)


def release(w: Work) -> None:
    """Apply git's object again: the hold goes, and the update strategy rolls from here."""
    w.ctx.kube.apply(w.ref, clean_desired(w.desired))
    w.say(f"applied git's {w.journal.key} again: its update strategy takes over")


def remove_left_replicasets(w: Work) -> None:
    """Delete the original's ReplicaSets that nothing adopted and that run no pod."""
    for name in w.journal.replicasets:
        rs = w.ctx.kube.get_or_none(REPLICASETS, name, w.ns)
        if rs is None or _controller(rs) or int((rs.get("status") or {}).get("replicas") or 0):
            continue
        try:
            w.ctx.kube.delete(REPLICASETS, name, w.ns, uid=rs["metadata"]["uid"])
        except NotFound:
            continue
        w.say(f"deleted the empty ReplicaSet {name} that nothing adopted")


# --- surge ---------------------------------------------------------------------------------


def wait_available(w: Work, new: Obj) -> None:
    """Until the recreated Deployment's pods are all updated and available."""
    timeout = w.ctx.config.timeouts.ready
    uid = new["metadata"]["uid"]
    seen: dict[str, int] = {}

    def available(view: dict[str, Obj]) -> bool:
        for d in view.values():
            if d["metadata"].get("uid") != uid:
                continue
            want = int((d.get("spec") or {}).get("replicas", 1))
            status = d.get("status") or {}
            seen.update(want=want, have=int(status.get("availableReplicas") or 0))
            return (
                int(status.get("observedGeneration") or 0) >= int(d["metadata"]["generation"])
                and int(status.get("updatedReplicas") or 0) >= want
                and seen["have"] >= want
            )
        return False

    if not watch_object(w, available, timeout):
        raise TimedOut(
            f"the new {w.journal.key} has {seen.get('have', 0)} of {seen.get('want', '?')} "
            f"pod(s) available after {timeout:.0f}s; the old ReplicaSets still serve",
            hint=f"see `kubectl describe deployment {w.name} -n {w.namespace}`; rerun to "
            "wait again (the old pods keep running until the new ones are available)",
        )
    w.say(f"the new {w.journal.key} has all {seen['want']} pod(s) available")


def remove_old_replicasets(w: Work) -> None:
    """Delete the original's ReplicaSets that nothing adopted, their pods with them."""
    for name in w.journal.replicasets:
        rs = w.ctx.kube.get_or_none(REPLICASETS, name, w.ns)
        if rs is None or _controller(rs) or rs["metadata"].get("deletionTimestamp"):
            continue
        try:
            w.ctx.kube.delete(REPLICASETS, name, w.ns, uid=rs["metadata"]["uid"],
                              propagation="Background")  # fmt: skip
        except NotFound:
            continue
        pods = int((rs.get("status") or {}).get("replicas") or 0)
        w.say(f"deleted the old ReplicaSet {name} and its {pods} pod(s)")


# --- Job ---------------------------------------------------------------------------------


def wait_job(w: Work, new: Obj) -> None:
    """Until the recreated Job is Complete or Failed (a failure is reported, not raised)."""
    timeout = w.ctx.config.timeouts.ready
    uid = new["metadata"]["uid"]
    ended: list[str] = []

    def done(view: dict[str, Obj]) -> bool:
        for job in view.values():
            if job["metadata"].get("uid") != uid:
                continue
            for c in (job.get("status") or {}).get("conditions") or []:
                if c.get("type") in JOBS_DONE and c.get("status") == "True":
                    ended[:] = [c["type"], str(c.get("message") or "")]
                    return True
        return False

    if not watch_object(w, done, timeout):
        raise TimedOut(
            f"the recreated {w.journal.key} has not ended after {timeout:.0f}s",
            hint="it keeps running; watch it with kubectl, or rerun to wait again",
        )
    line = f"the recreated {w.journal.key} ended {ended[0]}"
    w.say(line + (f": {ended[1]}" if ended[1] else ""))
    w.notes.append(line)
