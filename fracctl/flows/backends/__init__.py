"""The ways ``recreate`` can bring the object back, each proven read-only before a delete.

A backend has a name, a :meth:`~Backend.validate` of its configuration, a
:meth:`~Backend.check` that proves with read-only calls that it can recreate the object
(the same credentials, permissions and objects the recreate will use),
:meth:`~Backend.recreate`, and the claim its success makes about the live object (which
:func:`fracctl.flows.recreate.verify` never trusts). Adding a GitOps engine is one module
in this package and one entry in :data:`fracctl.core.backends.REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from fracctl.core.backends import NAMES, choices, entry, load
from fracctl.errors import Conflict, ExternalError, FracctlError, Refused, UsageError
from fracctl.flows.context import Context

Obj = dict[str, Any]


class Backend(Protocol):
    """What ``recreate`` needs from a way of creating the object.

    A backend may also have ``before_delete(ctx) -> list[str]``: what it must do after
    the guards and any confirmation, right before the delete (Argo CD stops its own
    failing automated sync there, then dry-runs the sync); the lines are said as done.
    """

    name: str
    claim: str  # what the backend's success says, for "… but the live object differs"

    def validate(self, ctx: Context) -> None:
        """Check the configuration alone (no I/O); a usage error when it cannot work."""
        ...

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """Rehearse :meth:`recreate` read-only: the evidence, and what it will create.

        What it will create is the backend's own rendering where it has one (Argo CD's
        manifests at the application's revision, Flux's source artifact), so that
        ``verify`` holds the live object to what was proven, not to a local render.

        Raises:
            Refused: the backend would create something other than git's object, or
                would not run now (a sync window, a suspended Kustomization).
            FracctlError: it cannot (wrong token, missing permission, missing object).
        """
        ...

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Have the object created; returns a one-line account of what was said."""
        ...


@dataclass(frozen=True)
class Proof:
    """What a rehearsal showed: the evidence, and the object the backend will create."""

    evidence: list[str]
    creates: Obj


class BackendCheckFailed(FracctlError):
    """A backend's read-only proof failed; nothing was changed. Keeps the cause's exit code."""

    def __init__(self, backend: str, cause: FracctlError, *, what: str = "") -> None:
        what = what or f"the {backend} backend cannot recreate the object"
        super().__init__(
            f"{what}, so nothing was deleted or changed: {cause.message}", hint=cause.hint
        )
        self.exit_code = cause.exit_code
        self.cause = cause


def clean_desired(desired: Obj) -> Obj:
    """The desired object without server-set fields, ready to create or apply."""
    body = {k: v for k, v in desired.items() if k != "status"}
    meta = dict(body.get("metadata") or {})
    for key in (
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "managedFields",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ):
        meta.pop(key, None)
    body["metadata"] = meta
    return body


def dry_run_create(ctx: Context, obj: Obj) -> None:
    """The API server would admit ``obj`` as the target (a dry-run create).

    Authorisation, admission and validation all run before the existence check, so
    ``AlreadyExists`` (the live object is still there) means it passed them.
    """
    try:
        ctx.kube.create(ctx.config.target.ref, clean_desired(obj), dry_run=True)
    except Conflict as e:
        if e.status.reason != "AlreadyExists":
            raise


def require(ctx: Context, verb: str, *, ref: Any, name: str, namespace: str | None = None) -> str:
    """Raise unless the Kubernetes identity may ``verb`` the object; returns the evidence."""
    allowed, reason = ctx.kube.can_i(verb, ref, name, namespace)
    where = f"{namespace}/{name}" if namespace else name
    if not allowed:
        raise ExternalError(
            f"the Kubernetes identity may not {verb} {ref.plural}.{ref.group or 'core'} "
            f"{where}" + (f" ({reason})" if reason else ""),
            hint=f"grant the RBAC verb {verb!r} on {ref.plural} to the identity of the "
            "kubeconfig, or run as one that has it",
        )
    return f"may {verb} {ref.plural} {where}"


def check_delete(ctx: Context, live: Obj | None = None) -> list[str]:
    """Prove the delete that follows will pass and that the object will then go.

    RBAC for read, watch and delete; a server-side dry-run delete of exactly this
    incarnation (uid precondition), which runs authorization and every admission policy
    and webhook; every finalizer on the object is one something releases (only the
    operator's is known: any other refuses, named); and the operator runs and leads
    now, whether or not its finalizer is still there: it alone clears the readiness
    condition from the nodes the config selected.
    """
    from fracctl.core.rehearsal import unknown_finalizers

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
    evidence.append(_dry_run_delete(ctx, str(meta.get("uid") or "")))
    held = t.finalizer in (meta.get("finalizers") or [])
    evidence.append(
        f"finalizer {t.finalizer} is released by the gpu-fractioning operator"
        if held
        else "no finalizer holds the object; the operator still clears the node conditions"
    )
    evidence.extend(check_operator(ctx, held=held))
    return evidence


def _dry_run_delete(ctx: Context, uid: str) -> str:
    """A dry-run delete of this incarnation; the guard policy's refusal is the expected one.

    Before the lock is armed, fracctl's own guard policy refuses every delete, this
    run's included: that refusal proves the policy is installed and bound. The run arms
    the lock after its guards and rehearses the delete again then (``recreate._arm``).
    """
    from fracctl.core.guard_policy import policy_name, refused_by_guard

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
    from fracctl.core.operator import deployment_available, lease_renewed
    from fracctl.core.resources import DEPLOYMENTS, LEASES

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


BACKENDS = NAMES  # every backend's name, in the registry's order


def get(name: str) -> Backend:
    """The backend called ``name`` (its module imported now); a usage error otherwise."""
    found = entry(name)
    if found is None:
        raise UsageError(f"unknown backend {name!r} (use {choices()})")
    factory: Callable[[], Backend] = load(found.implementation)
    return factory()


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
    from fracctl.flows.rehearse import check_owners, check_wait

    evidence: list[str] = []
    try:
        if deletes:
            evidence = check_delete(ctx, live)
            evidence += check_owners(ctx, backend.name, live)
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
        waits = check_wait(ctx, live, proof.creates)
    except FracctlError as e:
        what = "the wait that follows the recreate could not end"
        raise BackendCheckFailed(backend.name, e, what=what) from e
    return Proof(evidence + proof.evidence + waits, proof.creates)
