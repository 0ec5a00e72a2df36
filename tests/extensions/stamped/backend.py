"""The stamped engine's config half: server-side apply under its own field manager.

Its settings are its own fracctl.yaml section (``stamped:``) and its recreate role's extra
rights are declared here too. Its proof is the apply backend's (the rights, and a dry-run
create of git's object).
"""

from __future__ import annotations

from dataclasses import dataclass

from fracctl.adapters.kube import APPLY_PATCH
from fracctl.core.rbac import Params, RbacRule
from fracctl.flows.context import Context
from fracctl.flows.engines import Obj, Proof, clean_desired
from fracctl.flows.engines.apply.backend import ApplyBackend


@dataclass(frozen=True)
class StampedConfig:
    """``stamped:`` in fracctl.yaml, or ``FRACCTL_STAMPED_FIELD_MANAGER``."""

    field_manager: str = "fracctl-stamped"

    def __post_init__(self) -> None:
        if not self.field_manager.strip():
            raise ValueError("field_manager must not be empty")


def rbac_rules(p: Params) -> dict[str, list[RbacRule]]:
    """Apply needs ``patch`` on the target (the recreate role already creates it)."""
    t = p.target
    why = f"server-side apply as {p.section('stamped').field_manager}"
    return {"": [RbacRule((t.group,), (t.plural,), ("patch",), why, (t.name,))]}


class StampedBackend(ApplyBackend):
    """Server-side apply with the configured field manager."""

    name = "stamped"
    claim = "the stamped apply was accepted but the live object differs"

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """The apply backend's proof, and the field manager it will apply as."""
        proof = super().check(ctx, desired)
        manager = ctx.config.section("stamped").field_manager
        return Proof([*proof.evidence, f"it will apply as {manager}"], proof.creates)

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Apply git's object as the configured field manager."""
        body = clean_desired(desired)
        manager: str = ctx.config.section("stamped").field_manager
        ctx.kube.patch(
            ctx.config.target.ref,
            body["metadata"]["name"],
            body,
            content_type=APPLY_PATCH,
            field_manager=manager,
            force=True,
        )
        return f"server-side apply as {manager} accepted the object"
