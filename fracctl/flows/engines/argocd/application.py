"""What the argocd backend's rehearsal decides from an Application's documents.

Its project, whether it is idle (no operation, or only its automated sync failing on the
target's immutable field), whether it manages the target, its sync windows now and
ahead, the revision to pin, and the one target object in its rendering.
"""

from __future__ import annotations

import re
from typing import Any

from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.core.text import clip
from fracctl.errors import ExternalError, Refused
from fracctl.flows.context import Context
from fracctl.flows.engines import Obj


def project_of(doc: Obj, app: str) -> str:
    """The application's project; an error when the answer has none (not Argo CD's)."""
    spec = doc.get("spec") if isinstance(doc, dict) else None
    project = (spec or {}).get("project") if isinstance(spec, dict) else None
    if not isinstance(project, str) or not project:
        raise ExternalError(
            f"Argo CD application {app} has no spec.project in its answer",
            hint="is argocd.server an Argo CD API server?",
        )
    return project


def idle(doc: Obj, app: str, t: SyncTarget) -> str | None:
    """Refuse while the application is being deleted or runs an operation.

    Returns:
        An account of the running operation when it is Argo CD's automated sync failing
        on the target's immutable selector (the one fracctl may stop), else None.
    """
    from fracctl.flows.engines.argocd.autosync import automated_failing_on_target, running

    if (doc.get("metadata") or {}).get("deletionTimestamp"):
        raise Refused(
            f"Argo CD application {app} is being deleted: it would not sync the object back",
            hint="wait until it is gone and recreated, or point argocd.app at another one",
        )
    state = (doc.get("status") or {}).get("operationState") or {}
    if running(doc):
        said = automated_failing_on_target(doc, t.kind, t.name, t.refusal)
        if said is not None and state.get("phase") != "Terminating":
            return said
        phase = state.get("phase") or "Pending"
        raise Refused(
            f"Argo CD application {app} runs an operation now ({phase}: "
            f"{str(state.get('message') or 'not started yet')[:200]}); its sync would be "
            "refused with 'another operation is already in progress'",
            hint=f"wait for it (`argocd app wait {app} --operation`) or stop it "
            f"(`argocd app terminate-op {app}`), then rerun",
        )
    return None


def manages(doc: Obj, app: str, t: SyncTarget) -> str:
    """The evidence that the application manages the target; an error where it does not."""
    status = doc.get("status") or {}
    managed = status.get("resources") if isinstance(status, dict) else None
    if not any(
        isinstance(r, dict)
        and r.get("group", "") == t.group
        and r.get("kind") == t.kind
        and r.get("name") == t.name
        and (r.get("namespace") or "") == t.namespace
        for r in managed or []
    ):
        raise ExternalError(
            f"Argo CD application {app} does not manage {t.label}, so a sync would not recreate it",
            hint="check argocd.app, and that the application's source path holds the "
            "object (`argocd app resources " + app + "`)",
        )
    return f"application {app} manages {t.label}"


def windows_open(windows: Obj, app: str) -> str:
    """Refuse when Argo CD's own sync-window answer says a manual sync may not run now."""
    active = windows.get("activeWindows") or []
    if windows.get("canSync") is False:
        seen = "; ".join(
            f"{w.get('kind', '?')} {w.get('schedule', '?')} for {w.get('duration', '?')}"
            f" (manualSync {str(bool(w.get('manualSync'))).lower()})"
            for w in active
        )
        raise Refused(
            f"a sync window blocks a manual sync of Argo CD application {app} now"
            + (f": {seen}" if seen else "")
            + "; the sync after the delete would be refused",
            hint=f"wait until the window closes (`argocd app get {app}` shows it), or have "
            "the project's window allow manual syncs (manualSync: true)",
        )
    return f"no sync window blocks a manual sync of {app} now ({len(active)} active)"


def no_window_opens(windows: Obj, app: str, horizon: float, now: float) -> str:
    """Refuse when a deny window opens before the run can finish (delete, then sync).

    A deny window that does not let manual syncs through, assigned to the application,
    whose schedule fires within ``horizon`` seconds (``timeouts.delete +
    timeouts.sync``): the sync after the delete could be refused by it. Argo CD's answer
    (``ApplicationSyncWindow``: kind, schedule, duration, manualSync) names no time zone,
    so a schedule is read in UTC unless the window carries one.
    """
    from datetime import datetime, timedelta, timezone

    from fracctl.core.gitops.cron import next_fire

    start = datetime.fromtimestamp(now, tz=timezone.utc)
    for w in windows.get("assignedWindows") or []:
        if w.get("kind") != "deny" or w.get("manualSync"):
            continue
        schedule = str(w.get("schedule") or "")
        try:
            at = next_fire(
                schedule, start, timedelta(seconds=horizon), str(w.get("timeZone") or "")
            )
        except ValueError as e:
            raise Refused(
                f"Argo CD application {app} has a deny sync window fracctl cannot read "
                f"({schedule!r}: {e}): it cannot prove the sync after the delete may run",
                hint="fix the window's schedule in the AppProject",
            ) from None
        if at is not None:
            raise Refused(
                f"a deny sync window of Argo CD application {app} ({schedule} for "
                f"{w.get('duration', '?')}, manualSync false) opens at {at.isoformat()}, "
                f"before this run can finish (timeouts.delete + timeouts.sync = "
                f"{horizon:.0f}s from now): the sync after the delete could be refused",
                hint="run after the window has passed, or shorten timeouts.delete and "
                "timeouts.sync if the run needs less",
            )
    return f"no deny sync window of {app} opens within {horizon:.0f}s (the run's longest)"


def pinnable(doc: Obj) -> str | None:
    """The commit of Argo CD's last comparison, when a sync may be pinned to it."""
    spec = doc.get("spec") or {}
    automated = (spec.get("syncPolicy") or {}).get("automated")
    if isinstance(automated, dict) and automated.get("enabled") is not False:
        return None
    if spec.get("sources") or not (spec.get("source") or {}).get("repoURL"):
        return None  # multi-source and hydrated apps: not pinned
    commit = str(((doc.get("status") or {}).get("sync") or {}).get("revision") or "")
    return commit if re.fullmatch(r"[0-9a-f]{40}", commit) else None


def revision_of(doc: Obj, rendered: str) -> str:
    """``targetRevision (commit)`` for messages: what the application tracks, resolved.

    The manifests answer of v3.2.11 carries no revision; the commit is then the one of
    Argo CD's last comparison (``status.sync.revision``).
    """
    source = (doc.get("spec") or {}).get("source") or {}
    target = str(source.get("targetRevision") or "HEAD")
    commit = rendered or str(((doc.get("status") or {}).get("sync") or {}).get("revision") or "")
    return f"{target} ({commit[:12]})" if commit else target


def shown(value: Any) -> str:
    """A field's value in a message: a missing map is empty, a long value is cut."""
    return clip(str({} if value is None else value), 200)


def rendered_target(
    ctx: Context, objects: list[Obj], app: str, at: str, desired: Obj, t: SyncTarget | None = None
) -> Obj:
    """The one target object in Argo CD's rendering; refuse unless its held fields are git's.

    ``t`` is the object (default: the fractioning config).
    """
    t = t or SyncTarget.of_config(ctx.config.target)
    found = [o for o in objects if t.matches(o)]
    if len(found) != 1:
        raise Refused(
            f"Argo CD renders application {app} at {at} with {len(found)} {t.label} "
            f"objects, not one: its sync would not create the object git has",
            hint="check the application's source path and targetRevision "
            f"(`argocd app manifests {app}`)",
        )
    creates = found[0]
    meta = creates.get("metadata") or {}
    if t.namespace and not meta.get("namespace"):  # Argo CD applies it in its destination's
        creates = {**creates, "metadata": {**meta, "namespace": t.namespace}}
    theirs, ours = t.values(creates), t.values(desired)
    for path in t.fields:
        if (theirs[path] or {}) != (ours[path] or {}):
            g = ctx.config.git
            raise Refused(
                f"Argo CD would create {t.label} with {path} {shown(theirs[path])} (its "
                f"rendering of {app} at {at}), but git has {shown(ours[path])} at "
                f"{g.revision} under {g.path}: the recreate would bring back the wrong "
                f"{path.rsplit('.', 1)[-1]}",
                hint="push the change to the branch the application tracks (or set its "
                "targetRevision), wait for Argo CD to see it, then rerun",
            )
    return creates
