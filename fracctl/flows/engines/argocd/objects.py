"""``recreate KIND/NAME --backend argocd``: the application that manages the object syncs it.

A workload created held comes from Argo CD's own rendering; an automated sync is turned
off from the delete until the object is git's (journaled first), then on again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.errors import Refused
from fracctl.flows.engines.gitops import GitOpsCreator

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.engines.journal import ObjectJournal
    from fracctl.flows.engines.steps import Creator, Work

Obj = dict[str, Any]


class ArgoCDCreator(GitOpsCreator):
    """The Argo CD application that manages the object syncs it back."""

    name = "argocd"
    engine = "Argo CD"

    def __init__(self, target: SyncTarget) -> None:
        from fracctl.flows.engines.argocd.backend import ArgoCDBackend

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
        from fracctl.flows.engines import journal as journals

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
        from fracctl.flows.engines import journal as journals

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


def argocd_creator(ctx: Context, target: SyncTarget, **_: Any) -> Creator:
    """The Argo CD application that manages the object."""
    return ArgoCDCreator(target)
