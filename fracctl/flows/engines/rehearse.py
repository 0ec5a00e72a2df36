"""Rehearsing a recreate: the backend's proofs, who else owns the object, what the wait needs.

:func:`prove` runs every read-only proof beside the backend's own
(:mod:`fracctl.flows.engines`), judged by :mod:`fracctl.core.recreate.rehearsal`:

* no GitOps owner other than the configured backend marks the live object
  (:mod:`fracctl.flows.engines.owners`);
* the readiness condition fracctl waits for is the one the operator writes on the nodes
  the live object selects, and every node of git's selection can run the agents;
* right before the delete, after any confirmation, no fractional pod runs (a pod
  scheduled while a person read the plan is seen).
"""

from __future__ import annotations

from typing import Any

from fracctl.core.kube.nodes import matches, selector_of
from fracctl.core.kube.resources import DAEMONSETS, NODES
from fracctl.core.recreate.rehearsal import cannot_run_agents, condition_written
from fracctl.errors import FracctlError, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import Backend, BackendCheckFailed, Proof, select
from fracctl.flows.engines.owners import check_owners

Obj = dict[str, Any]


def prove(
    ctx: Context, backend: Backend, desired: Obj, *, deletes: bool, live: Obj | None = None
) -> Proof:
    """Every read-only proof a recreate needs before it changes anything.

    Args:
        ctx: the context.
        backend: the chosen backend.
        desired: git's object.
        deletes: whether the plan deletes the live object (then the delete is rehearsed).
        live: the live object the plan deletes.

    Returns:
        The evidence, and the object the backend was proven to create.

    Raises:
        BackendCheckFailed: a proof failed; the message says nothing was changed.
    """
    evidence: list[str] = []
    try:
        if deletes:
            from fracctl.flows.engines.delete_rehearsal import check_delete

            evidence = check_delete(ctx, live)
            evidence += check_owners(ctx, select(ctx, backend.name), live)
    except UsageError:
        raise
    except FracctlError as e:
        what = "the rehearsed delete would not complete"
        raise BackendCheckFailed(backend.name, e, what=what) from e
    try:
        proof = backend.check(ctx, desired)
    except UsageError:
        raise
    except FracctlError as e:
        raise BackendCheckFailed(backend.name, e) from e
    try:
        waits = check_runtime_class(ctx, live, proof.creates)
        waits += check_wait(ctx, live, proof.creates)
    except FracctlError as e:
        what = "the wait that follows the recreate could not end"
        raise BackendCheckFailed(backend.name, e, what=what) from e
    return Proof(evidence + proof.evidence + waits, proof.creates)


def _agent_tolerations(ctx: Context, desired: Obj) -> tuple[list[Obj], str]:
    """The tolerations every agent DaemonSet has, and where they were read."""
    k = ctx.config.cluster
    found = [
        ds
        for name in k.agent_daemonsets
        if (ds := ctx.kube.get_or_none(DAEMONSETS, name, k.agent_namespace)) is not None
    ]
    if not found:
        spec = desired.get("spec") or {}
        return list(spec.get("tolerations") or []), "git's config (no agent DaemonSet yet)"
    per = [
        (((ds.get("spec") or {}).get("template") or {}).get("spec") or {}).get("tolerations") or []
        for ds in found
    ]
    # A taint must be tolerated by every agent: keep the tolerations all of them have.
    common = [t for t in per[0] if all(t in other for other in per[1:])]
    names = ", ".join(f"{k.agent_namespace}/{ds['metadata']['name']}" for ds in found)
    return common, f"the agents' DaemonSets {names}"


def check_wait(ctx: Context, live: Obj | None, desired: Obj) -> list[str]:
    """Prove the wait has something to wait for.

    The readiness condition is written by the operator on the nodes the live object
    selects (when it selects any), and each node git's selector selects can run the
    agents: its kubelet reports Ready, and the agents tolerate its taints.
    """
    t = ctx.config.target
    cond = ctx.config.condition
    nodes = ctx.kube.list(NODES)
    evidence: list[str] = []
    steady = live is not None and not (live.get("metadata") or {}).get("deletionTimestamp")
    live_sel = selector_of(live, t.selector_field) if steady else None
    now = [n for n in nodes if live_sel is not None and matches(live_sel, _labels(n))]
    if now:
        written, similar = condition_written(now, cond)
        if not written and not (similar or _reports_ready(live)):
            evidence.append(
                f"{cond} is not written on the nodes the live object selects yet (the "
                "operator has not reported the config Ready)"
            )
        elif not written:
            seen = f"; they carry {', '.join(similar)}" if similar else ""
            raise Refused(
                f"no node the live {t.kind}/{t.name} selects carries the readiness condition "
                f"{cond}{seen}: the wait would wait for a condition nobody writes",
                hint="set readiness.condition (or target.naming) in fracctl.yaml to the "
                "condition the operator writes, then rerun",
            )
        else:
            evidence.append(f"the operator writes {cond} on the nodes the live object selects")
    desired_sel = selector_of(desired, t.selector_field) or {}
    chosen = [n for n in nodes if matches(desired_sel, _labels(n))]
    tolerations, where = _agent_tolerations(ctx, desired)
    blocked = {
        n["metadata"]["name"]: why for n in chosen if (why := cannot_run_agents(n, tolerations))
    }
    if blocked:
        listed = "; ".join(f"{name}: {', '.join(why)}" for name, why in sorted(blocked.items()))
        raise Refused(
            f"the agents cannot run on every node git's selector selects, so the wait could "
            f"not end: {listed} (tolerations from {where})",
            hint="make the node Ready, or add the toleration to the agents (the config's "
            "tolerations), or leave the node out of the selection, then rerun",
        )
    evidence.append(
        f"all {len(chosen)} node(s) git's selector selects are Ready and their taints are "
        f"tolerated by the agents (tolerations from {where})"
    )
    return evidence


def _reports_ready(obj: Obj | None) -> bool:
    """Whether the operator reports the config Ready (it writes each node's condition)."""
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _labels(node: Obj) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("labels") or {})


def guard_again(
    ctx: Context,
    live: Obj | None,
    desired: Obj,
    *,
    on_nodes_only: bool = False,
    change: str = "delete",
) -> str:
    """The fractional-pod guard, once more, right before the ``change`` (delete, update).

    ``on_nodes_only`` (after a drain): pods waiting unscheduled do not count; they hold no
    CUDA context, and are the evicted pods' replacements.

    Raises:
        Refused: a fractional pod runs now; nothing was deleted.
    """
    from fracctl.flows.guards.preflight import fractional_pods_check
    from fracctl.flows.guards.scan import fractions, scan_fractional_pods

    scan = scan_fractional_pods(ctx, fractions(ctx, live=live, desired=desired))
    if on_nodes_only:
        scan.pods = [p for p in scan.pods if p.node]
    check = fractional_pods_check(ctx, scan)
    if not check.ok:
        raise Refused(
            f"fractional pods appeared since the guards ran: {check.evidence}; nothing was "
            + ("deleted" if change == "delete" else "changed"),
            hint=check.fix,
        )
    return f"right before the {change}: {check.evidence}"


def check_runtime_class(ctx: Context, live: Obj | None, desired: Obj) -> list[str]:
    """Git's ``spec.runtimeClassName``, where it changes, names a RuntimeClass that exists.

    The daemons' pods run with it (unset: ``nvidia``, as the operator has it); the API
    server refuses a pod whose RuntimeClass is missing, so the rolled daemons would never
    start again and fractions would stay down on every selected node. Only a change is
    proven: a run that repairs something else is not held to what the live object has.
    """
    from fracctl.core.doctor import RUNTIME_CLASSES
    from fracctl.errors import Forbidden

    def name_of(obj: Obj | None) -> str:
        return str(((obj or {}).get("spec") or {}).get("runtimeClassName", "nvidia") or "")

    want = name_of(desired)
    if live is None or not want or want == name_of(live):
        return []
    try:
        found = ctx.kube.get_or_none(RUNTIME_CLASSES, want)
    except Forbidden:
        return [f"RuntimeClass {want} could not be read (forbidden): not proven it exists"]
    if found is None:
        raise Refused(
            f"git sets spec.runtimeClassName {want}, and the cluster has no RuntimeClass "
            f"{want}: the API server would refuse every daemon pod, and fractions would "
            "stay down on every selected node",
            hint=f"install the RuntimeClass {want} (kubectl get runtimeclass) or fix "
            "spec.runtimeClassName in git, then rerun",
        )
    return [f"RuntimeClass {want}, which git's spec.runtimeClassName names, exists"]
