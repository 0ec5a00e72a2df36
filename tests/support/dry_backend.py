"""A backend that records what ``recreate`` asks of it: the whole cost of a new backend.

Registered by one entry in the tests
(``BackendEntry("dry", …, "tests.support.dry_backend:DryBackend")``); it creates the
object the way ``apply`` does, so the flow's read-back passes.
"""

from __future__ import annotations

from typing import Any

from fracctl.flows.backends import Obj, Proof, clean_desired
from fracctl.flows.context import Context

CALLS: list[tuple[str, Any]] = []


class DryBackend:
    """Records validate/check/recreate with how many deletes the cluster had seen."""

    name = "dry"
    claim = "the dry backend said it created it but the live object differs"

    def validate(self, ctx: Context) -> None:
        CALLS.append(("validate", None))

    def check(self, ctx: Context, desired: Obj) -> Proof:
        CALLS.append(("check", ctx.kube.calls["DELETE gpufractioningconfigs"]))
        return Proof(["the dry backend is always ready"], clean_desired(desired))

    def recreate(self, ctx: Context, desired: Obj) -> str:
        CALLS.append(("recreate", ctx.kube.calls["DELETE gpufractioningconfigs"]))
        ctx.kube.apply(ctx.config.target.ref, clean_desired(desired))
        return "the dry backend created it"
