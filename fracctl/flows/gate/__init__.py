"""``fracctl gate``: ``recreate`` cut in two around a GitOps engine's sync, as its hooks.

Argo CD runs a PreSync hook, then applies the revision it syncs, then a PostSync hook.
When that revision changes an immutable field of the fractioning config, the PreSync
half runs the first half of ``recreate`` (lock, proofs, guards or a drain, backup, the
policy armed for this delete, the delete, the wait until gone) and the sync creates git's
object; the PostSync half verifies the live object against the same revision, waits until
every selected node is ready, lifts any fence and releases the lock. When the revision
changes nothing immutable, the PreSync half says so and ends without taking the lock.

Both halves hold the lock as one holder (:func:`gate_identity`): the Lease the PreSync
half took stays held across the sync, and the PostSync half (or the PreSync half of a
retry) takes it as its own. Argo CD runs one operation per application at a time, so two
gate runs never overlap; a ``fracctl recreate`` from elsewhere still finds the lock held.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fracctl.errors import FracctlError
from fracctl.flows.context import Context
from fracctl.flows.engines import Obj
from fracctl.flows.gate.common import (
    FIRST_HALF,
    POST_SYNC,
    PRE_SYNC,
    GateResult,
    SyncBackend,
    gate_identity,
    gate_lease_held,
    read_desired,
)
from fracctl.flows.gate.halves import run_first_half, run_second_half


def pre_sync(
    ctx: Context,
    objects: list[Obj],
    *,
    drain: bool = False,
    force: bool = False,
    boundary: Callable[[str], None] | None = None,
    fleet: Path | None = None,
    tracking: str = "",
) -> GateResult:
    """The PreSync half; see the module. Raises what ``recreate`` raises (Refused, ...).

    ``fleet``: the folder of the hub's kubeconfig (:mod:`.order`); ``tracking``: the
    hook pod's Argo CD tracking id.
    """
    return run_first_half(
        ctx,
        objects,
        drain=drain,
        force=force,
        fleet=fleet,
        tracking=tracking,
        at=boundary or (lambda _step: None),
    )


def post_sync(
    ctx: Context, objects: list[Obj], *, boundary: Callable[[str], None] | None = None
) -> GateResult:
    """The PostSync half; see the module."""
    return run_second_half(ctx, objects, at=boundary or (lambda _step: None))


__all__ = [
    "FIRST_HALF",
    "POST_SYNC",
    "PRE_SYNC",
    "FracctlError",
    "GateResult",
    "SyncBackend",
    "gate_identity",
    "gate_lease_held",
    "post_sync",
    "pre_sync",
    "read_desired",
]
