"""The ``flux`` backend when a Flux HelmRelease installs the operator's chart.

The gpu-fractioning chart creates the ``default`` config as a ``post-install,post-upgrade``
hook with no delete policy (``operator/charts/templates/default-cr.yaml``), so every upgrade
helm-controller runs deletes it (Helm's ``before-hook-creation``), waits, and creates it
again: every daemon restarts. helm-controller runs hooks unless ``spec.upgrade.disableHooks``
(fluxcd/helm-controller ``internal/action/upgrade.go``). With the guard policy installed its
hook's delete is refused, the upgrade fails (``Ready=False``, ``UpgradeFailed``) and nothing
changed; this backend runs that very upgrade behind everything ``recreate`` proves and
guards, as the ``helm`` backend runs ``helm upgrade``:

* git's object is helm-controller's own rendering: the hook in the release revision its
  upgrade wrote (``sh.helm.release.v1.<release>.v<N>``), post-renderers applied, held to
  git's selector; a HelmRelease that has not tried git's chart yet is refused until it has;
* the HelmRelease exists, is not suspended, applies here (no ``spec.kubeConfig``), runs
  hooks, has no ``uninstall`` remediation that could act mid-run, and its chart is Ready;
* the identity helm-controller deletes as (``spec.serviceAccountName`` impersonated,
  else its own service account, ``flux.helm_service_account``) may delete and create the
  config, and the guard policy, if installed, is fracctl's current one;
* the lock Lease is armed for that identity too (:data:`~fracctl.core.guard_policy.DELEGATE`),
  then the HelmRelease is asked to upgrade now (``reconcile.fluxcd.io/requestedAt``,
  ``resetAt`` and ``forceAt``, one token, as ``flux reconcile helmrelease --reset --force``
  writes them), and must come back ``Ready`` with a newer revision ``deployed``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fracctl.adapters.flux import FORCE_AT, REQUESTED_AT, RESET_AT
from fracctl.core import helm_release
from fracctl.core.nodes import condition, selector_of
from fracctl.core.recreate_plan import ReleaseState
from fracctl.core.resources import HELMCHARTS, HELMRELEASES
from fracctl.core.text import clip
from fracctl.errors import ExternalError, FracctlError, Refused, TimedOut
from fracctl.flows.backends import (
    BackendBase,
    BackendCheckFailed,
    Obj,
    Proof,
    clean_desired,
    dry_run_create,
)
from fracctl.flows.backends.access import require
from fracctl.flows.backends.helm import read_release, release_hook, renders_chart
from fracctl.flows.backends.helm_journal import ReleaseId
from fracctl.flows.context import Context

POLL = 0.5


@dataclass(frozen=True)
class HelmReleaseRef:
    """One HelmRelease: its namespace and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"HelmRelease {self.namespace}/{self.name}"

    def get(self, ctx: Context) -> Obj:
        """The HelmRelease; refused when there is none."""
        found = ctx.kube.get_or_none(HELMRELEASES, self.name, self.namespace)
        if found is None:
            raise Refused(
                f"there is no Flux {self}; nothing changed",
                hint="set flux.namespace and flux.helmrelease to the HelmRelease that "
                "installs the chart",
            )
        return found


def release_id(hr: Obj) -> ReleaseId:
    """The Helm release a HelmRelease manages, where helm-controller stores it.

    ``spec.releaseName``, else ``[<targetNamespace>-]<name>``; stored in
    ``status.storageNamespace`` (else ``spec.storageNamespace``, else its own namespace):
    helm-controller v1.6.4 ``api/v2/helmrelease_types.go`` ``GetReleaseName``,
    ``GetStorageNamespace``.
    """
    spec, status = hr.get("spec") or {}, hr.get("status") or {}
    meta = hr["metadata"]
    target = spec.get("targetNamespace")
    name = spec.get("releaseName") or (f"{target}-{meta['name']}" if target else meta["name"])
    where = status.get("storageNamespace") or spec.get("storageNamespace") or meta["namespace"]
    return ReleaseId(str(name), str(where))


def settled(ctx: Context, rid: ReleaseId, owner: HelmReleaseRef) -> helm_release.Release:
    """The release's newest revision once no upgrade runs on it (up to ``timeouts.sync``).

    Raises:
        Refused: no release yet, or helm-controller still at work on it.
    """
    deadline = ctx.clock.monotonic() + ctx.config.timeouts.sync
    while True:
        release = read_release(ctx, rid)
        if release is None:
            raise Refused(f"{owner} has no release {rid} yet; nothing changed")
        if not release.pending:
            return release
        if ctx.clock.monotonic() >= deadline:
            raise Refused(
                f"release {rid} revision {release.version} is still {release.status} after "
                f"{ctx.config.timeouts.sync:.0f}s: helm-controller is at work on it; "
                "nothing changed",
                hint="rerun once the HelmRelease settled",
            )
        ctx.clock.sleep(POLL)


def remediation(spec: Obj) -> str:
    """What the HelmRelease's upgrade remediation would do after a failure."""
    r = (spec.get("upgrade") or {}).get("remediation") or {}
    retries = int(r.get("retries") or 0)
    if not retries:
        return "none: upgrade.remediation.retries is 0"
    return f"{r.get('strategy') or 'rollback'} after each of {retries} failed retries"


def request_upgrade(ctx: Context, owner: HelmReleaseRef, *, force: bool) -> str:
    """Ask helm-controller to reconcile now with its failure counters reset (and forced).

    The annotations ``flux reconcile helmrelease --reset [--force]`` writes: one token in
    ``requestedAt``, ``resetAt`` and, forced, ``forceAt`` (fluxcd/pkg ``apis/meta``), read
    by helm-controller v1.6.4 ``internal/action/reset.go`` (``ShouldHandleResetRequest``)
    and ``internal/reconcile/atomic_release.go`` (``ShouldHandleForceRequest``).
    """
    from fracctl.adapters.flux import request_token

    token = request_token()
    said = {REQUESTED_AT: token, RESET_AT: token, **({FORCE_AT: token} if force else {})}
    ctx.kube.patch(HELMRELEASES, owner.name, {"metadata": {"annotations": said}},
                   namespace=owner.namespace)  # fmt: skip
    return token


def wait_deployed(
    ctx: Context, owner: HelmReleaseRef, token: str, *, after: int | None = None
) -> Obj:
    """Wait until the request ``token`` was handled and the release is deployed.

    ``after``: the revision the request must go past (a forced upgrade writes a new one);
    a newer revision that failed then fails the wait at once. None: any deployed revision
    (a resumed HelmRelease with nothing left to change upgrades no further).

    Returns the HelmRelease's newest history entry.

    Raises:
        ExternalError: helm-controller handled the request and its upgrade failed.
        TimedOut: not Ready after ``timeouts.sync``.
    """
    deadline = ctx.clock.monotonic() + ctx.config.timeouts.sync
    while True:
        hr = owner.get(ctx)
        st = hr.get("status") or {}
        ready = condition(hr, "Ready") or {}
        history = (st.get("history") or [{}])[0]
        said = f"{ready.get('reason')}: {clip(str(ready.get('message') or ''))}"
        newer = after is None or int(history.get("version") or 0) > after
        if st.get("lastHandledReconcileAt") == token and newer:
            if ready.get("status") == "True" and history.get("status") == helm_release.DEPLOYED:
                return dict(history)
            failed = history.get("status") == helm_release.FAILED and after is not None
            if failed and ready.get("status") == "False":
                raise ExternalError(
                    f"Flux {owner} tried the upgrade and it failed (revision "
                    f"{history.get('version')}): {said}",
                    hint=f"see flux get helmrelease {owner.name} -n {owner.namespace}; fix "
                    "the cause, then rerun",
                )
        if ctx.clock.monotonic() >= deadline:
            raise TimedOut(
                f"Flux {owner} was asked to upgrade, but is not Ready with a new revision "
                f"after {ctx.config.timeouts.sync:.0f}s: {said}",
                hint=f"see flux get helmrelease {owner.name} -n {owner.namespace}; rerun "
                "to wait again",
            )
        ctx.clock.sleep(POLL)


def deletes_as(ctx: Context, hr: Obj) -> tuple[str, tuple[str, ...]]:
    """The identity helm-controller runs a HelmRelease's upgrade as, and its groups.

    ``spec.serviceAccountName`` (impersonated), else its own service account
    (``flux.helm_service_account``), as kustomize-controller's rule has it.
    """
    from fracctl.flows.backends.flux_proofs import service_account_user

    return service_account_user(ctx, hr, default=ctx.config.flux.helm_service_account)


@dataclass
class HookFacts:
    """The HelmRelease and its release, read once per run (the plan and proofs share it)."""

    hr: Obj
    release: helm_release.Release

    @property
    def state(self) -> ReleaseState:
        """What the plan reads of it: the release needs the upgrade unless it is settled."""
        ready = (condition(self.hr, "Ready") or {}).get("status")
        differs = self.release.status != helm_release.DEPLOYED or ready != "True"
        return ReleaseState(differs=differs, interrupted=False)


class HelmReleaseHookBackend(BackendBase):
    """helm-controller's upgrade of the operator's chart: its hook deletes and recreates."""

    name = "flux"
    claim = "Flux reported the HelmRelease Ready but the live object differs"

    def __init__(self) -> None:
        self.facts: HookFacts | None = None

    def owner(self, ctx: Context) -> HelmReleaseRef:
        """The configured HelmRelease."""
        return HelmReleaseRef(ctx.config.flux.namespace, ctx.config.flux.helmrelease)

    def validate(self, ctx: Context) -> None:
        """The chart is rendered with helm; a usage error otherwise."""
        renders_chart(ctx, "flux.helmrelease upgrades")

    def upgrade_facts(self, ctx: Context, desired: Obj) -> HookFacts:
        """The HelmRelease and its settled release, read once per run."""
        if self.facts is None:
            owner = self.owner(ctx)
            try:
                hr = owner.get(ctx)
                self.facts = HookFacts(hr, settled(ctx, release_id(hr), owner))
            except FracctlError as e:  # read before the proofs: say so the same way
                raise BackendCheckFailed(self.name, e) from e
        return self.facts

    def release_state(self, ctx: Context, desired: Obj) -> ReleaseState:
        """helm-controller's release, as the plan reads it."""
        return self.upgrade_facts(ctx, desired).state

    def rendering(self, ctx: Context, objects: list[Obj]) -> list[Obj]:
        """Git's objects, the target as helm-controller renders it (:meth:`as_rendered`)."""
        t = ctx.config.target
        mine = [o for o in objects if t.matches(o)]
        if len(mine) != 1:
            return objects
        theirs = self.as_rendered(ctx, mine[0])
        return [theirs if o is mine[0] else o for o in objects]

    def as_rendered(self, ctx: Context, desired: Obj) -> Obj:
        """Git's target as helm-controller's newest release revision renders it.

        Only where that rendering holds git's selector (helm-controller tried git's chart:
        its rendering differs from ``helm template`` in the chart version source-controller
        writes, ``<version>+<revision>``, and in Flux's labels); else git's own, unchanged.
        """
        t = ctx.config.target
        try:
            release = self.upgrade_facts(ctx, desired).release
            theirs, _hook = release_hook(ctx, release, "helm-controller's rendering")
        except FracctlError:
            return desired  # the proofs say why, in their turn
        if selector_of(theirs, t.selector_field) != selector_of(desired, t.selector_field):
            return desired
        return theirs

    def deletes_as(self, ctx: Context) -> str:
        """The identity the lock is armed for beside this one: helm-controller's."""
        return deletes_as(ctx, self.upgrade_facts(ctx, {}).hr)[0]

    def carries(self, ctx: Context, desired: Obj) -> tuple[list[str], Obj]:
        """helm-controller would run the upgrade now, and its hook creates git's object.

        The proofs that do not depend on who runs fracctl (drift shows them too): the
        HelmRelease, helm-controller's identity and the guard policy. Returns the evidence
        and the object the hook creates.
        """
        t = ctx.config.target
        owner = self.owner(ctx)
        try:  # the HelmRelease's own settings first: its release may follow from them
            now = owner.get(ctx)
        except FracctlError as e:
            raise BackendCheckFailed(self.name, e) from e
        evidence = [self._runs(owner, now.get("spec") or {}, now)]
        facts = self.upgrade_facts(ctx, desired)
        hr, release = facts.hr, facts.release
        rid = release_id(hr)
        creates, hook = release_hook(
            ctx, release, f"revision {release.version} of release {rid}, helm-controller's "
            "newest rendering,"
        )  # fmt: skip
        want = selector_of(desired, t.selector_field)
        got = selector_of(creates, t.selector_field)
        if got != want:
            raise Refused(
                f"revision {release.version} of release {rid}, helm-controller's newest "
                f"rendering, creates {t.kind}/{t.name} with nodeSelector {got}, not git's "
                f"{want}: it has not tried git's chart yet; nothing changed",
                hint=f"let it try (flux reconcile helmrelease {owner.name} -n "
                f"{owner.namespace} --with-source): the guard policy refuses its hook's "
                "delete, so nothing changes; then rerun",
            )
        evidence += [
            f"release {rid} is at revision {release.version} ({release.status}, chart "
            f"{release.chart})",
            f"its hook {hook.path} ({','.join(hook.events)}, recreated by Helm's "
            f"before-hook-creation) creates {t.kind}/{t.name} with git's nodeSelector",
            _chart_ready(ctx, hr),
            *self._identity(ctx, hr),
            _policy_current(ctx),
        ]
        return evidence, creates

    def left(self, ctx: Context, desired: Obj) -> tuple[str, bool]:
        """What of the release helm-controller still has to do, and whether it stopped.

        "" when it is settled; stopped: an upgrade began and its newest revision is not
        deployed.
        """
        facts = self.upgrade_facts(ctx, desired)
        if not facts.state.differs:
            return "", False
        ready = condition(facts.hr, "Ready") or {}
        r = facts.release
        return (
            f"Flux {self.owner(ctx)} is Ready={ready.get('status')} ({ready.get('reason')}), "
            f"release {release_id(facts.hr)} {r.status} at revision {r.version}"
        ), r.status != helm_release.DEPLOYED

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """helm-controller would run the upgrade now, and its hook creates git's object."""
        owner = self.owner(ctx)
        evidence, creates = self.carries(ctx, desired)
        evidence.append(
            require(ctx, "patch", ref=HELMRELEASES, name=owner.name, namespace=owner.namespace)
        )
        dry_run_create(ctx, creates)
        evidence.append("a dry-run create of the hook's object passes admission and validation")
        return Proof(evidence, clean_desired(creates))

    def _runs(self, owner: HelmReleaseRef, spec: Obj, hr: Obj) -> str:
        """It would upgrade here now, run the hook, and not uninstall mid-run."""
        hint = f"see flux get helmrelease {owner.name} -n {owner.namespace}"
        if spec.get("suspend"):
            raise Refused(
                f"Flux {owner} is suspended: it would not upgrade",
                hint=f"resume it first: flux resume helmrelease {owner.name} -n {owner.namespace}",
            )
        if spec.get("kubeConfig"):
            raise Refused(
                f"Flux {owner} installs into another cluster (spec.kubeConfig): its upgrade "
                "would not recreate the object here",
                hint="point fracctl at the cluster the HelmRelease installs into",
            )
        if (spec.get("upgrade") or {}).get("disableHooks"):
            raise Refused(
                f"Flux {owner} upgrades with spec.upgrade.disableHooks: the chart's hook "
                "would not run, so the object would not be recreated",
                hint=f"{hint}; remove disableHooks in git, or use recreate.backend apply",
            )
        fix = (spec.get("upgrade") or {}).get("remediation") or {}
        if int(fix.get("retries") or 0) and fix.get("strategy") == "uninstall":
            raise Refused(
                f"Flux {owner} uninstalls the release after a failed upgrade "
                "(upgrade.remediation.strategy: uninstall): a failure mid-run would remove "
                "the operator",
                hint=f"{hint}; use the rollback strategy (or retries: 0) in git, then rerun",
            )
        ready = condition(hr, "Ready") or {}
        return (
            f"Flux {owner} exists, is not suspended, runs hooks, and is "
            f"Ready={ready.get('status')} ({ready.get('reason')}); remediation: "
            f"{remediation(spec)}"
        )

    def _identity(self, ctx: Context, hr: Obj) -> list[str]:
        """helm-controller's identity may delete and create the target."""
        t = ctx.config.target
        user, groups = deletes_as(ctx, hr)
        what = f"{t.ref.plural}.{t.group}" if t.group else t.ref.plural
        for verb in ("delete", "create"):
            allowed, reason = ctx.kube.can_they(user, verb, t.ref, t.name, groups=groups)
            if not allowed:
                raise Refused(
                    f"helm-controller upgrades as {user}, which may not {verb} {what}"
                    + (f" ({reason})" if reason else "")
                    + ": its hook would fail",
                    hint="grant it, or set the HelmRelease's serviceAccountName or "
                    "flux.helm_service_account to the identity it really uses",
                )
        return [
            f"helm-controller upgrades as {user}, which may delete and create {what}; "
            "the lock is armed for it too"
        ]

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Ask for the upgrade now (reset, forced) and wait until it is deployed."""
        owner = self.owner(ctx)
        facts = self.upgrade_facts(ctx, desired)
        token = request_upgrade(ctx, owner, force=True)
        ctx.info(f"Flux: upgrade of {owner} requested ({token}), failures reset, forced")
        done = wait_deployed(ctx, owner, token, after=facts.release.version)
        self.facts = None
        return (
            f"Flux {owner} is Ready: release revision {done.get('version')} deployed (chart "
            f"{done.get('chartName')} {done.get('chartVersion')}); its hook deleted and "
            "recreated the object"
        )


def _chart_ready(ctx: Context, hr: Obj) -> str:
    """The HelmChart helm-controller upgrades from is Ready with an artifact."""
    st = hr.get("status") or {}
    ns, _, name = str(st.get("helmChart") or "").partition("/")
    chart = ctx.kube.get_or_none(HELMCHARTS, name, ns) if name else None
    ready = condition(chart or {}, "Ready") or {}
    artifact = ((chart or {}).get("status") or {}).get("artifact") or {}
    if chart is None or ready.get("status") != "True" or not artifact.get("revision"):
        state = "does not exist" if chart is None else f"is Ready={ready.get('status')}"
        raise Refused(
            f"the HelmRelease's chart {st.get('helmChart') or '(none yet)'} {state}: "
            "helm-controller would have nothing to upgrade to",
            hint=f"see flux get sources chart -n {ns or ctx.config.flux.namespace}",
        )
    return f"its chart HelmChart {ns}/{name} is Ready at {artifact.get('revision')}"


def _policy_current(ctx: Context) -> str:
    """The guard policy, if installed, lets the armed delegate's delete through."""
    from fracctl.core.guard_policy import binding_problems, policy_name
    from fracctl.core.resources import BINDINGS, POLICIES

    t, r = ctx.config.target, ctx.config.recreate
    policy = ctx.kube.get_or_none(POLICIES, policy_name(t))
    if policy is None:
        return "no guard policy is installed: helm-controller's delete needs no arming"
    found = binding_problems(policy, ctx.kube.get_or_none(BINDINGS, policy_name(t)), t, r)
    if found:
        raise Refused(
            f"the guard policy is not fracctl's current one ({'; '.join(found)}): it may "
            "not let helm-controller's armed delete through",
            hint="apply the current one: fracctl policy apply; then rerun",
        )
    return "the guard policy is fracctl's current one: it lets the armed delegate delete"
