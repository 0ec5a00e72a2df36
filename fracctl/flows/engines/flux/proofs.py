"""What kustomize-controller needs to recreate the object, proven before the delete.

Read from fluxcd/kustomize-controller v1.9.6 (``internal/controller/
kustomization_controller.go``, ``main.go``) and fluxcd/pkg ssa v0.76.2
(``manager_apply.go``), the versions ``make flux`` builds:

* a reconcile request is handled only by a running controller that leads: each
  controller with ``--enable-leader-election`` holds a Lease named
  ``<controller>-leader-election`` (a ``--watch-label-selector`` adds a hash of it) and
  renews it while it leads (:func:`controllers_lead`). Where no Lease is configured
  (leader election off), the controller proves itself by handling a reconcile request
  now (:func:`handles_now`): it records the request in
  ``status.lastHandledReconcileAt``, and its fresh verdict is then judged;
* Flux applies as ``spec.serviceAccountName`` (impersonated) or else as the
  controller's own identity, which must be allowed to create the object
  (:func:`identity_may_create`);
* an object carrying ``kustomize.toolkit.fluxcd.io/reconcile: disabled`` or
  ``kustomize.toolkit.fluxcd.io/ssa: Ignore`` is skipped (the apply's
  ExclusionSelector), and ``spec.kubeConfig`` applies to another cluster
  (:func:`not_skipped`);
* a dependency holds the apply back unless its generation is observed, it is Ready,
  and, when it reads the same source, it applied the source's revision; a
  ``readyExpr`` is CEL that fracctl does not evaluate (:func:`dependency_ready`);
* the Kustomization's own last verdict fails only on the target's immutable field
  (:func:`verdict_only_immutable`).
"""

from __future__ import annotations

from typing import Any

from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import LEASES
from fracctl.core.recreate.operator import lease_renewed
from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.core.text import clip
from fracctl.errors import Refused
from fracctl.flows.context import Context

Obj = dict[str, Any]
GROUP = "kustomize.toolkit.fluxcd.io"
#: The apply's ExclusionSelector (kustomization_controller.go): objects Flux skips.
EXCLUDED = {f"{GROUP}/reconcile": "disabled", f"{GROUP}/ssa": "Ignore"}


def controllers_lead(ctx: Context) -> list[str]:
    """Each configured Flux controller Lease was renewed within its duration."""
    f = ctx.config.flux
    out: list[str] = []
    for name in f.leases:
        lease = ctx.kube.get_or_none(LEASES, name, f.controller_namespace)
        where = f"{f.controller_namespace}/{name}"
        verdict = lease_renewed(lease, where, now=ctx.clock.now(), who="Flux's controller")
        if not verdict.ok:
            raise Refused(
                f"{verdict.text}: no Flux controller leads to handle the reconcile request, "
                "so the object would stay deleted",
                hint="start the controller (kubectl -n "
                f"{f.controller_namespace} get deploy,pods,lease); flux.leases in fracctl.yaml "
                "names the Leases (a --watch-label-selector adds a hash to the name)",
            )
        out.append(verdict.text)
    return out


def service_account_user(
    ctx: Context, ks: Obj, *, default: str = ""
) -> tuple[str, tuple[str, ...]]:
    """The identity Flux applies as, and its groups.

    ``spec.serviceAccountName`` of ``ks`` (a Kustomization or a HelmRelease) in its
    namespace, else the controller's own service account in ``flux.controller_namespace``:
    ``default``, else ``flux.service_account`` (kustomize-controller's).
    """
    f = ctx.config.flux
    spec = ks.get("spec") or {}
    ns = str((ks.get("metadata") or {}).get("namespace") or f.namespace)
    sa = str(spec.get("serviceAccountName") or "")
    if not sa:
        ns, sa = f.controller_namespace, default or f.service_account
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated")
    return f"system:serviceaccount:{ns}:{sa}", groups


def identity_may_create(ctx: Context, ks: Obj, t: SyncTarget) -> str:
    """The identity Flux applies as may create (and patch) the target."""
    user, groups = service_account_user(ctx, ks)
    what = f"{t.ref.plural}.{t.group}" if t.group else t.ref.plural
    for verb in ("create", "patch"):
        allowed, reason = ctx.kube.can_they(
            user, verb, t.ref, t.name, namespace=t.namespace or None, groups=groups
        )
        if not allowed:
            raise Refused(
                f"Flux applies as {user}, which may not {verb} {what}"
                + (f" ({reason})" if reason else "")
                + ": the object would stay deleted",
                hint=f"grant it (a ClusterRole with create and patch on {what}), or set the "
                "Kustomization's serviceAccountName, or flux.service_account in fracctl.yaml "
                "to the identity it really uses",
            )
    return f"Flux applies as {user}, which may create and patch {what}"


def not_skipped(ks: Obj, creates: Obj) -> str:
    """Flux would apply the object here: no exclusion marker, no remote kubeconfig."""
    where = (
        f"{(ks.get('metadata') or {}).get('namespace')}/{(ks.get('metadata') or {}).get('name')}"
    )
    if (ks.get("spec") or {}).get("kubeConfig"):
        raise Refused(
            f"Flux Kustomization {where} applies to another cluster (spec.kubeConfig): "
            "it would not recreate the object here",
            hint="point fracctl at the cluster the Kustomization applies to",
        )
    meta = creates.get("metadata") or {}
    marks = {**(meta.get("annotations") or {}), **(meta.get("labels") or {})}
    hit = [f"{k}: {v}" for k, v in EXCLUDED.items() if marks.get(k) == v]
    if hit:
        raise Refused(
            f"the object Flux would apply carries {', '.join(hit)}: Flux skips it, so it "
            "would stay deleted",
            hint="remove the marker in git, then run again",
        )
    return "the object carries no marker that makes Flux skip it"


def dependency_ready(ctx: Context, ks: Obj, dep_ref: Obj, dep: Obj | None, revision: str) -> str:
    """Flux's dependency rule (``checkDependencies``): else it holds the apply back."""
    meta = ks.get("metadata") or {}
    ns = str(dep_ref.get("namespace") or meta.get("namespace") or "")
    name = f"{ns}/{dep_ref.get('name')}"
    where = f"Flux Kustomization {meta.get('namespace')}/{meta.get('name')}"

    def refuse(state: str) -> Refused:
        return Refused(
            f"{where} depends on {name}, which {state}: Flux would not apply until it is",
            hint=f"see `flux get kustomizations -n {ns}`; rerun once it is Ready",
        )

    if dep_ref.get("readyExpr"):
        raise Refused(
            f"{where} judges its dependency {name} by a readyExpr (CEL), which fracctl does "
            "not evaluate: it cannot prove Flux will apply",
            hint="drop the readyExpr for this Kustomization, or use --backend apply",
        )
    if dep is None:
        raise refuse("does not exist")
    status = dep.get("status") or {}
    generation = (dep.get("metadata") or {}).get("generation")
    if not status.get("conditions") or generation != status.get("observedGeneration"):
        raise refuse(f"has not observed its generation {generation}")
    ready = condition(dep, "Ready") or {}
    if ready.get("status") != "True":
        raise refuse(
            f"is Ready={ready.get('status') or 'Unknown'} ({ready.get('reason') or 'no reason'})"
        )
    mine, theirs = (
        (ks.get("spec") or {}).get("sourceRef") or {},
        (dep.get("spec") or {}).get("sourceRef") or {},
    )
    same = (
        mine.get("name") == theirs.get("name")
        and mine.get("kind") == theirs.get("kind")
        and (mine.get("namespace") or meta.get("namespace"))
        == (theirs.get("namespace") or (dep.get("metadata") or {}).get("namespace"))
    )
    applied = str(status.get("lastAppliedRevision") or "")
    if same and applied != revision:
        raise refuse(f"applied {applied or 'nothing'} of the same source, not {revision}")
    return f"its dependency {name} is Ready" + (f" at {revision}" if same else "")


def verdict_only_immutable(ctx: Context, ks: Obj, t: SyncTarget) -> str:
    """The Kustomization's last verdict fails only on the target's immutable field.

    Ready=True: nothing failed. Ready=False from an apply: every failing object named in
    its message must be the target, refused for its immutable selector; anything else
    would fail the reconcile after the delete too.
    """
    ready = condition(ks, "Ready") or {}
    if ready.get("status") != "False":
        return f"the Kustomization's last verdict is Ready={ready.get('status') or 'Unknown'}"
    message = str(ready.get("message") or "")
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    target = t.label
    others = [ln for ln in lines if not t.refuses(ln) and "/" in ln.split(" ")[0]]
    if ready.get("reason") != "ReconciliationFailed" or others or not lines:
        clipped = clip(message)
        raise Refused(
            f"Flux Kustomization {(ks.get('metadata') or {}).get('name')} fails for more than "
            f"the target's immutable field: Ready=False ({ready.get('reason')}: {clipped}); it "
            "would fail the same way after the delete",
            hint="fix what else fails (flux get kustomizations; kubectl describe), then rerun",
        )
    return f"its last verdict fails only on {target}'s immutable field"


def handles_now(ctx: Context, flux: Any, ks: Obj) -> tuple[list[str], Obj]:
    """The controller handles a reconcile request of this Kustomization now.

    Used when ``flux.leases`` is empty. The request makes Flux apply git's object over
    the live one, which fails on the immutable selector and changes nothing else that
    Flux would not apply on its own interval; its fresh verdict is returned for
    :func:`verdict_only_immutable`. A Kustomization with ``spec.force`` would delete
    the object itself, so it is not asked.

    Raises:
        Refused: ``spec.force``, or the request was not handled in time.
    """
    from fracctl.adapters.flux import FluxReconcileFailed
    from fracctl.errors import TimedOut

    where = f"Flux Kustomization {flux.namespace}/{flux.name}"
    if (ks.get("spec") or {}).get("force"):
        raise Refused(
            f"{where} has spec.force, and flux.leases names no controller Lease: fracctl "
            "cannot prove a controller handles it without asking it to reconcile, which "
            "would make Flux delete the object itself",
            hint="name the controllers' leader-election Leases in flux.leases",
        )
    timeout = min(ctx.config.timeouts.sync, 60.0)
    token = flux.request_reconcile()
    try:
        flux.wait_ready(token, timeout=timeout, clock=ctx.clock)
    except FluxReconcileFailed:
        pass  # a verdict: judged next
    except TimedOut as e:
        raise Refused(
            f"{where} did not handle a reconcile request within {timeout:.0f}s "
            f"({e.message}): no kustomize-controller runs for it now, so the object would "
            "stay deleted",
            hint="start kustomize-controller (or check its --watch-label-selector), then rerun",
        ) from None
    return [f"kustomize-controller handled a reconcile request of {where} now"], flux.get()


def guarded_roll(ctx: Context, desired: Obj) -> list[str]:
    """A change that rolls the daemons is Flux's to apply only once fracctl armed it.

    Flux applies git's object on its own interval (and when asked to reconcile, as a
    proof without ``flux.leases`` does), so an in-place change that restarts the MPS
    daemons goes through unguarded unless the guard policy refuses it: it must be
    installed and current. Nothing to prove when git's object rolls nothing.
    """
    from fracctl.core.drift import spec_changes
    from fracctl.core.fractions.daemons import restarts
    from fracctl.core.kube.resources import BINDINGS, POLICIES
    from fracctl.core.recreate.guard_policy import binding_problems, policy_name

    t, r = ctx.config.target, ctx.config.recreate
    live = ctx.kube.get_or_none(t.ref, t.name)
    if live is None:
        return []
    found = restarts((f.path, f.live, f.desired) for f in spec_changes(live, desired))
    if not found:
        return []
    policy = ctx.kube.get_or_none(POLICIES, policy_name(t))
    problems = (
        ["it is not installed"]
        if policy is None
        else binding_problems(policy, ctx.kube.get_or_none(BINDINGS, policy_name(t)), t, r)
    )
    if problems:
        raise Refused(
            f"git changes {', '.join(f.path for f in found[:3])} of {t.kind}/{t.name}, which "
            "restarts the MPS daemons, and Flux applies it on its own unless fracctl's guard "
            f"policy refuses it ({'; '.join(problems)})",
            hint="install it first (fracctl policy apply), or suspend the Kustomization, "
            "then rerun",
        )
    return [
        "the guard policy refuses Flux's own apply of this daemon-restarting change until "
        "fracctl arms it"
    ]
