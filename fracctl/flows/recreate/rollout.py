"""Whether the daemons have rolled out after a change of the config, and the wait for it.

The operator rewrites its DaemonSets' pod templates from the config and
``RollingUpdate`` replaces the daemons node by node (:mod:`fracctl.core.fractions.daemons`).
A node keeps its readiness condition while that runs (the operator writes it only once a
daemon is seen unready), so a wait on the nodes alone can end before the first daemon was
replaced. Done means: the operator has observed the config's generation (where its status
says so), and each agent DaemonSet that exists has been observed by its controller at its
generation with every scheduled pod updated and ready.
"""

from __future__ import annotations

from typing import Any

from fracctl.core.kube.resources import DAEMONSETS
from fracctl.errors import TimedOut
from fracctl.flows.context import Context

Obj = dict[str, Any]


def observed_generation(live: Obj) -> int | None:
    """The generation the operator last acted on, where its status says (None: it does not)."""
    status = live.get("status") or {}
    if isinstance(status.get("observedGeneration"), int):
        return int(status["observedGeneration"])
    seen = [c.get("observedGeneration") for c in status.get("conditions") or []]
    numbers = [g for g in seen if isinstance(g, int)]
    return max(numbers) if numbers else None


def config_pending(ctx: Context, live: Obj | None) -> str:
    """Why the operator has not yet acted on the live config's generation ("" it has)."""
    if live is None:
        return ""
    t = ctx.config.target
    generation = (live.get("metadata") or {}).get("generation")
    seen = observed_generation(live)
    if seen is None or not isinstance(generation, int) or seen >= generation:
        return ""
    return f"the operator has not yet acted on generation {generation} of {t.kind}/{t.name}"


def daemonset_pending(ds: Obj) -> str:
    """Why one DaemonSet has not rolled out ("" it has)."""
    meta, status = ds.get("metadata") or {}, ds.get("status") or {}
    name = f"DaemonSet {meta.get('namespace')}/{meta.get('name')}"
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
        return f"{name}: its controller has not yet seen generation {meta.get('generation')}"
    want = int(status.get("desiredNumberScheduled") or 0)
    updated = int(status.get("updatedNumberScheduled") or 0)
    ready = int(status.get("numberReady") or 0)
    if updated < want or ready < want or int(status.get("numberUnavailable") or 0):
        return f"{name}: {updated} of {want} pod(s) updated, {ready} ready"
    return ""


def pending(ctx: Context, live: Obj | None) -> list[str]:
    """What of the rollout is not done, read now (empty: nothing to wait for)."""
    k = ctx.config.cluster
    names = set(k.agent_daemonsets)
    found = ctx.kube.list(DAEMONSETS, namespace=k.agent_namespace)  # one LIST, as the wait's
    out = [config_pending(ctx, live)]
    out += [daemonset_pending(ds) for ds in found if ds["metadata"]["name"] in names]
    return [line for line in out if line]


def wait_rollout(ctx: Context, *, deadline: float) -> list[str]:
    """Block, watching, until the operator acted on the config and every daemon rolled out.

    Returns what was waited for (empty: it was done already).

    Raises:
        TimedOut: naming what is still rolling, and what to look at.
    """
    t, k = ctx.config.target, ctx.config.cluster
    live = ctx.kube.get_or_none(t.ref, t.name)
    first = pending(ctx, live)
    if not first:
        return []
    ctx.info(f"waiting for the daemons' rollout: {'; '.join(first)}")
    if config_pending(ctx, live):
        _, seen = ctx.kube.watch_until(
            t.ref,
            lambda view: not config_pending(ctx, next(iter(view.values()), None)),
            deadline=deadline,
            clock=ctx.clock,
            field_selector=f"metadata.name={t.name}",
        )
        if not seen:
            _timed_out(ctx, pending(ctx, ctx.kube.get_or_none(t.ref, t.name)))
    names = set(k.agent_daemonsets)

    def rolled(view: dict[str, Obj]) -> bool:
        ours = [o for o in view.values() if o["metadata"]["name"] in names]
        return not any(daemonset_pending(o) for o in ours)

    view, done = ctx.kube.watch_until(
        DAEMONSETS, rolled, deadline=deadline, clock=ctx.clock, namespace=k.agent_namespace
    )
    if not done:
        ours = [o for o in view.values() if o["metadata"]["name"] in names]
        _timed_out(ctx, [line for o in ours if (line := daemonset_pending(o))])
    return first


def _timed_out(ctx: Context, left: list[str]) -> None:
    k = ctx.config.cluster
    raise TimedOut(
        f"the daemons did not roll out in time: {'; '.join(left) or 'still rolling'}",
        hint=f"see why their pods do not start (kubectl -n {k.agent_namespace} get pods -o wide; "
        f"kubectl -n {k.agent_namespace} describe daemonset), then rerun",
    )
