"""The ``argocd`` backend: Argo CD syncs exactly the target resource of the application."""

from __future__ import annotations

from fracctl.errors import ExternalError, UsageError
from fracctl.flows.backends import Obj
from fracctl.flows.context import Context


class ArgoCDBackend:
    """Have Argo CD sync exactly the target resource of the application."""

    name = "argocd"
    claim = "Argo CD reported Succeeded but the live object differs"

    def _resource(self, ctx: Context) -> dict[str, str]:
        t = ctx.config.target
        return {"group": t.group, "kind": t.kind, "name": t.name, "namespace": ""}

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

    def check(self, ctx: Context, desired: Obj) -> list[str]:
        """The token and the application (GET), that it manages the target, and can-i sync."""
        app = self._app(ctx)
        t = ctx.config.target
        client = ctx.argocd
        doc = client.get_application(app)  # proves the token and the application
        spec = doc.get("spec") if isinstance(doc, dict) else None
        project = (spec or {}).get("project") if isinstance(spec, dict) else None
        if not isinstance(project, str) or not project:
            raise ExternalError(
                f"Argo CD application {app} has no spec.project in its answer",
                hint="is argocd.server an Argo CD API server?",
            )
        status = doc.get("status") or {}
        managed = status.get("resources") if isinstance(status, dict) else None
        if not any(
            isinstance(r, dict)
            and r.get("group", "") == t.group
            and r.get("kind") == t.kind
            and r.get("name") == t.name
            and not r.get("namespace")
            for r in managed or []
        ):
            raise ExternalError(
                f"Argo CD application {app} does not manage {t.kind}/{t.name}, so a sync "
                "would not recreate it",
                hint="check argocd.app, and that the application's source path holds the "
                "object (`argocd app resources " + app + "`)",
            )
        namespace = (doc.get("metadata") or {}).get("namespace") or ""
        sub = f"{project}/{app}"  # project/name, or project/namespace/name
        if not client.can_i("applications", "sync", sub):
            raise ExternalError(
                f"the Argo CD account may read application {app} but not sync it "
                f"(can-i applications sync {sub}: no)",
                hint=f"grant 'p, <role>, applications, sync, {project}/*, allow' in "
                "argocd-rbac-cm to the token's account, or use another token",
            )
        where = f" in namespace {namespace}" if namespace else ""
        return [
            f"Argo CD token valid; application {app}{where} readable (project {project})",
            f"application {app} manages {t.kind}/{t.name}",
            f"the account may sync {sub}",
        ]

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Sync the one resource and wait for the operation."""
        app = self._app(ctx)
        op = ctx.argocd.sync_resource_and_wait(
            app,
            resource=self._resource(ctx),
            timeout=ctx.config.timeouts.sync,
            clock=ctx.clock,
            notify=ctx.info,
        )
        return f"Argo CD sync of {app}: {op.get('phase')} ({op.get('message', '')})"
