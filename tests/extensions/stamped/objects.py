"""The stamped engine's other half: the creator ``recreate KIND/NAME`` uses."""

from __future__ import annotations

from typing import Any

from fracctl.flows.context import Context
from fracctl.flows.engines.apply.objects import ApplyCreator

Obj = dict[str, Any]


class StampedCreator(ApplyCreator):
    """``recreate KIND/NAME --backend stamped``: fracctl's apply, which says it is this one."""

    name = "stamped"

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """What it will apply as."""
        return [f"the stamped backend creates it ({ctx.config.section('stamped').field_manager})"]


def stamped_creator(ctx: Context, target: Any, **_: Any) -> StampedCreator:
    """The registry entry's ``objects``."""
    return StampedCreator()
