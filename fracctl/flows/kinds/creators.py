"""Who brings a recreated object back: fracctl's server-side apply, Argo CD or Flux.

With ``--backend apply`` fracctl applies git's object itself. With ``--backend argocd``
the application that manages the object brings it back, so that it stays Argo CD's:

* the rehearsal is the backend's own (:class:`~fracctl.flows.backends.argocd.ArgoCDBackend`
  given the object as its :class:`~fracctl.core.sync_target.SyncTarget`): the token and
  the application, the account's right to sync it, the sync windows, Argo CD's rendering
  holding git's immutable fields, the API server admitting that object, and Argo CD's
  own dry run of the one-resource sync;
* an object created as it is in git is Argo CD's sync of that one resource;
* a workload that must adopt its pods before anything rolls is created *held* from Argo
  CD's own rendering (its tracking annotation included, so Argo CD sees its own object),
  and once every pod is proven adopted the hold is applied away and Argo CD syncs the
  resource: from then on it is Argo CD's object as git renders it.

With ``--backend flux`` the Kustomization that applies the object does the same, its
rehearsal the flux backend's own. Flux retries a failed apply on its own, so for a held
create fracctl suspends the Kustomization right before the delete (journaled first) and
resumes it at the release, then asks it to reconcile and waits for Ready.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from fracctl.core.sync_target import SyncTarget
from fracctl.errors import TimedOut
from fracctl.flows.backends import clean_desired
from fracctl.flows.kinds import steps

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.kinds.journal import ObjectJournal
    from fracctl.flows.kinds.steps import Creator, Work

Obj = dict[str, Any]


class ApplyCreator:
    """fracctl's server-side apply of git's object."""

    name = "apply"

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """Nothing beyond the dry-run create every plan proves."""
        return []

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """Nothing."""
        return []

    def create(self, w: Work, *, held: bool = False) -> Obj:
        """Apply git's object (held where asked)."""
        return steps.create(w, steps.held(w) if held else None)

    def release(self, w: Work) -> None:
        """Apply git's object again."""
        steps.release(w)


class ArgoCDCreator:
    """The Argo CD application that manages the object syncs it back."""

    name = "argocd"

    def __init__(self, target: SyncTarget) -> None:
        from fracctl.flows.backends.argocd import ArgoCDBackend

        self.backend = ArgoCDBackend(target)
        self.target = target
        self.creates: Obj | None = None  # Argo CD's rendering of the object, once proven

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """Argo CD's own rehearsal of the one-resource sync (see the module)."""
        proof = self.backend.check(ctx, desired)
        self.creates = proof.creates
        return proof.evidence

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """Stop Argo CD's automated sync that fails on this object, then dry-run again."""
        return self.backend.before_delete(ctx)

    def create(self, w: Work, *, held: bool = False) -> Obj:
        """Held: from Argo CD's rendering, by fracctl; else Argo CD's sync of the resource."""
        done = w.recreated()
        if done is not None:
            return done
        if held:
            made = steps.create(w, steps.held(w, self._rendered()))
            w.say("created from Argo CD's rendering, held, so that Argo CD tracks it")
            return made
        w.say(self.backend.recreate(w.ctx, w.desired))
        return _wait_recreated(w)

    def release(self, w: Work) -> None:
        """Apply Argo CD's rendering (the hold goes), then Argo CD syncs the resource."""
        w.ctx.kube.apply(w.ref, clean_desired(self._rendered()))
        w.say(f"applied Argo CD's rendering of {w.journal.key}: the hold is gone")
        w.say(self.backend.recreate(w.ctx, w.desired))

    def _rendered(self) -> Obj:
        if self.creates is None:
            raise AssertionError("the Argo CD rendering is read by prove() before any step")
        return copy.deepcopy(self.creates)


class FluxCreator:
    """The Flux Kustomization that applies the object applies it again."""

    name = "flux"

    def __init__(self, target: SyncTarget, *, holds: bool, suspended: bool) -> None:
        from fracctl.flows.backends.flux import FluxBackend

        self.backend = FluxBackend(target, suspended_here=suspended)
        self.target = target
        self.holds = holds  # the procedure creates the object held: Flux waits meanwhile
        self.creates: Obj | None = None

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """The flux backend's own rehearsal of its reconcile (see the module)."""
        proof = self.backend.check(ctx, desired)
        self.creates = proof.creates
        said = proof.evidence
        if self.holds:
            said = [*said, "fracctl suspends the Kustomization from the delete until the hold is "
                    "released: Flux would otherwise create the object unheld"]  # fmt: skip
        return said

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """A held recreate: suspend the Kustomization (journaled first).

        Flux's retries would otherwise create the object before fracctl creates it held.
        """
        if not self.holds:
            return []
        from fracctl.flows.backends.flux import configured_kustomization
        from fracctl.flows.kinds import journal as journals

        flux = configured_kustomization(ctx)
        journal.suspended = f"{flux.namespace}/{flux.name}"
        journals.write(ctx, journal)
        flux.kube.patch(flux.ref, flux.name, {"spec": {"suspend": True}},
                        namespace=flux.namespace)  # fmt: skip
        return [f"suspended Flux Kustomization {journal.suspended} until the hold is released"]

    def create(self, w: Work, *, held: bool = False) -> Obj:
        """Held: from Flux's rendering, by fracctl; else Flux's reconcile."""
        done = w.recreated()
        if done is not None:
            return done
        if held:
            made = steps.create(w, steps.held(w, _copy(self.creates)))
            w.say("created from Flux's rendering, held")
            return made
        w.say(self.backend.recreate(w.ctx, w.desired))
        return _wait_recreated(w)

    def release(self, w: Work) -> None:
        """Apply Flux's rendering (the hold goes), resume the Kustomization, reconcile."""
        from fracctl.flows.backends.flux import configured_kustomization

        w.ctx.kube.apply(w.ref, clean_desired(_copy(self.creates)))
        w.say(f"applied Flux's rendering of {w.journal.key}: the hold is gone")
        if w.journal.suspended:
            flux = configured_kustomization(w.ctx)
            flux.kube.patch(flux.ref, flux.name, {"spec": {"suspend": False}},
                            namespace=flux.namespace)  # fmt: skip
            w.say(f"resumed Flux Kustomization {w.journal.suspended}")
        w.say(self.backend.recreate(w.ctx, w.desired))


def _copy(obj: Obj | None) -> Obj:
    if obj is None:
        raise AssertionError("the backend's rendering is read by prove() before any step")
    return copy.deepcopy(obj)


def _wait_recreated(w: Work) -> Obj:
    """The recreated object, once the backend's create is visible."""
    timeout = w.ctx.config.timeouts.sync
    found: list[Obj] = []

    def there(view: dict[str, Obj]) -> bool:
        found[:] = [o for o in view.values() if o["metadata"].get("uid") != w.journal.uid]
        return bool(found)

    if not steps.watch_object(w, there, timeout):
        raise TimedOut(
            f"the backend reported its sync done, but {w.journal.key} was not created "
            f"within {timeout:.0f}s",
            hint="see the application's sync result; rerun to resume",
        )
    return found[0]


def creator_for(
    backend: str, target: SyncTarget, *, holds: bool = False, suspended: bool = False
) -> Creator:
    """The creator of ``backend`` (``apply``, ``argocd`` or ``flux``) for ``target``.

    ``holds``: the procedure creates the object held; ``suspended``: a journal says an
    earlier run suspended the Flux Kustomization.
    """
    if backend == "argocd":
        return ArgoCDCreator(target)
    if backend == "flux":
        return FluxCreator(target, holds=holds, suspended=suspended)
    return ApplyCreator()
