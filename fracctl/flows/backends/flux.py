"""The ``flux`` backend: a Flux Kustomization reconciles now, and fracctl waits for it."""

from __future__ import annotations

from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.errors import NotFound, Refused, UsageError
from fracctl.flows.backends import Obj, Proof, clean_desired, require
from fracctl.flows.context import Context


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

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """Rehearse Flux's reconcile: it would run now, from a ready source, unblocked.

        The Kustomization exists and is not suspended; every Kustomization it depends on
        is Ready (Flux does not apply while one is not); its source is Ready with an
        artifact (the revision Flux would apply); and the identity may patch it.
        """
        flux = self._flux(ctx)
        obj = flux.get()  # NotFound names the missing CRD or Kustomization
        where = f"{flux.namespace}/{flux.name}"
        spec = obj.get("spec") or {}
        if spec.get("suspend"):
            raise Refused(
                f"Flux Kustomization {where} is suspended: it would not reconcile",
                hint=f"resume it first: flux resume kustomization {flux.name} -n {flux.namespace}",
            )
        evidence = [f"Flux Kustomization {where} exists and is not suspended"]
        for dep in spec.get("dependsOn") or []:
            evidence.append(_ready_dependency(flux, dep))
        evidence.append(_ready_source(flux, spec.get("sourceRef") or {}))
        evidence.append(
            require(ctx, "patch", ref=flux.ref, name=flux.name, namespace=flux.namespace)
        )
        return Proof(evidence, clean_desired(desired))

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Request a reconcile and wait until it was handled and Ready settled."""
        flux = self._flux(ctx)
        now = utc_timestamp()
        requested = flux.request_reconcile(now)
        status = flux.wait_ready(requested, timeout=ctx.config.timeouts.sync, clock=ctx.clock)
        return f"Flux applied revision {status.get('lastAppliedRevision', '?')}"


SOURCE_API = "source.toolkit.fluxcd.io/v1"


def _ready(obj: Obj) -> Obj:
    conds = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c.get("type") == "Ready"), {})


def _ready_dependency(flux: Any, dep: Obj) -> str:
    """A Kustomization this one depends on is Ready: else Flux holds the apply back."""
    name = str(dep.get("name") or "")
    namespace = str(dep.get("namespace") or flux.namespace)
    other = flux.kube.get_or_none(flux.ref, name, namespace)
    cond = _ready(other or {})
    if cond.get("status") != "True":
        state = (
            "does not exist"
            if other is None
            else (
                f"is Ready={cond.get('status') or 'Unknown'} ({cond.get('reason') or 'no reason'})"
            )
        )
        raise Refused(
            f"Flux Kustomization {flux.namespace}/{flux.name} depends on {namespace}/{name}, "
            f"which {state}: Flux would not apply until it is Ready",
            hint=f"see `flux get kustomizations -n {namespace}`; rerun once it is Ready",
        )
    return f"its dependency {namespace}/{name} is Ready"


def _ready_source(flux: Any, source: Obj) -> str:
    """The Kustomization's source is Ready and has an artifact for Flux to apply."""
    kind = str(source.get("kind") or "GitRepository")
    name = str(source.get("name") or "")
    namespace = str(source.get("namespace") or flux.namespace)
    try:
        ref = flux.kube.resolve(str(source.get("apiVersion") or SOURCE_API), kind)
        obj = flux.kube.get_or_none(ref, name, namespace)
    except NotFound:
        obj = None
    cond = _ready(obj or {})
    revision = ((obj or {}).get("status") or {}).get("artifact", {}).get("revision")
    if obj is None or cond.get("status") != "True" or not revision:
        state = (
            "does not exist"
            if obj is None
            else (
                f"is Ready={cond.get('status') or 'Unknown'}: "
                f"{cond.get('message') or 'no artifact'}"
            )
        )
        raise Refused(
            f"the source {kind} {namespace}/{name} of Flux Kustomization "
            f"{flux.namespace}/{flux.name} {state}: Flux would have nothing to apply",
            hint=f"see `flux get sources {kind.lower()} -n {namespace}`; rerun once it is Ready",
        )
    return f"its source {kind} {namespace}/{name} is Ready at {revision}"
