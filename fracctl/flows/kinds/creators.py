"""Who brings a recreated object back: fracctl's server-side apply, Argo CD, Flux or helm.

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

With ``--backend helm`` the object is created from Helm's rendering of the release, and
the release's own ``helm upgrade`` follows (:mod:`fracctl.flows.kinds.helm`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from fracctl.core.sync_target import SyncTarget
from fracctl.errors import Refused, TimedOut
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

    def finish(self, w: Work) -> None:
        """Nothing."""


class _GitOpsCreator:
    """What the Argo CD and Flux creators share.

    The backend's rendering, proven first, is what a held object is created from and
    released to; the backend does the rest.
    """

    name = ""
    engine = ""  # the GitOps engine, in messages
    backend: Any

    def __init__(self, target: SyncTarget) -> None:
        self.target = target
        self.creates: Obj | None = None  # the backend's rendering of the object, once proven

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """The backend's own rehearsal (see the module)."""
        proof = self.backend.check(ctx, desired)
        self.creates = proof.creates
        return list(proof.evidence)

    def create(self, w: Work, *, held: bool = False) -> Obj:
        """Held: from the backend's rendering, by fracctl; else the backend's own create."""
        done = w.recreated()
        if done is not None:
            return done
        if held:
            made = steps.create(w, steps.held(w, _copy(self.creates)))
            w.say(f"created from {self.engine}'s rendering, held, so that {self.engine} tracks it")
            return made
        w.say(self.backend.recreate(w.ctx, w.desired))
        return _wait_recreated(w)

    def release(self, w: Work) -> None:
        """Apply the backend's rendering (the hold goes), then the backend applies it."""
        w.ctx.kube.apply(w.ref, clean_desired(_copy(self.creates)))
        w.say(f"applied {self.engine}'s rendering of {w.journal.key}: the hold is gone")
        self._released(w)
        w.say(self.backend.recreate(w.ctx, w.desired))

    def _released(self, w: Work) -> None:
        """What follows the release before the backend applies (nothing by default)."""

    def finish(self, w: Work) -> None:
        """Nothing: the backend's own sync brought the object back."""


class ArgoCDCreator(_GitOpsCreator):
    """The Argo CD application that manages the object syncs it back."""

    name = "argocd"
    engine = "Argo CD"

    def __init__(self, target: SyncTarget) -> None:
        from fracctl.flows.backends.argocd import ArgoCDBackend

        super().__init__(target)
        self.backend = ArgoCDBackend(target)
        self.automation = ""  # the automated sync held from the delete on, when on

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """The argocd backend's own rehearsal; and the automated sync to hold, if on."""
        said = super().prove(ctx, desired)
        app = ctx.config.argocd.app or ""
        doc = ctx.argocd.get_application(app)
        self.automation = _automation(doc)
        if self.automation:
            sub = f"{(doc.get('spec') or {}).get('project') or 'default'}/{app}"
            if not ctx.argocd.can_i("applications", "update", sub):
                raise Refused(
                    f"Argo CD's automated sync of {app} ({self.automation}) would create "
                    f"{self.target.label} itself, unheld, and the account may not turn it "
                    f"off (can-i applications update {sub}: no); nothing changed",
                    hint=f"grant 'p, <role>, applications, update, {sub}, allow', or turn "
                    "the automated sync off in git first",
                )
            said.append(
                f"Argo CD's automated sync of {app} is on ({self.automation}): fracctl turns "
                "it off (spec.syncPolicy.automated.enabled: false) from the delete until the "
                f"object is git's, then on again; the account may update {sub}"
            )
        return said

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """Hold the automated sync (journaled first); stop its failing sync; dry-run again."""
        from fracctl.flows.kinds import journal as journals

        said = []
        if self.automation:
            app = ctx.config.argocd.app or ""
            doc = ctx.argocd.get_application(app)
            explicit = ((doc.get("spec") or {}).get("syncPolicy") or {}).get("automated") or {}
            journal.suspended = f"Application {app}" + (
                journals.ENABLED if explicit.get("enabled") is True else ""
            )
            journals.write(ctx, journal)
            ctx.argocd.patch_application(app, _enabled(False))
            said.append(f"turned Argo CD's automated sync of {app} off until the object is git's")
        return said + list(self.backend.before_delete(ctx))

    def finish(self, w: Work) -> None:
        """Turn the automated sync this run (or an earlier one) held on again."""
        from fracctl.flows.kinds import journal as journals

        held = w.journal.suspended
        if not held.startswith("Application "):
            return
        app = held.removeprefix("Application ").removesuffix(journals.ENABLED)
        w.ctx.argocd.patch_application(app, _enabled(True if held.endswith(journals.ENABLED)
                                                     else None))  # fmt: skip
        w.journal.suspended = ""
        journals.write(w.ctx, w.journal)
        w.say(f"turned Argo CD's automated sync of {app} on again")


def _automation(doc: Obj) -> str:
    """The application's automated sync, when it is on ("" when off)."""
    automated = ((doc.get("spec") or {}).get("syncPolicy") or {}).get("automated")
    if automated is None or automated.get("enabled") is False:
        return ""
    on = [k for k in ("selfHeal", "prune") if automated.get(k)]
    return "automated" + (f", {', '.join(on)}" if on else "")


def _enabled(value: bool | None) -> Obj:
    """A merge patch of ``spec.syncPolicy.automated.enabled`` (None removes it)."""
    return {"spec": {"syncPolicy": {"automated": {"enabled": value}}}}


class FluxCreator(_GitOpsCreator):
    """The Flux Kustomization that applies the object applies it again."""

    name = "flux"
    engine = "Flux"

    def __init__(self, target: SyncTarget, *, holds: bool, suspended: bool) -> None:
        from fracctl.flows.backends.flux import FluxBackend

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
        from fracctl.flows.kinds import journal as journals

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
    from fracctl.flows.backends.flux import configured_kustomization

    flux = configured_kustomization(ctx)
    if suspend is not None:
        flux.kube.patch(flux.ref, flux.name, {"spec": {"suspend": suspend}},
                        namespace=flux.namespace)  # fmt: skip
    return f"{flux.namespace}/{flux.name}"


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


# --- the registry's makers (fracctl.core.backends: each entry's ``objects``) ---------------


def apply_creator(ctx: Context, target: SyncTarget, **_: Any) -> Creator:
    """Fracctl's server-side apply."""
    return ApplyCreator()


def argocd_creator(ctx: Context, target: SyncTarget, **_: Any) -> Creator:
    """The Argo CD application that manages the object."""
    return ArgoCDCreator(target)


def flux_creator(
    ctx: Context, target: SyncTarget, *, holds: bool, suspended: bool, live: Obj | None, **_: Any
) -> Creator:
    """The HelmRelease that installed the object (its owner labels), else its Kustomization.

    ``holds``: the procedure creates the object held; ``suspended``: a journal says an
    earlier run suspended the Kustomization.
    """
    from fracctl.flows.kinds.helmrelease import HelmReleaseCreator, owned_by_helmrelease

    if owned_by_helmrelease(ctx, live):
        return HelmReleaseCreator(target, live)
    return FluxCreator(target, holds=holds, suspended=suspended)
