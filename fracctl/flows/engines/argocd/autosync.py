"""Argo CD's automated sync failing on the immutable selector: the operation fracctl stops.

With ``syncPolicy.automated`` (and ``retry``, or ``selfHeal``), Argo CD keeps trying to
apply git's selector over the live one; each try fails on the immutable field, so an
operation runs almost all the time and every other sync is refused with "another
operation is already in progress". Such an operation is recognised from what Argo CD
writes (argo-cd ``pkg/apis/application/v1alpha1/types.go``: ``Operation.InitiatedBy.
Automated``, ``OperationState.Phase``, ``SyncOperationResult.Resources[].Status`` and
``.Message``): initiated by the automation, Running, and every failure it reports is the
target's, for its immutable selector. Only that operation is terminated; any other
still refuses.
"""

from __future__ import annotations

from typing import Any

from fracctl.core.clock import Backoff
from fracctl.errors import Refused
from fracctl.flows.context import Context

Obj = dict[str, Any]


def _state(doc: Obj) -> Obj:
    return dict((doc.get("status") or {}).get("operationState") or {})


def running(doc: Obj) -> bool:
    """Whether the application runs an operation (pending, running or terminating)."""
    return bool(doc.get("operation")) or _state(doc).get("phase") in ("Running", "Terminating")


def _automated(doc: Obj) -> bool:
    """Whether the current operation was started by Argo CD's automation."""
    op = doc.get("operation") or {}
    who = op.get("initiatedBy") or ((_state(doc).get("operation") or {}).get("initiatedBy") or {})
    return bool(who.get("automated"))


def automated_failing_on_target(doc: Obj, kind: str, name: str, refusal: str = "") -> str | None:
    """A one-line account of the running operation when it is terminable, else None.

    It fails on the target's immutable field: the API server's word for it is
    "immutable" (a selector) or, for a built-in kind, ``refusal`` (the cause drift's dry
    run got, e.g. ``spec: Forbidden`` for a StatefulSet).
    """
    state = _state(doc)
    if not _automated(doc) or state.get("phase") not in ("Running", None, ""):
        return None
    results = ((state.get("syncResult") or {}).get("resources")) or []
    failed = [r for r in results if r.get("status") == "SyncFailed"]
    mine = [r for r in failed if r.get("kind") == kind and r.get("name") == name]
    message = str(state.get("message") or "")
    words = ("immutable", refusal) if refusal else ("immutable",)

    def refused(text: str) -> bool:
        return any(w in text for w in words)

    on_target = bool(mine) and all(refused(str(r.get("message") or "")) for r in mine)
    in_message = f'"{name}" is invalid' in message and refused(message)
    if len(failed) != len(mine) or not (on_target or (not failed and in_message)):
        return None
    return (
        f"Argo CD's automated sync ({state.get('phase') or 'Pending'}: "
        f"{' '.join(message.split())[:160] or 'no message'}), failing on {kind}/{name}'s "
        "immutable " + ("field" if refusal else "selector")
    )


def stop(ctx: Context, app: str, said: str) -> str:
    """Terminate the operation and wait until the application runs none.

    Raises:
        Refused: it was still running after ``timeouts.sync``.
    """
    client = ctx.argocd
    client.terminate_operation(app)
    deadline = ctx.clock.monotonic() + ctx.config.timeouts.sync
    backoff = Backoff(first=0.2, cap=2.0)
    while True:
        doc = client.get_application(app)
        if not running(doc):
            return f"terminated {said} (it would have refused this run's sync)"
        left = deadline - ctx.clock.monotonic()
        if left <= 0:
            raise Refused(
                f"fracctl terminated {said}, and it was still {_state(doc).get('phase')} after "
                f"{ctx.config.timeouts.sync:.0f}s",
                hint=f"see `argocd app get {app}`; rerun once it ended",
            )
        ctx.clock.sleep(min(backoff.next(), left))


def settle(ctx: Context, app: str, doc: Obj, kind: str, name: str, refusal: str = "") -> Obj:
    """Wait while an automated sync runs that has not yet shown how it ends.

    Up to ``timeouts.sync``: it may end, or show it fails on the target. Another
    operation, or an idle application, is returned at once.
    """
    backoff = Backoff(first=0.2, cap=2.0)
    deadline = ctx.clock.monotonic() + ctx.config.timeouts.sync
    while True:
        if not running(doc) or not _automated(doc):
            return doc
        if automated_failing_on_target(doc, kind, name, refusal) is not None:
            return doc
        left = deadline - ctx.clock.monotonic()
        if left <= 0:
            return doc  # the caller refuses, naming the operation
        ctx.clock.sleep(min(backoff.next(), left))
        doc = ctx.argocd.get_application(app)
