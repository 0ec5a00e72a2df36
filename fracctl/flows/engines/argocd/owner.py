"""Whom the Argo CD engine recognises as an object's owner: the Application tracking it.

Argo CD's annotation tracking (``argocd.argoproj.io/tracking-id``) names the application.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.core.recreate.rehearsal import APPLICATION, Owner, owners

if TYPE_CHECKING:
    from fracctl.flows.context import Context

Obj = dict[str, Any]


class ArgoCDOwnership:
    """The Application an object belongs to."""

    def owner_of(self, obj: Obj | None) -> Owner | None:
        """The Application whose tracking annotation ``obj`` carries."""
        return next((o for o in owners(obj or {}) if o.tool == "argocd"), None)

    def configured(self, ctx: Context) -> Owner | None:
        """The configured application (``argocd.app``), if any."""
        app = ctx.config.argocd.app
        return Owner("argocd", app.rpartition("/")[2], kind=APPLICATION) if app else None

    def state(self, ctx: Context, owner: Owner) -> str:
        """Nothing: drift shows Argo CD's own view of its objects elsewhere."""
        return ""
