"""The ``apply`` backend: fracctl creates the object itself by server-side apply."""

from __future__ import annotations

from fracctl.flows.context import Context
from fracctl.flows.engines import BackendBase, Obj, Proof, clean_desired, dry_run_create
from fracctl.flows.engines.access import require


class ApplyBackend(BackendBase):
    """Create the object with a server-side apply (field manager ``fracctl``)."""

    name = "apply"
    claim = "the apply was accepted but the live object differs"

    def validate(self, ctx: Context) -> None:
        """Nothing to configure."""

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """RBAC for apply (``patch`` and ``create``) and a dry-run create of git's object."""
        t = ctx.config.target
        evidence = [require(ctx, verb, ref=t.ref, name=t.name) for verb in ("patch", "create")]
        dry_run_create(ctx, desired)
        evidence.append("a dry-run create of the object passes RBAC, admission and validation")
        return Proof(evidence, clean_desired(desired))

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Server-side apply git's object."""
        ctx.kube.apply(ctx.config.target.ref, clean_desired(desired))
        return "server-side apply (field manager fracctl) accepted the object"
