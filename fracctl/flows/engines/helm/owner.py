"""Whom the helm engine recognises as an object's owner: the Helm release its marks name.

Helm writes ``meta.helm.sh/release-name`` and ``/release-namespace`` on every object of a
release (``pkg/action/validate.go`` ``setMetadataVisitor``); helm-controller writes them
too, through the Helm SDK, and the Flux engine's owner covers them then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.core.gitops import helm_release
from fracctl.core.recreate.rehearsal import Owner
from fracctl.core.text import clip
from fracctl.errors import Forbidden
from fracctl.flows.engines.helm.journal import ReleaseId

if TYPE_CHECKING:
    from fracctl.flows.context import Context

Obj = dict[str, Any]
RELEASE = "Helm release"


class HelmOwnership:
    """The Helm release an object belongs to, and what its record says."""

    def owner_of(self, obj: Obj | None) -> Owner | None:
        """The release whose marks ``obj`` carries; only its upgrade carries the object."""
        found = helm_release.owner_of(obj)
        if found is None:
            return None
        namespace, name = found
        return Owner("helm", name, namespace, kind=RELEASE, carries=True)

    def configured(self, ctx: Context) -> Owner:
        """The configured release (``git.helm_release`` in ``git.helm_namespace``)."""
        rid = ReleaseId.configured(ctx)
        return Owner("helm", rid.name, rid.namespace, kind=RELEASE, carries=True)

    def state(self, ctx: Context, owner: Owner) -> str:
        """What Helm's own record says of the release: stuck, or at which revision."""
        return release_state(ctx, owner.namespace, owner.name)


def release_state(ctx: Context, namespace: str, name: str) -> str:
    """What Helm's own record says of release ``namespace/name``: stuck, or at which revision."""
    from fracctl.core.kube.resources import SECRETS

    try:
        query = f"{helm_release.OWNER_SELECTOR},name={name}"
        secrets = ctx.kube.list(SECRETS, namespace=namespace, label_selector=query)
    except Forbidden as e:
        return (
            f"an object of Helm release {namespace}/{name} (its record is not readable: "
            f"{e.status.message})"
        )
    release = helm_release.latest(secrets).get((namespace, name))
    if release is None:
        return f"its marks name Helm release {namespace}/{name}, which has no record"
    said = (
        f"an object of Helm release {namespace}/{name}, at revision {release.version} "
        f"({release.status}, chart {release.chart})"
    )
    if release.status == helm_release.FAILED:
        said += f", stuck: {clip(release.description, 400)}"
    return said
