"""``recreate KIND/NAME --backend flux``: the Kustomization (or the HelmRelease) applies it.

For a held create the Kustomization is suspended from the delete (journaled first) until
the hold is released, then resumed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.flows.engines.gitops import GitOpsCreator

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.engines.journal import ObjectJournal
    from fracctl.flows.engines.steps import Creator, Work

Obj = dict[str, Any]


class FluxCreator(GitOpsCreator):
    """The Flux Kustomization that applies the object applies it again."""

    name = "flux"
    engine = "Flux"

    def __init__(self, target: SyncTarget, *, holds: bool, suspended: bool) -> None:
        from fracctl.flows.engines.flux.backend import FluxBackend

        super().__init__(target)
        self.backend = FluxBackend(target, suspended_here=suspended)
        self.holds = holds  # the procedure creates the object held: Flux waits meanwhile

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """The flux backend's own rehearsal of its reconcile, and the suspension to come."""
        said = super().prove(ctx, desired)
        if self.holds:
            said.append("fracctl suspends the Kustomization from the delete until the hold is "
                        "released: Flux would otherwise create the object unheld")  # fmt: skip
        return said

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """A held recreate: suspend the Kustomization (journaled first).

        Flux's retries would otherwise create the object before fracctl creates it held.
        """
        if not self.holds:
            return []
        from fracctl.flows.engines import journal as journals

        journal.suspended = _suspend(ctx, None)
        journals.write(ctx, journal)  # journaled first: a rerun knows whom to resume
        _suspend(ctx, True)
        return [f"suspended Flux Kustomization {journal.suspended} until the hold is released"]

    def _released(self, w: Work) -> None:
        """Resume the Kustomization this run (or an earlier one) suspended."""
        if w.journal.suspended:
            _suspend(w.ctx, False)
            w.say(f"resumed Flux Kustomization {w.journal.suspended}")


def _suspend(ctx: Context, suspend: bool | None) -> str:
    """The configured Kustomization's ``namespace/name``; sets ``spec.suspend`` unless None."""
    from fracctl.flows.engines.flux.backend import configured_kustomization

    flux = configured_kustomization(ctx)
    if suspend is not None:
        flux.kube.patch(flux.ref, flux.name, {"spec": {"suspend": suspend}},
                        namespace=flux.namespace)  # fmt: skip
    return f"{flux.namespace}/{flux.name}"


def flux_creator(
    ctx: Context, target: SyncTarget, *, holds: bool, suspended: bool, live: Obj | None, **_: Any
) -> Creator:
    """The HelmRelease that installed the object (its owner labels), else its Kustomization.

    ``holds``: the procedure creates the object held; ``suspended``: a journal says an
    earlier run suspended the Kustomization.
    """
    from fracctl.flows.engines.flux.helmrelease_objects import (
        HelmReleaseCreator,
        owned_by_helmrelease,
    )

    if owned_by_helmrelease(ctx, live):
        return HelmReleaseCreator(target, live)
    return FluxCreator(target, holds=holds, suspended=suspended)
