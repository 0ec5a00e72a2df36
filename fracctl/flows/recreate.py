"""``fracctl recreate``: guarded, resumable delete → sync → wait.

Every run decides from the cluster as observed now (see :mod:`fracctl.core.recreate`),
so a rerun after any partial failure converges: an object already deleted is not
deleted again, an object already terminating is waited for, an object already
recreated is only verified and waited on. The only thing kept locally is the backup of
the live object, written before any delete.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fracctl.core import recreate as plan_mod
from fracctl.core.drift import IN_SYNC, MISSING_DESIRED, REJECTED
from fracctl.core.nodes import is_ready, selector_of, selector_string
from fracctl.core.recreate import Plan
from fracctl.core.resources import EVENTS, NODES
from fracctl.errors import (
    Conflict,
    ExternalError,
    FracctlError,
    NotFound,
    Refused,
    TimedOut,
    UsageError,
)
from fracctl.flows import backends
from fracctl.flows.backends import Backend
from fracctl.flows.context import Context
from fracctl.flows.lock import LeaseLock, identity
from fracctl.flows.signals import interrupt_on_sigterm
from fracctl.flows.wait import ReadyResult, wait_ready

Obj = dict[str, Any]
Boundary = Callable[[str], None]

# Step boundaries, in order; tests interrupt the flow at each.
BOUNDARIES = (
    "locked",
    "planned",
    "guarded",
    "backed-up",
    "deleted",
    "gone",
    "recreated",
    "verified",
    "ready",
    "recorded",
)


@dataclass
class RecreateResult:
    """What ``recreate`` did (or, with ``--dry-run``, would do)."""

    plan: Plan
    outcome: str
    backend: str
    guards: dict[str, Any] | None = None
    backup: str | None = None
    ready: ReadyResult | None = None
    audit_file: str | None = None
    notes: list[str] = field(default_factory=list)
    proofs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "outcome": self.outcome,
            "backend": self.backend,
            "plan": self.plan.to_dict(),
            "guards": self.guards,
            "backup": self.backup,
            "ready": self.ready.to_dict() if self.ready else None,
            "audit_file": self.audit_file,
            "notes": self.notes,
            "proofs": self.proofs,
        }


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def state_dir(ctx: Context) -> Path:
    """Where backups and the audit log live."""
    return Path(ctx.expand(ctx.config.recreate.state_dir))


def check_backend(ctx: Context, backend: str) -> Backend:
    """The backend called ``backend``, its configuration checked (exit 2) before any I/O."""
    chosen = backends.get(backend)
    chosen.validate(ctx)
    return chosen


# --- steps ---------------------------------------------------------------------------


def unready_nodes(ctx: Context, selector: dict[str, str] | None) -> list[str]:
    """Nodes ``selector`` matches whose readiness condition is not True."""
    if selector is None:
        return []
    cond = ctx.config.condition
    nodes = ctx.kube.list(NODES, label_selector=selector_string(selector) or None)
    return sorted(n["metadata"]["name"] for n in nodes if not is_ready(n, cond))


def backup(ctx: Context, live: Obj) -> str:
    """Write the live object as YAML before any delete; one file per object incarnation."""
    meta = live.get("metadata") or {}
    folder = state_dir(ctx) / "backups"
    try:
        return _write_backup(folder, live, meta)
    except OSError as e:
        raise ExternalError(
            f"cannot write the backup under {folder}: {e.strerror}; nothing was deleted",
            hint="fix recreate.state_dir or its permissions",
        ) from None


def _write_backup(folder: Path, live: Obj, meta: dict[str, Any]) -> str:
    from ruamel.yaml import YAML

    from fracctl.redact import redact_data

    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{live.get('kind', 'object').lower()}-{meta.get('name')}-{str(meta.get('uid', ''))[:8]}"
    existing = sorted(folder.glob(f"{stem}-*.yaml"))
    if existing:
        return str(existing[-1])
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = folder / f"{stem}-{stamp}.yaml"
    tmp = path.with_suffix(".tmp")
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"# Backup of {live.get('kind')}/{meta.get('name')} taken by fracctl at {stamp}\n")
        yaml.dump(redact_data(live), f)  # before dumping: YAML folds long strings
    os.replace(tmp, path)  # a backup is either whole or absent
    return str(path)


def latest_backup(ctx: Context) -> str | None:
    """The newest backup of the target, if any."""
    t = ctx.config.target
    folder = state_dir(ctx) / "backups"
    found = sorted(
        folder.glob(f"{t.kind.lower()}-{t.name}-*.yaml"), key=lambda p: p.stat().st_mtime
    )
    return str(found[-1]) if found else None


def delete(ctx: Context, live: Obj) -> None:
    """Delete exactly this incarnation of the object (UID precondition)."""
    meta = live["metadata"]
    try:
        ctx.kube.delete(ctx.config.target.ref, meta["name"], uid=meta["uid"])
    except NotFound:
        pass  # already gone
    except Conflict as e:
        raise ExternalError(
            f"{live.get('kind')}/{meta['name']} changed while fracctl was deleting it "
            f"(another object with the same name now exists): {e.status.message}",
            hint="rerun: fracctl decides again from what the cluster holds",
        ) from None


def wait_gone(ctx: Context, uid: str, *, timeout: float | None = None) -> None:
    """Watch until the object with ``uid`` is gone (its finalizers released)."""
    t = ctx.config.target
    timeout = ctx.config.timeouts.delete if timeout is None else timeout
    seen: list[Obj] = []

    def gone(view: dict[str, Obj]) -> bool:
        this = [o for o in view.values() if o["metadata"].get("uid") == uid]
        seen[:] = this or seen
        return not this

    _view, finished = ctx.kube.watch_until(
        t.ref,
        gone,
        deadline=ctx.clock.monotonic() + timeout,
        monotonic=ctx.clock.monotonic,
        sleep=ctx.clock.sleep,
        field_selector=f"metadata.name={t.name}",
    )
    if finished:
        return
    last = seen[-1] if seen else None
    finalizers = ", ".join((last or {}).get("metadata", {}).get("finalizers") or []) or "none"
    raise TimedOut(
        f"{t.kind}/{t.name} is still terminating after {timeout:.0f}s; finalizers left: "
        f"{finalizers}. The gpu-fractioning operator releases "
        f"{t.finalizer} after clearing node conditions: is it running?",
        hint="check `kubectl -n gpu-fractioning get deploy,pods`; rerun fracctl recreate "
        "once the operator runs (it resumes by waiting)",
    )


def verify(ctx: Context, desired_selector: dict[str, str], backend: Backend, said: str) -> Obj:
    """Read the live object back: it must exist and carry git's selector."""
    t = ctx.config.target
    live = ctx.kube.get_or_none(ctx.config.target.ref, t.name)
    got = selector_of(live, t.selector_field)
    if (
        live is not None
        and got == desired_selector
        and not live["metadata"].get("deletionTimestamp")
    ):
        return live
    claim = backend.claim
    state = "is absent" if live is None else f"has nodeSelector {got}"
    raise ExternalError(
        f"{claim}: {t.kind}/{t.name} {state}, git wants {desired_selector} "
        f"(the backend said: {said})",
        hint="never trust the sync status; rerun with --backend apply to create it directly",
    )


def record(ctx: Context, *, live: Obj | None, entry: dict[str, Any]) -> str:
    """Append the audit line, and put an Event on the new object (best effort)."""
    from fracctl.redact import redact

    folder = state_dir(ctx)
    path = folder / "audit.log"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(redact(json.dumps(entry, sort_keys=True)) + "\n")
    except OSError as e:  # the cluster work is done; losing the log line must not undo that
        ctx.warn(f"could not write the audit line to {path}: {e.strerror}")
    if live is not None:
        t = ctx.config.target
        meta = live["metadata"]
        try:
            ctx.kube.create(
                EVENTS,
                {
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"generateName": f"{meta['name']}.", "namespace": "default"},
                    "involvedObject": {
                        "apiVersion": t.api_version,
                        "kind": t.kind,
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                    "reason": "Recreated" if entry["outcome"] == "recreated" else "RecreateChecked",
                    "message": redact(
                        f"fracctl ({entry['who']}): {entry['outcome']}; nodeSelector "
                        f"{entry['before']} -> {entry['after']}"
                    )[:1000],
                    "type": "Normal",
                    "source": {"component": "fracctl"},
                    "reportingComponent": "fracctl",
                    "reportingInstance": entry["who"][:128],
                    "firstTimestamp": entry["time"],
                    "lastTimestamp": entry["time"],
                    "count": 1,
                },
            )
        except FracctlError as e:
            ctx.warn(f"could not record an Event: {e}")
    return str(path)


# --- the flow ------------------------------------------------------------------------


def way_back(state: str, backup: str | None) -> str:
    """What to tell after a failure that left the original deleted: state, backup, commands."""
    restore = (
        f"restore the original: fracctl recreate --restore-from {backup} --yes; "
        if backup
        else "no backup of the original was found under recreate.state_dir; "
    )
    return f"{state}. {restore}or fix the cause and resume: fracctl recreate --yes"


def _amend(error: FracctlError, more: str) -> None:
    """Add to an error's message in place, so its class and exit code stay as they are."""
    error.message = f"{error.message}. {more}"
    error.args = (error.message,)


def _state_after_failure(ctx: Context, desired_sel: dict[str, str]) -> str:
    """One phrase for what the cluster holds now, read fresh (best effort)."""
    t = ctx.config.target
    try:
        live = ctx.kube.get_or_none(t.ref, t.name)
    except FracctlError:
        return f"{t.kind}/{t.name} was deleted and may not have been recreated"
    if live is None:
        return (
            f"{t.kind}/{t.name} WAS DELETED and is not recreated: the cluster has none, "
            "so no node gets MPS daemons"
        )
    if live["metadata"].get("deletionTimestamp"):
        return f"{t.kind}/{t.name} WAS DELETED and is still terminating"
    got = selector_of(live, t.selector_field)
    if got != desired_sel:
        return f"{t.kind}/{t.name} WAS DELETED and came back with nodeSelector {got}, not git's"
    return f"{t.kind}/{t.name} was deleted and recreated with git's nodeSelector"


def recreate(
    ctx: Context,
    *,
    dry_run: bool = False,
    yes: bool = False,
    backend: str | None = None,
    confirm: Callable[[Plan, dict[str, Any] | None], bool] | None = None,
    boundary: Boundary | None = None,
    desired_objects: list[Obj] | None = None,
) -> RecreateResult:
    """Run (or plan) the guarded delete → recreate → wait.

    Everything that can be proven read-only is proven before the first change: the
    guards, the Kubernetes identity's right to delete, and the backend's credentials,
    permissions and objects (:func:`fracctl.flows.backends.prove`). ``--dry-run`` runs the
    same proofs and fails the same way.

    Args:
        ctx: the context.
        dry_run: print the plan and change nothing (no lock either).
        yes: do not ask for confirmation.
        backend: argocd, flux or apply (default from config).
        confirm: asks the operator; required when not ``yes`` on a terminal.
        boundary: called with each step boundary name (fault injection in tests).
        desired_objects: rendered manifests (default: render ``ctx.config.git``).
    """
    from fracctl.flows.drift import check_target
    from fracctl.flows.preflight import run_guards
    from fracctl.flows.render import render_desired

    at = boundary or (lambda _step: None)
    backend = backend or ctx.config.recreate.backend
    chosen = check_backend(ctx, backend)
    if not dry_run and not yes and (confirm is None or not ctx.interactive):
        raise UsageError(
            "refusing to recreate without confirmation: stdin is not a terminal",
            hint="review the plan with --dry-run, then pass --yes",
        )
    objects = desired_objects if desired_objects is not None else render_desired(ctx)
    t = ctx.config.target

    lock: contextlib.AbstractContextManager[Any] = (
        contextlib.nullcontext() if dry_run else LeaseLock(ctx)
    )
    entry: dict[str, Any] = {
        "time": _now(),
        "who": getattr(lock, "me", None) or identity(),
        "action": "recreate",
        "object": f"{t.kind}/{t.name}",
        "backend": backend,
    }
    check_lock = lock.check if isinstance(lock, LeaseLock) else (lambda: None)
    with interrupt_on_sigterm(), lock:
        at("locked")
        drift = check_target(ctx, desired_objects=objects)
        if drift.verdict == MISSING_DESIRED:
            raise Refused(
                f"git has no {t.kind}/{t.name} at {ctx.config.git.revision} under "
                f"{ctx.config.git.path}; refusing to delete the live one",
                hint="check git.repo, git.path and git.revision",
            )
        if drift.verdict == REJECTED:
            raise Refused(
                f"the API server rejects git's {t.kind}/{t.name} for a reason a recreate does "
                f"not fix: {drift.message}",
                hint="fix the manifest in git",
            )
        live, desired = drift.live, drift.desired
        field_path = ctx.config.target.selector_field
        live_sel, desired_sel = (
            selector_of(live, field_path),
            selector_of(desired, field_path) or {},
        )
        terminating = bool(live and live["metadata"].get("deletionTimestamp"))
        plan = plan_mod.decide(
            verdict=drift.verdict,
            terminating=terminating,
            live_selector=live_sel,
            desired_selector=desired_sel,
            unready_nodes=unready_nodes(ctx, live_sel) if drift.verdict == IN_SYNC else [],
        )
        entry.update(before=live_sel, after=desired_sel)
        at("planned")
        result = RecreateResult(plan=plan, outcome=plan.reason, backend=backend)
        if not plan.steps:
            return result

        if plan_mod.RECREATE in plan.steps and desired is not None:
            result.proofs = backends.prove(
                ctx, chosen, desired, deletes=plan_mod.DELETE in plan.steps
            )
            for line in result.proofs:
                ctx.info(f"proven: {line}")
        if plan_mod.GUARDS in plan.steps:
            report = run_guards(ctx, desired_selector=desired_sel, live_selector=live_sel)
            result.guards = report.to_dict()
            if not report.ok:
                if dry_run:
                    result.outcome = "refused"
                    return result
                lines = "; ".join(f"{c.name}: {c.evidence} -> {c.fix}" for c in report.failed)
                raise Refused(f"preflight refused, nothing changed: {lines}")
        at("guarded")
        if dry_run:
            result.outcome = "dry-run"
            return result
        if not yes and confirm is not None and not confirm(plan, result.guards):
            raise Refused("not confirmed; nothing changed")

        # Whether the original is gone (deleted now, or by an earlier run) and git's
        # object not yet verified: a failure then must say so and how to get back.
        gone = plan.reason in (plan_mod.RESUME_GONE, plan_mod.RESUME_MISSING)
        try:
            for step in plan.steps:
                if step in (plan_mod.DELETE, plan_mod.RECREATE):
                    check_lock()
                live = _run_step(
                    ctx,
                    step,
                    result,
                    live=live,
                    desired=desired,
                    backend=chosen,
                    at=at,
                    entry=entry,
                )
                if step == plan_mod.DELETE:
                    gone = True
                elif step == plan_mod.VERIFY:
                    gone = False
            result.outcome = "recreated" if plan.changes_cluster else "ready"
        except (FracctlError, KeyboardInterrupt) as e:
            backup_path = result.backup or (latest_backup(ctx) if gone else None)
            if gone:
                said = way_back(_state_after_failure(ctx, desired_sel), backup_path)
                if isinstance(e, FracctlError):
                    _amend(e, said)
                else:  # interrupted: the CLI only says "Interrupted.", so say the rest here
                    ctx.warn(said)
            entry.update(
                outcome=f"failed: {e}" if isinstance(e, FracctlError) else "interrupted",
                time=_now(),
                backup=backup_path,
            )
            with contextlib.suppress(Exception):
                record(ctx, live=None, entry=entry)
            raise
        at("recorded")
        return result


def _run_step(
    ctx: Context,
    step: str,
    result: RecreateResult,
    *,
    live: Obj | None,
    desired: Obj | None,
    backend: Backend,
    at: Boundary,
    entry: dict[str, Any],
) -> Obj | None:
    """Run one step; returns the live object as the step leaves it."""
    t = ctx.config.target
    desired_sel = selector_of(desired, ctx.config.target.selector_field) or {}
    if step == plan_mod.BACKUP and live is not None:
        result.backup = backup(ctx, live)
        ctx.info(f"backed up {t.kind}/{t.name} to {result.backup}")
        at("backed-up")
    elif step == plan_mod.DELETE and live is not None:
        delete(ctx, live)
        ctx.info(f"deleted {t.kind}/{t.name} (uid {live['metadata']['uid']})")
        at("deleted")
    elif step == plan_mod.WAIT_GONE and live is not None:
        wait_gone(ctx, live["metadata"]["uid"])
        ctx.info(f"{t.kind}/{t.name} is gone")
        at("gone")
    elif step == plan_mod.RECREATE and desired is not None:
        if result.backup is None:
            result.backup = latest_backup(ctx)
            if result.backup:
                result.notes.append(f"the backup of the original object is {result.backup}")
        said = backend.recreate(ctx, desired)
        result.notes.append(said)
        ctx.info(said)
        at("recreated")
    elif step == plan_mod.VERIFY:
        live = verify(ctx, desired_sel, backend, result.notes[-1] if result.notes else "")
        ctx.info(f"verified: live nodeSelector is {desired_sel}")
        at("verified")
    elif step == plan_mod.WAIT_READY:
        result.ready = wait_ready(ctx, selector=desired_sel)
        at("ready")
    elif step == plan_mod.RECORD:
        final = ctx.kube.get_or_none(ctx.config.target.ref, t.name)
        done = {
            **entry,
            "time": _now(),
            "outcome": "recreated" if result.plan.changes_cluster else "ready",
            "backup": result.backup,
        }
        result.audit_file = record(ctx, live=final, entry=done)
    return live
