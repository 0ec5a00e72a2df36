"""Whom the Flux engine recognises as an object's owner: its HelmRelease or Kustomization.

helm-controller's post-renderer labels every object of a HelmRelease
(``helm.toolkit.fluxcd.io/name`` and ``/namespace``), which also carries the Helm release's
marks it wrote through the Helm SDK: the HelmRelease owns it, not the release alone.
kustomize-controller labels what a Kustomization applies
(``kustomize.toolkit.fluxcd.io/name`` and ``/namespace``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.core.gitops import helm_release
from fracctl.core.recreate.rehearsal import KUSTOMIZATION, Owner, owners
from fracctl.core.text import clip
from fracctl.errors import FracctlError

if TYPE_CHECKING:
    from fracctl.flows.context import Context

Obj = dict[str, Any]
HELMRELEASE = "Flux HelmRelease"


class FluxOwnership:
    """The HelmRelease or Kustomization an object belongs to, and what it says of itself."""

    def owner_of(self, obj: Obj | None) -> Owner | None:
        """The HelmRelease whose labels ``obj`` carries, else its Kustomization."""
        found = helm_release.flux_owner_of(obj)
        if found is not None:
            namespace, name = found
            return Owner("flux", name, namespace, kind=HELMRELEASE, carries=True, covers=("helm",))
        return next((o for o in owners(obj or {}) if o.tool == "flux"), None)

    def configured(self, ctx: Context) -> Owner:
        """The configured Kustomization (``flux.kustomization`` in ``flux.namespace``)."""
        f = ctx.config.flux
        return Owner("flux", f.kustomization, f.namespace, kind=KUSTOMIZATION)

    def state(self, ctx: Context, owner: Owner) -> str:
        """What a HelmRelease says of itself: Ready, or why not ("" for a Kustomization)."""
        if owner.kind != HELMRELEASE:
            return ""
        return helmrelease_state(ctx, owner.namespace, owner.name)


def helmrelease_state(ctx: Context, namespace: str, name: str) -> str:
    """What the Flux HelmRelease ``namespace/name`` says of itself: Ready, or why not."""
    from fracctl.core.kube.nodes import condition
    from fracctl.core.kube.resources import HELMRELEASES

    try:
        hr = ctx.kube.get_or_none(HELMRELEASES, name, namespace)
    except FracctlError as e:  # no Flux, or not readable
        return f"an object of Flux HelmRelease {namespace}/{name} (not readable: {e})"
    if hr is None:
        return f"its labels name Flux HelmRelease {namespace}/{name}, which does not exist"
    ready = condition(hr, "Ready") or {}
    said = f"an object of Flux HelmRelease {namespace}/{name}, Ready={ready.get('status')}"
    if ready.get("status") == "False":
        said += f", stuck: {ready.get('reason')}: {clip(str(ready.get('message') or ''), 400)}"
    return said
