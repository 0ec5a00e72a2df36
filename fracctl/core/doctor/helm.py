"""The config as a chart's hook: whoever runs the chart deletes and recreates it.

The operator's own chart (kai-scheduler/kai-gpu-fractioning and kai-scheduler/
gpu-fractioning, ``operator/charts/templates/default-cr.yaml``, in all three API
generations) creates the config as a ``helm.sh/hook: post-install,post-upgrade`` with
no ``helm.sh/hook-delete-policy``. Helm then applies ``before-hook-creation`` (helm/helm
``pkg/action/hooks.go``): every ``helm upgrade`` of the release deletes the config,
waits for the delete (the operator's finalizer, then its DaemonSets by owner
reference: the MPS daemons restart under every fractional pod) and creates it again.
Argo CD maps those events to ``PostSync`` and assumes ``BeforeHookCreation`` (argo-cd
``docs/user-guide/helm.md``; gitops-engine ``pkg/sync/hook/delete_policy.go``): every
sync does the same. Flux's helm-controller runs hooks on every upgrade unless
``spec.upgrade.disableHooks`` (fluxcd/helm-controller ``docs/spec/v2/helmreleases.md``).

The release that owns the hook is read from Helm's own records (``sh.helm.release.v1.*``
Secrets, :mod:`fracctl.core.gitops.helm_release`), not guessed from a label: reading them needs
``list`` on Secrets in the release's namespace.
"""

from __future__ import annotations

from fracctl.core.doctor.helpers import without_target
from fracctl.core.doctor.model import DoctorSettings, Signature, Snapshot, check
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.gitops.helm_release import (
    FAILED,
    Release,
    argocd_app,
    argocd_made_hook,
    hook_use,
)

RUNBOOK = "runbooks/operator-upgrades.md"


def owners(snap: Snapshot, s: DoctorSettings) -> list[Release]:
    """The releases whose newest revision has a hook creating the target."""
    return [r for r in snap.helm_releases if r.hook_for(s.target.kind, s.target.name)]


def _stuck(r: Release) -> str:
    if r.pending:
        return (
            f"release {r.namespace}/{r.name} is stuck {r.status} at revision {r.version}: "
            "helm refuses every upgrade (another operation is in progress)"
        )
    if r.status == FAILED:
        return f"release {r.namespace}/{r.name} is failed at revision {r.version}" + (
            f" ({r.description})" if r.description else ""
        )
    return ""


def _stuck_fix(snap: Snapshot, s: DoctorSettings, r: Release) -> str:
    """The way on from a failed or pending revision: the configured guarded upgrade."""
    if s.helmrelease:
        return (
            f"the release is Flux HelmRelease {s.helmrelease}'s: run its upgrade guarded, "
            "fracctl recreate --backend flux --yes (helm-controller would undo a bare "
            "helm upgrade at its next reconcile)"
        )
    if s.guarded_release != (r.namespace, r.name):
        return f"recover {r.namespace}/{r.name} first ({RUNBOOK}, 'A release left failed')"
    finish = f"finish it: {snap.recreate_command} (recreate.backend: helm upgrades it guarded"
    if not r.pending:
        return f"{finish} from the failed revision)"
    return (
        f"{finish}; a pending revision that a stopped fracctl run on this machine left is "
        f"marked failed first, any other is refused: then recover it, {RUNBOOK}, "
        "'A release left failed')"
    )


def carried(snap: Snapshot, s: DoctorSettings) -> Release | None:
    """The release whose hook the config is, when fracctl runs its upgrade guarded.

    That is: ``recreate.backend: helm`` names it (``s.guarded_release``), it is the only
    release with the hook, nothing else (Argo CD) recreates the config, and its newest
    revision is neither failed nor pending (a stuck release is a finding of its own).
    """
    obj = snap.target
    if obj is None or s.guarded_release is None or hook_use(obj) is None:
        return None
    found = owners(snap, s)
    if len(found) != 1 or (found[0].namespace, found[0].name) != s.guarded_release:
        return None
    if _stuck(found[0]) or argocd_app(obj) or snap.release_left:
        return None
    return found[0]


def carried_note(snap: Snapshot, s: DoctorSettings) -> str:
    """What a pass says when the hook is the configured, guarded path."""
    r = carried(snap, s)
    if r is None:
        return ""
    return (
        f"carried: the config is release {r.namespace}/{r.name}'s hook (revision {r.version}, "
        f"{r.status}), and fracctl recreate (recreate.backend: helm) runs its upgrade guarded"
    )


def _guarded_way(s: DoctorSettings) -> str:
    """How to run the chart's upgrade without a bare delete.

    Per tool; or the HelmRelease's way alone where ``recreate.backend: flux`` names one
    (helm-controller owns the release).
    """
    if s.helmrelease:
        return (
            f"Flux: upgrade through fracctl recreate --backend flux (recreate.backend: flux, "
            f"flux.helmrelease {s.helmrelease}), or spec.install.disableHooks and "
            "spec.upgrade.disableHooks on the HelmRelease, the config from git. See "
            f"{RUNBOOK}"
        )
    return (
        "helm: upgrade only with fracctl recreate --backend helm --yes (recreate.backend: "
        "helm), never a bare helm upgrade; Argo CD: manage the config from git as a plain "
        "object and give the application an Argo CD hook (Argo CD then ignores the chart's "
        "hooks); Flux: upgrade through fracctl recreate (recreate.backend: flux, "
        "flux.helmrelease), or spec.install.disableHooks and spec.upgrade.disableHooks on "
        f"the HelmRelease, the config from git. See {RUNBOOK}"
    )


def _no_release(snap: Snapshot, s: DoctorSettings) -> tuple[str, str]:
    """Why no release names the hook (its records unreadable, or none), and the fix."""
    if snap.helm_unreadable:
        return (
            f"Helm's release records could not be read: {snap.helm_unreadable}",
            "grant the doctor role list on secrets in the release's namespace (fracctl "
            "rbac print --role doctor) and rerun fracctl doctor",
        )
    where = snap.helm_read or "no namespace"
    kind = f"{s.target.kind}/{s.target.name}"
    return (
        f"no sh.helm.release.v1.* record in {where} has a hook for {kind}: its release "
        "was uninstalled (hooks outlive helm uninstall) or lives elsewhere",
        "if no tool runs the chart any more, take the object over from git: remove "
        f"its hook annotations (kubectl annotate {s.target.plural}.{s.target.group} "
        f"{s.target.name} helm.sh/hook- helm.sh/hook-weight-); see {RUNBOOK}",
    )


@check(
    "config-hook",
    "the fractioning config is not a chart's hook (recreated by every upgrade or sync)",
    reads=("target", "helm_releases", "helm_read", "helm_unreadable", "release_left"),
    skip=without_target,
    note=carried_note,
)
def config_hook(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """The live config is Helm's or Argo CD's hook, not on fracctl's guarded path.

    A hook that ``recreate.backend: helm`` upgrades guarded (:func:`carried`) passes.
    """
    obj = snap.target
    use = hook_use(obj) if obj is not None else None
    if obj is None or use is None or carried(snap, s) is not None:
        return []
    kind = f"{s.target.kind}/{s.target.name}"
    evidence = [f"annotations: {use.annotations}"]
    recreators: list[str] = []
    fixes: list[str] = []
    if use.recreated_on:
        when = ", ".join(use.recreated_on)
    else:
        when = use.argocd_phase or ", ".join(use.events)
    for r in owners(snap, s):
        hook = r.hook_for(s.target.kind, s.target.name)
        assert hook is not None  # owners() keeps only those
        recreators.append(
            f"every `helm upgrade` of release {r.namespace}/{r.name} (chart {r.chart}, "
            f"template {hook.path}), by hand or by a Flux HelmRelease"
        )
        evidence.append(
            f"release {r.namespace}/{r.name} revision {r.version} ({r.status}) creates it "
            f"as a hook on {', '.join(hook.events)}"
        )
        if stuck := _stuck(r):
            evidence.append(stuck)
            fixes.append(_stuck_fix(snap, s, r))
    if snap.release_left:  # the object matches git; the release does not yet
        evidence.append(f"unfinished: {snap.release_left}")
        fixes.append(f"finish it: {snap.recreate_command}")
    app = argocd_app(obj)
    if app and (argocd_made_hook(obj) or use.argocd_phase or not recreators):
        recreators.append(f"every sync of Argo CD application {app} (a PostSync hook)")
        evidence.append(f"tracked by Argo CD application {app}")
    if recreators:
        if not any(f.startswith("finish it: ") for f in fixes):  # that way is the guarded one
            fixes.append(_guarded_way(s))
    else:
        recreators.append("no Helm release record found that names it")
        said, fix = _no_release(snap, s)
        evidence.append(said)
        fixes.append(fix)
    return [
        Signature(
            f"{kind} is a hook ({when}): {'; '.join(recreators)} deletes it and creates it "
            "again, which restarts the MPS daemons under every fractional pod even when "
            "nothing in it changed",
            "the operator's chart creates the config as a post-install,post-upgrade hook with "
            "no delete policy (before-hook-creation) and a hard-coded spec.nodeSelector",
            " ; ".join(fixes),
            (kind,),
            tuple(evidence),
        )
    ]
