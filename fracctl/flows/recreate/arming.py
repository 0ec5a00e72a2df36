"""Arming the lock Lease for this identity, and rehearsing the delete through admission.

The guard policy lets a delete of the target through only for the identity armed on
the lock Lease (``runbooks/guard-policy.md``); ``recreate`` arms it after its proofs and
guards, right before the delete, and rehearses the delete once more with it armed.
"""

from __future__ import annotations

from typing import Any

from fracctl.errors import FracctlError, NotFound, Refused
from fracctl.flows.context import Context
from fracctl.flows.recreate.lock import LeaseLock, NoLock

Obj = dict[str, Any]

#: How long the guard policy may take to see the Lease armed (its parameter cache).
ARMED_WITHIN = 10.0


def arm(
    ctx: Context, lock: LeaseLock | NoLock, live: Obj, delegate: str = "", *, update: bool = False
) -> None:
    """Arm the lock Lease for this identity, then rehearse the delete once more.

    The guard policy lets the delete through only for the identity armed on the Lease
    (and its ``delegate``, a controller whose run deletes for us, armed in the same
    write), so the dry-run delete now runs the same admission the real one will: a
    policy bound wrongly refuses here, before anything is deleted. With ``update`` the
    same write arms this object's update that rolls the daemons (whoever applies it:
    the backend's engine), and the rehearsal shows the policy reads that Lease.
    """
    t = ctx.config.target
    uid = str(live["metadata"]["uid"]) if update else ""
    who = lock.arm(delegate, update_uid=uid)
    refused = armed_dry_run_delete(ctx, live["metadata"]["uid"])
    if refused is not None:
        raise Refused(
            f"the delete of {t.kind}/{t.name}, rehearsed again with the lock armed for "
            f"{who or 'this identity'}, was refused, so nothing was deleted: {refused.message}",
            hint="see whether the guard policy is bound to the lock Lease (fracctl doctor, "
            "fracctl policy print), then rerun",
        )
    also = f" and {delegate}" if delegate else ""
    ctx.info(f"armed the lock for {who}{also}: a dry-run delete passes the admission policies")


def armed_dry_run_delete(ctx: Context, uid: str) -> FracctlError | None:
    """A dry-run delete of this incarnation; the refusal, if it stays refused.

    Admission reads the Lease from its own cache, so the guard policy sees the armed Lease
    a moment after it was written: its refusal is retried for :data:`ARMED_WITHIN`.
    """
    from fracctl.core.recreate.guard_policy import refused_by_guard

    t = ctx.config.target
    deadline = ctx.clock.monotonic() + ARMED_WITHIN
    while True:
        try:
            ctx.kube.delete(t.ref, t.name, uid=uid, dry_run=True)
            return None
        except NotFound:
            return None  # gone already: the delete that follows says so
        except FracctlError as e:
            if not refused_by_guard(t, e.message) or ctx.clock.monotonic() >= deadline:
                return e
            ctx.clock.sleep(0.2)
