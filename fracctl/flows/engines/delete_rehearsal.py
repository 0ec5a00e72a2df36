"""The rehearsal of the delete: what must hold for the delete to complete.

A recreate deletes the live object only after these proofs: the caller may get, watch
and delete it; a dry-run delete of exactly that incarnation (its uid) passes RBAC and
admission (the guard policy's refusal outside a recreate is expected, and named); every
finalizer on it is one the running operator releases, and the operator runs (its
Deployment) and leads (its Lease) now.
"""

from __future__ import annotations

from typing import Any

from fracctl.errors import FracctlError, Refused
from fracctl.flows.context import Context
from fracctl.flows.engines.access import require

Obj = dict[str, Any]


def check_delete(ctx: Context, live: Obj | None = None) -> list[str]:
    """Prove the delete that follows will pass and that the object will then go.

    RBAC for read, watch and delete; a server-side dry-run delete of exactly this
    incarnation (uid precondition), which runs authorization and every admission policy
    and webhook; every finalizer on the object is one something releases (only the
    operator's is known: any other refuses, named); and the operator runs and leads
    now, whether or not its finalizer is still there: it alone clears the readiness
    condition from the nodes the config selected.
    """
    from fracctl.core.recreate.rehearsal import unknown_finalizers

    t = ctx.config.target
    evidence = [require(ctx, verb, ref=t.ref, name=t.name) for verb in ("get", "watch", "delete")]
    if live is None:
        return evidence
    meta = live.get("metadata") or {}
    unknown = unknown_finalizers(live, [t.finalizer])
    if unknown:
        raise Refused(
            f"{t.kind}/{t.name} carries finalizer(s) that nothing fracctl knows releases: "
            f"{', '.join(unknown)}. A delete would leave it terminating until they go, and "
            "the operator would already have cleared the readiness condition from every "
            "fraction node",
            hint="find what set them and make sure it runs (or remove them on purpose: "
            f"kubectl patch {t.plural}.{t.group} {t.name} --type json -p "
            '\'[{"op":"remove","path":"/metadata/finalizers/N"}]\'), then rerun',
        )
    evidence.append(dry_run_delete(ctx, str(meta.get("uid") or "")))
    held = t.finalizer in (meta.get("finalizers") or [])
    evidence.append(
        f"finalizer {t.finalizer} is released by the gpu-fractioning operator"
        if held
        else "no finalizer holds the object; the operator still clears the node conditions"
    )
    evidence.extend(check_operator(ctx, held=held))
    return evidence


def dry_run_delete(ctx: Context, uid: str) -> str:
    """A dry-run delete of this incarnation; the guard policy's refusal is the expected one.

    Before the lock is armed, fracctl's own guard policy refuses every delete, this
    run's included: that refusal proves the policy is installed and bound. The run arms
    the lock after its guards and rehearses the delete again then (``arming.arm``).
    """
    from fracctl.core.recreate.guard_policy import policy_name, refused_by_guard

    t = ctx.config.target
    try:
        ctx.kube.delete(t.ref, t.name, uid=uid, dry_run=True)
    except FracctlError as e:
        if not refused_by_guard(t, e.message):
            raise
        return (
            f"the guard policy {policy_name(t)} refuses a delete outside a recreate; this run "
            "arms the lock for its identity after its guards and rehearses the delete then"
        )
    return f"a dry-run delete of {t.kind}/{t.name} (uid {uid}) passes RBAC and admission"


def check_operator(ctx: Context, *, held: bool = True) -> list[str]:
    """The operator runs (Deployment) and leads (Lease) now.

    ``held``: its finalizer is on the object (then without it the delete never ends);
    else without it nothing clears the node conditions of the old selection.
    """
    from fracctl.core.kube.resources import DEPLOYMENTS, LEASES
    from fracctl.core.recreate.operator import deployment_available, lease_renewed

    k = ctx.config.cluster
    t = ctx.config.target
    ns = k.agent_namespace
    verdicts = [
        deployment_available(
            ctx.kube.get_or_none(DEPLOYMENTS, k.operator_deployment, ns),
            f"{ns}/{k.operator_deployment}",
        )
    ]
    if k.operator_lease:
        lease = ctx.kube.get_or_none(LEASES, k.operator_lease, ns)
        verdicts.append(lease_renewed(lease, f"{ns}/{k.operator_lease}", now=ctx.clock.now()))
    failed = [v.text for v in verdicts if not v.ok]
    if failed:
        why = (
            f"The delete would leave {t.kind}/{t.name} terminating: only the gpu-fractioning "
            f"operator releases its finalizer {t.finalizer}, and when it returns it finishes "
            "the delete with nothing to recreate the object"
            if held
            else f"Nothing would clear the readiness condition from the nodes {t.kind}/"
            f"{t.name} selects (the operator does, when the object goes), nor start the "
            "agents on the new selection"
        )
        raise Refused(
            f"{'; '.join(failed)}. {why}",
            hint=f"start the operator (`kubectl -n {ns} get deploy,pods,lease`), then rerun; "
            "cluster.operator_deployment and cluster.operator_lease name it",
        )
    return [v.text for v in verdicts]
