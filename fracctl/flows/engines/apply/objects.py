"""``recreate KIND/NAME --backend apply``: fracctl's server-side apply of git's object."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.flows.engines import steps

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.engines.journal import ObjectJournal
    from fracctl.flows.engines.steps import Creator, Work

Obj = dict[str, Any]


class ApplyCreator:
    """fracctl's server-side apply of git's object."""

    name = "apply"
    verifies = False  # fracctl's own apply of git's object

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


def apply_creator(ctx: Context, target: SyncTarget, **_: Any) -> Creator:
    """Fracctl's server-side apply."""
    return ApplyCreator()
