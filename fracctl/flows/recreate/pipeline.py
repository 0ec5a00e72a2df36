"""One recreate run's pipeline: what it carries from step to step, and each step.

:func:`fracctl.flows.recreate.recreate` plans a run and then runs the steps of
:data:`PIPELINE` that its plan names, in order; each ends at a boundary where a test (or a
signal) may stop it, and a rerun goes on from what the cluster shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fracctl.core.clock import utc_timestamp
from fracctl.core.kube.nodes import selector_of
from fracctl.core.outcome import Outcome
from fracctl.core.recreate import plan as recreate_plan
from fracctl.core.recreate.plan import Plan
from fracctl.errors import Refused
from fracctl.flows.context import Context
from fracctl.flows.drain import steps as drain_steps
from fracctl.flows.engines import Backend
from fracctl.flows.engines.rehearse import prove
from fracctl.flows.recreate.arming import arm
from fracctl.flows.recreate.live_object import delete, verify, wait_gone
from fracctl.flows.recreate.lock import LeaseLock, NoLock
from fracctl.flows.recreate.state import backup, latest_backup, record
from fracctl.flows.recreate.wait import ReadyResult, wait_ready

if TYPE_CHECKING:
    from fracctl.core.drain import DrainPlan
    from fracctl.flows.drain import Journal
    from fracctl.flows.guards.preflight import PreflightReport

Obj = dict[str, Any]


@dataclass
class RecreateResult:
    """What ``recreate`` did (or, with ``--dry-run``, would do)."""

    plan: Plan
    outcome: Outcome
    backend: str
    guards: PreflightReport | None = None
    backup: str | None = None
    ready: ReadyResult | None = None
    audit_file: str | None = None
    notes: list[str] = field(default_factory=list)
    proofs: list[str] = field(default_factory=list)
    drain: DrainPlan | None = None  # with --drain (or a journaled drain to resume)
    expected_window: str | None = None  # the bench's last figure, when the plan deletes

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        extra = {"drain": self.drain.to_dict()} if self.drain else {}
        return {
            **extra,
            "outcome": self.outcome,
            "backend": self.backend,
            "plan": self.plan.to_dict(STEP_TEXT),
            "guards": self.guards.to_dict() if self.guards else None,
            "backup": self.backup,
            "ready": self.ready.to_dict() if self.ready else None,
            "audit_file": self.audit_file,
            "notes": self.notes,
            "proofs": self.proofs,
            "expected_window": self.expected_window,
        }


@dataclass
class Run:
    """What one run carries from step to step."""

    ctx: Context
    result: RecreateResult
    backend: Backend
    live: Obj | None
    desired: Obj
    entry: dict[str, Any]
    dry_run: bool = False
    lock: LeaseLock | NoLock = field(default_factory=NoLock)
    announce: bool = True  # say each proof as it passes (no plan will show them)
    created: str = ""  # what the backend said when it created git's object
    drain: bool = False  # fence and evict the fractional pods before the delete
    force: bool = False  # with drain: evict bare pods too
    journal: Journal | None = None  # the drain's journal, once there is one
    armed: bool = False  # the guard policy was armed for this object's update

    @property
    def desired_selector(self) -> dict[str, str]:
        """Git's ``nodeSelector``."""
        return selector_of(self.desired, self.ctx.config.target.selector_field) or {}

    @property
    def live_selector(self) -> dict[str, str] | None:
        """The live ``nodeSelector`` as planned (None when there was no object)."""
        return self.result.plan.before


def _prove(run: Run) -> None:
    deletes = recreate_plan.DELETE in run.result.plan.steps
    proof = prove(run.ctx, run.backend, run.desired, deletes=deletes, live=run.live)
    run.result.proofs = proof.evidence
    run.desired = proof.creates  # verify holds the live object to what was proven
    for line in run.result.proofs if run.announce else ():
        run.ctx.info(f"proven: {line}")


def _guards(run: Run) -> None:
    from fracctl.flows.guards.preflight import run_guards

    report = run_guards(
        run.ctx,
        desired_selector=run.desired_selector,
        live_selector=run.live_selector,
        live=run.live,
        desired=run.desired,
    )
    if run.drain:
        report = drain_steps.guards(run, report)
    run.result.guards = report
    if not report.ok:
        run.result.outcome = Outcome.REFUSED
        if not run.dry_run:
            lines = "; ".join(f"{c.name}: {c.evidence} -> {c.fix}" for c in report.failed)
            raise Refused(f"preflight refused, nothing changed: {lines}")


def _backup(run: Run) -> None:
    if run.live is not None:
        t = run.ctx.config.target
        run.result.backup = backup(run.ctx, run.live)
        run.ctx.info(f"backed up {t.kind}/{t.name} to {run.result.backup}")


def _delete(run: Run) -> None:
    if run.live is not None:
        from fracctl.flows.engines.rehearse import guard_again

        t = run.ctx.config.target
        run.ctx.info(guard_again(run.ctx, run.live, run.desired, on_nodes_only=run.drain))
        # A backend may have one thing to do first (Argo CD: stop its failing auto-sync).
        for line in run.backend.before_delete(run.ctx):
            run.ctx.info(line)
        arm(run.ctx, run.lock, run.live)
        if run.journal is not None:
            from fracctl.flows import drain

            drain.before_delete(run.ctx, run.journal)
        delete(run.ctx, run.live)
        run.ctx.info(f"deleted {t.kind}/{t.name} (uid {run.live['metadata']['uid']})")


def _upgrade(run: Run) -> None:
    """The backend's own run deletes and recreates the object: guard, arm, then run it."""
    from fracctl.flows.engines.rehearse import guard_again

    run.ctx.info(guard_again(run.ctx, run.live, run.desired, on_nodes_only=run.drain))
    if run.live is not None:  # the policy lets the backend's delete through, as ours
        delegate = run.backend.deletes_as(run.ctx)
        arm(run.ctx, run.lock, run.live, delegate)
    if run.journal is not None:
        from fracctl.flows import drain

        drain.before_delete(run.ctx, run.journal)
    _recreate(run)


def _arm(run: Run) -> None:
    """Right before an update that rolls the daemons: guard again, arm the guard policy."""
    from fracctl.flows.engines.rehearse import guard_again

    ctx = run.ctx
    ctx.info(guard_again(ctx, run.live, run.desired, on_nodes_only=run.drain, change="update"))
    if run.live is not None:  # the policy lets this object's update through, whoever sends it
        arm(ctx, run.lock, run.live, update=True)
        run.armed = True
    if run.journal is not None:
        from fracctl.flows import drain

        drain.before_delete(ctx, run.journal)


def _wait_gone(run: Run) -> None:
    if run.live is not None:
        t = run.ctx.config.target
        wait_gone(run.ctx, run.live["metadata"]["uid"])
        run.ctx.info(f"{t.kind}/{t.name} is gone")


def _recreate(run: Run) -> None:
    result = run.result
    if result.backup is None:
        result.backup = latest_backup(run.ctx)
        if result.backup:
            result.notes.append(f"the backup of the original object is {result.backup}")
    run.created = run.backend.recreate(run.ctx, run.desired)
    result.notes.append(run.created)
    run.ctx.info(run.created)


def _verify(run: Run) -> None:
    rolls = run.result.plan.reason == recreate_plan.ROLL
    spec = run.desired if rolls else None  # an update in place: every spec field git sets
    run.live = verify(run.ctx, run.desired_selector, run.backend, run.created, desired=spec)
    held = "spec is git's" if rolls else f"nodeSelector is {run.desired_selector}"
    run.ctx.info(f"verified: live {held}")


def _wait_ready(run: Run) -> None:
    run.result.ready = wait_ready(run.ctx, selector=run.desired_selector)


def _record(run: Run) -> None:
    """The audit line, and an Event on the object the run verified (or planned on).

    The Event names the object by name and uid only, which the run holds already: no
    read between the last ready node and the return.
    """
    result = run.result
    final = run.live
    done = {
        **run.entry,
        "time": utc_timestamp(),
        "outcome": done_outcome(result.plan),
        "backup": result.backup,
    }
    result.audit_file = record(run.ctx, live=final, entry=done)


def done_outcome(plan: Plan) -> Outcome:
    """What a run of ``plan`` that finished came to."""
    if plan.reason == recreate_plan.ROLL:
        return Outcome.UPDATED
    return Outcome.RECREATED if plan.changes_cluster else Outcome.READY


@dataclass(frozen=True)
class Step:
    """One step of the pipeline: its plan name, what it does, and where it can be stopped."""

    name: str
    text: str
    boundary: str  # reached when the step is done; tests interrupt there
    run: Callable[[Run], None]
    acts: bool = True  # changes something: runs only after --dry-run's exit and the prompt
    renew_lock: bool = False  # renew the Lease (and stop if it was lost) right before


PIPELINE: tuple[Step, ...] = (
    Step(recreate_plan.PROVE, "prove, read-only, that the backend can recreate it "
         "(credentials, permissions, the objects it will use)", "proven", _prove, acts=False),
    Step(recreate_plan.GUARDS, "run the preflight guards (fractional pods, label policy, "
         "selector coverage)", "guarded", _guards, acts=False),
    Step(recreate_plan.BACKUP, "back up the live object", "backed-up", _backup),
    Step(recreate_plan.DELETE, "delete the live object", "deleted", _delete, renew_lock=True),
    Step(recreate_plan.WAIT_GONE, "wait until it is gone (the operator releases its finalizer)",
         "gone", _wait_gone),
    Step(recreate_plan.RECREATE, "recreate it from git", "recreated", _recreate, renew_lock=True),
    Step(recreate_plan.UPGRADE, "run the chart's upgrade (helm, or a HelmRelease's "
         "helm-controller): its hook deletes the object, waits for it and creates git's",
         "upgraded", _upgrade,
         renew_lock=True),
    Step(recreate_plan.ARM, "guard again and arm the guard policy for this update",
         "armed", _arm, renew_lock=True),
    Step(recreate_plan.UPDATE, "update it in place from git (the backend applies it); the "
         "operator rolls the daemons", "updated", _recreate, renew_lock=True),
    Step(recreate_plan.VERIFY, "verify the live object equals git on its immutable fields",
         "verified", _verify),
    Step(recreate_plan.WAIT_READY, "wait until the daemons rolled out and every selected node "
         "reports ready", "ready",
         _wait_ready),
    Step(recreate_plan.RECORD, "record an Event and an audit line", "recorded", _record),
)  # fmt: skip
STEPS = {s.name: s for s in PIPELINE}
STEP_TEXT = {s.name: s.text for s in PIPELINE}
# Every point where a run can be stopped, in order; tests interrupt the flow at each.
BOUNDARIES = ("locked", "planned", *(s.boundary for s in PIPELINE))
