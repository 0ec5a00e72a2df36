"""The ``flux`` backend: a Flux Kustomization reconciles now, and fracctl waits for it."""

from __future__ import annotations

from typing import Any

from fracctl.core.clock import utc_timestamp
from fracctl.errors import Refused, UsageError
from fracctl.flows.backends import Obj, require
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
            require(ctx, "patch", ref=flux.ref, name=flux.name, namespace=flux.namespace),
        ]

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Request a reconcile and wait until it was handled and Ready settled."""
        flux = self._flux(ctx)
        now = utc_timestamp()
        requested = flux.request_reconcile(now)
        status = flux.wait_ready(requested, timeout=ctx.config.timeouts.sync, clock=ctx.clock)
        return f"Flux applied revision {status.get('lastAppliedRevision', '?')}"
