"""A backend that records what ``recreate`` asks of it: the whole cost of a new backend.

Registered by one entry in the tests
(``BackendEntry("dry", …, "tests.support.dry_backend:DryBackend")``); it creates the
object the way ``apply`` does, so the flow's read-back passes.

The record belongs to the test that registered it: :func:`recording` gives the class a
fresh list for that test's duration (there is none outside one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from fracctl.flows.context import Context
from fracctl.flows.engines import BackendBase, Obj, Proof, clean_desired

if TYPE_CHECKING:
    import pytest

Calls = list[tuple[str, Any]]


class DryBackend(BackendBase):
    """Records validate/check/recreate with how many deletes the cluster had seen.

    The protocol's other members keep :class:`BackendBase`'s defaults.
    """

    name = "dry"
    claim = "the dry backend said it created it but the live object differs"
    calls: ClassVar[Calls]  # set by :func:`recording`, for one test

    def validate(self, ctx: Context) -> None:
        self.calls.append(("validate", None))

    def check(self, ctx: Context, desired: Obj) -> Proof:
        self.calls.append(("check", ctx.kube.calls["DELETE gpufractioningconfigs"]))
        return Proof(["the dry backend is always ready"], clean_desired(desired))

    def recreate(self, ctx: Context, desired: Obj) -> str:
        self.calls.append(("recreate", ctx.kube.calls["DELETE gpufractioningconfigs"]))
        ctx.kube.apply(ctx.config.target.ref, clean_desired(desired))
        return "the dry backend created it"


def recording(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """A fresh record for :class:`DryBackend`, removed when the test's monkeypatch undoes."""
    calls: Calls = []
    monkeypatch.setattr(DryBackend, "calls", calls, raising=False)
    return calls
