"""The ways ``recreate`` can bring the object back, each proven read-only before a delete.

A backend has a name, a :meth:`~Backend.check` that proves with read-only calls that it
can recreate the object (the same credentials, permissions and objects the recreate
will use), :meth:`~Backend.recreate`, and the claim its success makes about the live
object (which :func:`fracctl.flows.recreate.verify` never trusts). Adding a GitOps engine
is one class here and one entry in :data:`BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Protocol

from fracctl.errors import Conflict, ExternalError, FracctlError, Refused, UsageError
from fracctl.flows.context import Context

Obj = dict[str, Any]


class Backend(Protocol):
    """What ``recreate`` needs from a way of creating the object."""

    name: str
    claim: str  # what the backend's success says, for "… but the live object differs"

    def validate(self, ctx: Context) -> None:
        """Check the configuration alone (no I/O); a usage error when it cannot work."""
        ...

    def check(self, ctx: Context, desired: Obj) -> list[str]:
        """Prove, read-only, that :meth:`recreate` can work; returns the evidence.

        Raises:
            FracctlError: it cannot (wrong token, missing permission, missing object).
        """
        ...

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Have the object created; returns a one-line account of what was said."""
        ...


class BackendCheckFailed(FracctlError):
    """A backend's read-only proof failed; nothing was changed. Keeps the cause's exit code."""

    def __init__(self, backend: str, cause: FracctlError) -> None:
        super().__init__(
            f"the {backend} backend cannot recreate the object, so nothing was deleted or "
            f"changed: {cause.message}",
            hint=cause.hint,
        )
        self.exit_code = cause.exit_code
        self.cause = cause


def clean_desired(desired: Obj) -> Obj:
    """The desired object without server-set fields, ready to create or apply."""
    body = {k: v for k, v in desired.items() if k != "status"}
    meta = dict(body.get("metadata") or {})
    for key in (
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "managedFields",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ):
        meta.pop(key, None)
    body["metadata"] = meta
    return body


def _require(ctx: Context, verb: str, *, ref: Any, name: str, namespace: str | None = None) -> str:
    """Raise unless the Kubernetes identity may ``verb`` the object; returns the evidence."""
    allowed, reason = ctx.kube.can_i(verb, ref, name, namespace)
    where = f"{namespace}/{name}" if namespace else name
    if not allowed:
        raise ExternalError(
            f"the Kubernetes identity may not {verb} {ref.plural}.{ref.group or 'core'} "
            f"{where}" + (f" ({reason})" if reason else ""),
            hint=f"grant the RBAC verb {verb!r} on {ref.plural} to the identity of the "
            "kubeconfig, or run as one that has it",
        )
    return f"may {verb} {ref.plural} {where}"


def check_delete(ctx: Context) -> list[str]:
    """Prove the Kubernetes identity may read, watch and delete the target."""
    t = ctx.config.target
    return [_require(ctx, verb, ref=t.ref, name=t.name) for verb in ("get", "watch", "delete")]


class ApplyBackend:
    """Create the object with a server-side apply (field manager ``fracctl``)."""

    name = "apply"
    claim = "the apply was accepted but the live object differs"

    def validate(self, ctx: Context) -> None:
        """Nothing to configure."""

    def check(self, ctx: Context, desired: Obj) -> list[str]:
        """RBAC for apply (``patch`` and ``create``) and a dry-run create of git's object."""
        t = ctx.config.target
        evidence = [_require(ctx, verb, ref=t.ref, name=t.name) for verb in ("patch", "create")]
        try:  # authorisation, admission and validation all run before the existence check
            ctx.kube.create(t.ref, clean_desired(desired), dry_run=True)
        except Conflict as e:
            if e.status.reason != "AlreadyExists":
                raise
        evidence.append("a dry-run create of the object passes RBAC, admission and validation")
        return evidence

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Server-side apply git's object."""
        ctx.kube.apply(ctx.config.target.ref, clean_desired(desired))
        return "server-side apply (field manager fracctl) accepted the object"


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
        from fracctl.adapters.argocd import ArgoCD

        self._app(ctx)
        ArgoCD.from_config(ctx.config.argocd, ctx.env).close()

    def check(self, ctx: Context, desired: Obj) -> list[str]:
        """The token and the application (GET), that it manages the target, and can-i sync."""
        from fracctl.adapters.argocd import ArgoCD

        app = self._app(ctx)
        t = ctx.config.target
        with ArgoCD.from_config(ctx.config.argocd, ctx.env) as client:
            doc = client.get_application(app)
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
        from fracctl.adapters.argocd import ArgoCD

        app = self._app(ctx)
        with ArgoCD.from_config(ctx.config.argocd, ctx.env) as client:
            op = client.sync_resource_and_wait(
                app,
                resource=self._resource(ctx),
                timeout=ctx.config.timeouts.sync,
                clock=ctx.clock,
                notify=ctx.info,
            )
        return f"Argo CD sync of {app}: {op.get('phase')} ({op.get('message', '')})"


class FluxBackend:
    """Ask a Flux Kustomization to reconcile now, and wait for it."""

    name = "flux"
    claim = "Flux reported Ready but the live object differs"

    def _flux(self, ctx: Context) -> Any:
        from fracctl.adapters.flux import Flux

        return Flux(ctx.kube, ctx.config.flux.namespace, ctx.config.flux.kustomization)

    def validate(self, ctx: Context) -> None:
        """The Kustomization is named."""
        if not ctx.config.flux.kustomization or not ctx.config.flux.namespace:
            raise UsageError(
                "the flux backend needs the Kustomization",
                hint="set flux.namespace and flux.kustomization in fracctl.yaml",
            )

    def check(self, ctx: Context, desired: Obj) -> list[str]:
        """Flux's CRD is served, the Kustomization exists, is not suspended, may be patched."""
        flux = self._flux(ctx)
        obj = flux.get()  # NotFound names the missing CRD or Kustomization
        where = f"{flux.namespace}/{flux.name}"
        if (obj.get("spec") or {}).get("suspend"):
            raise Refused(
                f"Flux Kustomization {where} is suspended: it would not reconcile",
                hint=f"resume it first: flux resume kustomization {flux.name} -n {flux.namespace}",
            )
        return [
            f"Flux Kustomization {where} exists and is not suspended",
            _require(ctx, "patch", ref=flux.ref, name=flux.name, namespace=flux.namespace),
        ]

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Request a reconcile and wait until it was handled and Ready settled."""
        flux = self._flux(ctx)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        requested = flux.request_reconcile(now)
        status = flux.wait_ready(requested, timeout=ctx.config.timeouts.sync, clock=ctx.clock)
        return f"Flux applied revision {status.get('lastAppliedRevision', '?')}"


BACKENDS: dict[str, Callable[[], Backend]] = {
    "argocd": ArgoCDBackend,
    "flux": FluxBackend,
    "apply": ApplyBackend,
}


def get(name: str) -> Backend:
    """The backend called ``name``; a usage error naming the choices otherwise."""
    factory = BACKENDS.get(name)
    if factory is None:
        raise UsageError(f"unknown backend {name!r} (use {', '.join(BACKENDS)})")
    return factory()


def prove(ctx: Context, backend: Backend, desired: Obj, *, deletes: bool) -> list[str]:
    """Every read-only proof a recreate needs before it changes anything.

    Args:
        ctx: the context.
        backend: the chosen backend.
        desired: git's object.
        deletes: whether the plan deletes the live object (then its RBAC is proven too).

    Raises:
        BackendCheckFailed: a proof failed; the message says nothing was changed.
    """
    try:
        evidence = check_delete(ctx) if deletes else []
        return evidence + backend.check(ctx, desired)
    except UsageError:
        raise
    except FracctlError as e:
        raise BackendCheckFailed(backend.name, e) from e
