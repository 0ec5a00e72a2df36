"""The calls on the live object that a recreate and a restore share.

Delete exactly one incarnation, watch until it is gone, read it back against git's
selector, and say which selected nodes are not ready yet.
"""

from __future__ import annotations

from fracctl.core.kube.nodes import is_ready, selector_of, selector_string
from fracctl.core.kube.resources import NODES
from fracctl.errors import Conflict, ExternalError, NotFound, TimedOut
from fracctl.flows.context import Context
from fracctl.flows.engines import Backend, Obj


def unready_nodes(ctx: Context, selector: dict[str, str] | None) -> list[str]:
    """Nodes ``selector`` matches whose readiness condition is not True."""
    if selector is None:
        return []
    cond = ctx.config.condition
    nodes = ctx.kube.list(NODES, label_selector=selector_string(selector) or None)
    return sorted(n["metadata"]["name"] for n in nodes if not is_ready(n, cond))


def delete(ctx: Context, live: Obj) -> None:
    """Delete exactly this incarnation of the object (UID precondition)."""
    meta = live["metadata"]
    try:
        ctx.kube.delete(ctx.config.target.ref, meta["name"], uid=meta["uid"])
    except NotFound:
        pass  # already gone
    except Conflict as e:
        raise ExternalError(
            f"{live.get('kind')}/{meta['name']} changed while fracctl was deleting it "
            f"(another object with the same name now exists): {e.status.message}",
            hint="rerun: fracctl decides again from what the cluster holds",
        ) from None


def wait_gone(ctx: Context, uid: str, *, timeout: float | None = None) -> None:
    """Watch until the object with ``uid`` is gone (its finalizers released)."""
    t = ctx.config.target
    timeout = ctx.config.timeouts.delete if timeout is None else timeout
    seen: list[Obj] = []

    def gone(view: dict[str, Obj]) -> bool:
        this = [o for o in view.values() if o["metadata"].get("uid") == uid]
        seen[:] = this or seen
        return not this

    _view, finished = ctx.kube.watch_until(
        t.ref,
        gone,
        deadline=ctx.clock.monotonic() + timeout,
        clock=ctx.clock,
        field_selector=f"metadata.name={t.name}",
    )
    if finished:
        return
    last = seen[-1] if seen else None
    left = list((last or {}).get("metadata", {}).get("finalizers") or [])
    others = [f for f in left if f != t.finalizer]
    if others:
        why = (
            f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} not the operator's: "
            "whatever set them must release them"
        )
        hint = "find the controller that owns them; rerun fracctl recreate once they are gone "
    else:
        why = (
            f"the gpu-fractioning operator releases {t.finalizer} after clearing node "
            "conditions: is it running?"
        )
        hint = "check `kubectl -n gpu-fractioning get deploy,pods`; rerun fracctl recreate "
    raise TimedOut(
        f"{t.kind}/{t.name} is still terminating after {timeout:.0f}s; finalizers left: "
        f"{', '.join(left) or 'none'}; {why}",
        hint=hint + "(it resumes by waiting; --restore-from works only once the object is gone)",
    )


def verify(
    ctx: Context,
    desired_selector: dict[str, str],
    backend: Backend,
    said: str,
    *,
    desired: Obj | None = None,
) -> Obj:
    """Read the live object back: it must exist and carry git's selector.

    With ``desired`` (an update in place) it must also carry every spec field git sets.
    """
    from fracctl.core.drift import spec_changes

    t = ctx.config.target
    live = ctx.kube.get_or_none(ctx.config.target.ref, t.name)
    got = selector_of(live, t.selector_field)
    left = spec_changes(live, desired) if desired is not None else []
    if (
        live is not None
        and got == desired_selector
        and not left
        and not live["metadata"].get("deletionTimestamp")
    ):
        return live
    claim = backend.claim
    state = "is absent" if live is None else f"has nodeSelector {got}"
    if live is not None and left:
        state = "differs from git at " + ", ".join(f.path for f in left[:5])
    raise ExternalError(
        f"{claim}: {t.kind}/{t.name} {state}, git wants {desired_selector} "
        f"(the backend said: {said})",
        hint="never trust the sync status; rerun with --backend apply to create it directly",
    )
