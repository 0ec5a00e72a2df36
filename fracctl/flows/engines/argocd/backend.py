"""The ``argocd`` backend: Argo CD syncs exactly the target resource of the application.

The target is the fractioning config unless the backend is given another
:class:`~fracctl.core.recreate.sync_target.SyncTarget` (``recreate KIND/NAME``).
"""

from __future__ import annotations

from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.errors import ExternalError, Refused, TimedOut, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import BackendBase, Obj, Proof, dry_run_create
from fracctl.flows.engines.argocd import application
from fracctl.flows.engines.argocd.autosync import settle


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
        project = application.project_of(doc, app)
        namespace = (doc.get("metadata") or {}).get("namespace") or ""
        where = f" in namespace {namespace}" if namespace else ""
        evidence = [f"Argo CD token valid; application {app}{where} readable (project {project})"]
        self.stoppable = application.idle(doc, app, t)
        if self.stoppable:
            evidence.append(
                f"runs {self.stoppable}: fracctl terminates that operation, and only it, right "
                "before the delete, then dry-runs this sync"
            )
        evidence.append(application.manages(doc, app, t))
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
        evidence.append(application.windows_open(windows, app))
        horizon = ctx.config.timeouts.delete + ctx.config.timeouts.sync
        evidence.append(application.no_window_opens(windows, app, horizon, ctx.clock.now()))
        self.pinned = application.pinnable(doc)
        objects, revision = client.rendering(app, self.pinned)  # the repo server answers now
        at = application.revision_of(doc, revision or self.pinned or "")
        creates = application.rendered_target(ctx, objects, app, at, desired, t)
        held = " and ".join(
            f"{path} {application.shown(v)}" for path, v in t.values(creates).items()
        )
        evidence.append(f"Argo CD renders {t.label} at {at} with {held}, as git has")
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
        from fracctl.flows.engines.argocd.autosync import stop

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
        from fracctl.flows.engines.argocd.sync import resource_result, wait_operation

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
                f"Argo CD's dry run of the sync of {t.label} in {app} ended "
                f"{state.get('phase')} ({seen}): {str(detail)[:300]}; the sync after the "
                "delete would fail the same way",
                hint=f"see `argocd app get {app}`; fix what Argo CD names, then rerun",
            )
        return (
            f"Argo CD's dry run of this sync succeeded ({t.label}: "
            f"{result.get('message') or 'Synced'})"
        )

    def _start_dry_run(self, ctx: Context, app: str, resource: dict[str, str]) -> None:
        """Start the dry-run sync.

        An automated sync failing on the target that started in between is terminated (up
        to three times); any other operation refuses.
        """
        from fracctl.adapters.argocd.errors import OperationInProgress
        from fracctl.flows.engines.argocd.autosync import stop

        t = self._target(ctx)
        for _ in range(3):
            try:
                ctx.argocd.sync(app, resources=[resource], dry_run=True, revision=self.pinned)
                return
            except OperationInProgress:
                said = application.idle(ctx.argocd.get_application(app), app, t)
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
        from fracctl.flows.engines.argocd.sync import sync_resource_and_wait

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
