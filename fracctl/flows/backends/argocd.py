"""The ``argocd`` backend: Argo CD syncs exactly the target resource of the application.

The target is the fractioning config unless the backend is given another
:class:`~fracctl.core.sync_target.SyncTarget` (``recreate KIND/NAME``).
"""

from __future__ import annotations

import re
from typing import Any

from fracctl.core.sync_target import SyncTarget
from fracctl.core.text import clip
from fracctl.errors import ExternalError, Refused, TimedOut, UsageError
from fracctl.flows.backends import BackendBase, Obj, Proof, dry_run_create
from fracctl.flows.backends.argocd_autosync import settle
from fracctl.flows.context import Context


class ArgoCDBackend(BackendBase):
    """Have Argo CD sync exactly the target resource of the application."""

    name = "argocd"
    claim = "Argo CD reported Succeeded but the live object differs"

    def __init__(self, target: SyncTarget | None = None) -> None:
        self.target = target  # None: the configured fractioning config
        # The commit the rehearsal rendered and dry-ran, and the sync then uses: set for
        # an application without automated sync (Argo CD refuses a pinned revision for
        # one with it: "Cannot sync to …: auto-sync currently set to …").
        self.pinned: str | None = None
        # Argo CD's automated sync, failing on the target, that runs now: stopped right
        # before the delete (after the guards and any confirmation), never earlier.
        self.stoppable: str | None = None

    def _target(self, ctx: Context) -> SyncTarget:
        return self.target or SyncTarget.of_config(ctx.config.target)

    def _resource(self, ctx: Context) -> dict[str, str]:
        return self._target(ctx).resource()

    def _app(self, ctx: Context) -> str:
        app = ctx.config.argocd.app
        if not app:
            raise UsageError(
                "the argocd backend needs the application name",
                hint="set argocd.app in fracctl.yaml or FRACCTL_ARGOCD_APP, or use --backend apply",
            )
        return str(app)

    def validate(self, ctx: Context) -> None:
        """The application name, the server address and the token are set and well formed."""
        self._app(ctx)
        ctx.argocd  # noqa: B018 - builds the client: checks the server and the token

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """Rehearse the sync that will recreate the object, read-only, as the same account.

        In order: the token and the application (GET); the application is not being
        deleted and runs no operation; it manages the target; the account may sync it;
        no sync window blocks a manual sync now; Argo CD's repo server renders the
        application now, with exactly one target object whose immutable field equals
        git's; and the API server would admit that object (a dry-run create).
        """
        app = self._app(ctx)
        t = self._target(ctx)
        client = ctx.argocd
        doc = client.get_application(app)  # proves the token and the application
        doc = settle(ctx, app, doc, t.kind, t.name, t.refusal)
        project = _project(doc, app)
        namespace = (doc.get("metadata") or {}).get("namespace") or ""
        where = f" in namespace {namespace}" if namespace else ""
        evidence = [f"Argo CD token valid; application {app}{where} readable (project {project})"]
        self.stoppable = _idle(doc, app, t)
        if self.stoppable:
            evidence.append(
                f"runs {self.stoppable}: fracctl terminates that operation, and only it, right "
                "before the delete, then dry-runs this sync"
            )
        evidence.append(_manages(doc, app, t))
        sub = f"{project}/{app}"  # project/name, or project/namespace/name
        if not client.can_i("applications", "sync", sub):
            raise ExternalError(
                f"the Argo CD account may read application {app} but not sync it "
                f"(can-i applications sync {sub}: no)",
                hint=f"grant 'p, <role>, applications, sync, {project}/*, allow' in "
                "argocd-rbac-cm to the token's account, or use another token",
            )
        evidence.append(f"the account may sync {sub}")
        windows = client.sync_windows(app)
        evidence.append(_windows_open(windows, app))
        horizon = ctx.config.timeouts.delete + ctx.config.timeouts.sync
        evidence.append(_no_window_opens(windows, app, horizon, ctx.clock.now()))
        self.pinned = _pinnable(doc)
        objects, revision = client.rendering(app, self.pinned)  # the repo server answers now
        at = _revision_of(doc, revision or self.pinned or "")
        creates = _rendered_target(ctx, objects, app, at, desired, t)
        held = " and ".join(f"{path} {_shown(v)}" for path, v in t.values(creates).items())
        evidence.append(f"Argo CD renders {_named(t)} at {at} with {held}, as git has")
        dry_run_create(ctx, creates, ref=t.ref)
        evidence.append("the API server admits Argo CD's object (a dry-run create)")
        if not self.stoppable:
            evidence.append(self._dry_run_sync(ctx, app))
        return Proof(evidence, creates)

    def before_delete(self, ctx: Context) -> list[str]:
        """Right before the delete: stop the failing automated sync, then dry-run this sync.

        Raises:
            Refused: the dry run fails, or the automated sync keeps coming back.
        """
        if not self.stoppable:
            return []
        from fracctl.flows.backends.argocd_autosync import stop

        app = self._app(ctx)
        said = [stop(ctx, app, self.stoppable)]
        return [*said, self._dry_run_sync(ctx, app)]

    def _dry_run_sync(self, ctx: Context, app: str) -> str:
        """The very sync that follows, with ``dryRun``: Argo CD's own rules say yes.

        The API runs the same checks as for the real sync (RBAC, sync windows, the app
        not deleting, no operation running), and the controller the same sync of the one
        resource (the project's resource whitelist, a rendering without comparison
        errors, the resource filter matching a rendered object) with kubectl's
        client-side dry run for the apply. It writes the dry run's operation state over
        the application's last one; it adds no history entry and changes no resource.
        """
        from fracctl.flows.backends.argocd_sync import resource_result, wait_operation

        client = ctx.argocd
        resource = self._resource(ctx)
        self._start_dry_run(ctx, app, resource)
        try:
            state = wait_operation(client, app, timeout=ctx.config.timeouts.sync, clock=ctx.clock)
        except TimedOut as e:
            # A dry run left running would refuse every later sync ("another operation is
            # already in progress"): stop the one this run started.
            stopped = client.terminate_operation(app)
            raise Refused(
                f"Argo CD's dry run of the sync of {app} did not finish: {e.message}; "
                + (
                    "fracctl terminated the dry run it started"
                    if stopped
                    else "it had ended when fracctl went to terminate it"
                )
                + ", and nothing was changed",
                hint=f"see `argocd app get {app}` and the application controller's logs",
            ) from None
        result = resource_result(state, resource)
        t = self._target(ctx)
        if state.get("phase") != "Succeeded" or result is None or result.get("status") != "Synced":
            detail = (result or {}).get("message") or state.get("message") or "no message"
            seen = "no result for the object" if result is None else result.get("status")
            raise Refused(
                f"Argo CD's dry run of the sync of {_named(t)} in {app} ended "
                f"{state.get('phase')} ({seen}): {str(detail)[:300]}; the sync after the "
                "delete would fail the same way",
                hint=f"see `argocd app get {app}`; fix what Argo CD names, then rerun",
            )
        return (
            f"Argo CD's dry run of this sync succeeded ({_named(t)}: "
            f"{result.get('message') or 'Synced'})"
        )

    def _start_dry_run(self, ctx: Context, app: str, resource: dict[str, str]) -> None:
        """Start the dry-run sync.

        An automated sync failing on the target that started in between is terminated (up
        to three times); any other operation refuses.
        """
        from fracctl.adapters.argocd.errors import OperationInProgress
        from fracctl.flows.backends.argocd_autosync import stop

        t = self._target(ctx)
        for _ in range(3):
            try:
                ctx.argocd.sync(app, resources=[resource], dry_run=True, revision=self.pinned)
                return
            except OperationInProgress:
                said = _idle(ctx.argocd.get_application(app), app, t)
                if said is None:
                    raise
                ctx.info(stop(ctx, app, said))
        raise Refused(
            f"Argo CD's automated sync of {app} kept starting again as fracctl stopped it: "
            "its dry run of this sync could not run",
            hint=f"disable automated sync for a moment (argocd app set {app} --sync-policy "
            "none), run again, then enable it",
        )

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Sync the one resource (at the rehearsed commit) and wait for the operation.

        A refresh first makes Argo CD compare with the cluster as it is now: a controller
        that still had the deleted object cached would skip it (``ApplyOutOfSyncOnly``)
        or ``replace`` an object that is gone (``Replace=true``).
        """
        from fracctl.core.clock import following
        from fracctl.flows.backends.argocd_sync import sync_resource_and_wait

        app = self._app(ctx)
        ctx.argocd.get_application(app, refresh="normal")
        op = sync_resource_and_wait(
            ctx.argocd,
            app,
            resource=self._resource(ctx),
            revision=self.pinned,
            timeout=ctx.config.timeouts.sync,
            clock=ctx.clock,
            notify=ctx.info,
            backoff=following(),
        )
        at = f" at {self.pinned[:12]}" if self.pinned else ""
        return f"Argo CD sync of {app}{at}: {op.get('phase')} ({op.get('message', '')})"


def _project(doc: Obj, app: str) -> str:
    spec = doc.get("spec") if isinstance(doc, dict) else None
    project = (spec or {}).get("project") if isinstance(spec, dict) else None
    if not isinstance(project, str) or not project:
        raise ExternalError(
            f"Argo CD application {app} has no spec.project in its answer",
            hint="is argocd.server an Argo CD API server?",
        )
    return project


def _idle(doc: Obj, app: str, t: SyncTarget) -> str | None:
    """Refuse while the application is being deleted or runs an operation.

    Returns:
        An account of the running operation when it is Argo CD's automated sync failing
        on the target's immutable selector (the one fracctl may stop), else None.
    """
    from fracctl.flows.backends.argocd_autosync import automated_failing_on_target, running

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


def _manages(doc: Obj, app: str, t: SyncTarget) -> str:
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
            f"Argo CD application {app} does not manage {_named(t)}, so a sync "
            "would not recreate it",
            hint="check argocd.app, and that the application's source path holds the "
            "object (`argocd app resources " + app + "`)",
        )
    return f"application {app} manages {_named(t)}"


def _windows_open(windows: Obj, app: str) -> str:
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


def _no_window_opens(windows: Obj, app: str, horizon: float, now: float) -> str:
    """Refuse when a deny window opens before the run can finish (delete, then sync).

    A deny window that does not let manual syncs through, assigned to the application,
    whose schedule fires within ``horizon`` seconds (``timeouts.delete +
    timeouts.sync``): the sync after the delete could be refused by it. Argo CD's answer
    (``ApplicationSyncWindow``: kind, schedule, duration, manualSync) names no time zone,
    so a schedule is read in UTC unless the window carries one.
    """
    from datetime import datetime, timedelta, timezone

    from fracctl.core.cron import next_fire

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


def _pinnable(doc: Obj) -> str | None:
    """The commit of Argo CD's last comparison, when a sync may be pinned to it."""
    spec = doc.get("spec") or {}
    automated = (spec.get("syncPolicy") or {}).get("automated")
    if isinstance(automated, dict) and automated.get("enabled") is not False:
        return None
    if spec.get("sources") or not (spec.get("source") or {}).get("repoURL"):
        return None  # multi-source and hydrated apps: not pinned
    commit = str(((doc.get("status") or {}).get("sync") or {}).get("revision") or "")
    return commit if re.fullmatch(r"[0-9a-f]{40}", commit) else None


def _revision_of(doc: Obj, rendered: str) -> str:
    """``targetRevision (commit)`` for messages: what the application tracks, resolved.

    The manifests answer of v3.2.11 carries no revision; the commit is then the one of
    Argo CD's last comparison (``status.sync.revision``).
    """
    source = (doc.get("spec") or {}).get("source") or {}
    target = str(source.get("targetRevision") or "HEAD")
    commit = rendered or str(((doc.get("status") or {}).get("sync") or {}).get("revision") or "")
    return f"{target} ({commit[:12]})" if commit else target


def _named(t: SyncTarget) -> str:
    """``Kind/name``, with the namespace where there is one."""
    return t.label


def _shown(value: Any) -> str:
    """A field's value in a message: a missing map is empty, a long value is cut."""
    return clip(str({} if value is None else value), 200)


def _rendered_target(
    ctx: Context, objects: list[Obj], app: str, at: str, desired: Obj, t: SyncTarget | None = None
) -> Obj:
    """The one target object in Argo CD's rendering; refuse unless its held fields are git's.

    ``t`` is the object (default: the fractioning config).
    """
    t = t or SyncTarget.of_config(ctx.config.target)
    found = [o for o in objects if t.matches(o)]
    if len(found) != 1:
        raise Refused(
            f"Argo CD renders application {app} at {at} with {len(found)} {_named(t)} "
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
                f"Argo CD would create {_named(t)} with {path} {_shown(theirs[path])} (its "
                f"rendering of {app} at {at}), but git has {_shown(ours[path])} at "
                f"{g.revision} under {g.path}: the recreate would bring back the wrong "
                f"{path.rsplit('.', 1)[-1]}",
                hint="push the change to the branch the application tracks (or set its "
                "targetRevision), wait for Argo CD to see it, then rerun",
            )
    return creates
