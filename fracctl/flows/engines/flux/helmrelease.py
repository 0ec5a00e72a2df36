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
* the lock Lease is armed for that identity too
  (:data:`~fracctl.core.recreate.guard_policy.DELEGATE`),
  then the HelmRelease is asked to upgrade now (``reconcile.fluxcd.io/requestedAt``,
  ``resetAt`` and ``forceAt``, one token, as ``flux reconcile helmrelease --reset --force``
  writes them), and must come back ``Ready`` with a newer revision ``deployed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fracctl.core.gitops import helm_release
from fracctl.core.kube.nodes import condition, selector_of
from fracctl.core.kube.resources import HELMCHARTS, HELMRELEASES
from fracctl.core.recreate.plan import ReleaseState
from fracctl.errors import FracctlError, Refused
from fracctl.flows.context import Context
from fracctl.flows.engines import (
    BackendBase,
    BackendCheckFailed,
    HookCarrier,
    Obj,
    Proof,
    clean_desired,
    dry_run_create,
)
from fracctl.flows.engines.access import require
from fracctl.flows.engines.flux.release import (
    HelmReleaseRef,
    deletes_as,
    release_id,
    remediation,
    request_upgrade,
    settled,
    wait_deployed,
)
from fracctl.flows.engines.helm.release import release_hook, renders_chart


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

    def hook(self) -> HookCarrier:
        """This backend: it runs the chart's upgrade, whose hook recreates the config."""
        return self

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

    def carried_by(self, ctx: Context, desired: Obj) -> tuple[str, str, bool]:
        """helm-controller's upgrade, run guarded; what is left is its own to say."""
        self.left(ctx, desired)  # read as the helm backend's is: a failed read is said
        f = ctx.config.flux
        return (
            f"fracctl recreate (recreate.backend: flux, flux.helmrelease {f.namespace}/"
            f"{f.helmrelease}) runs helm-controller's upgrade guarded",
            "",
            False,
        )

    def doctor_settings(self, ctx: Context) -> dict[str, Any]:
        """The HelmRelease whose upgrade fracctl guards: ``helmrelease``."""
        owner = self.owner(ctx)
        return {"helmrelease": f"{owner.namespace}/{owner.name}"}

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
    from fracctl.core.kube.resources import BINDINGS, POLICIES
    from fracctl.core.recreate.guard_policy import binding_problems, policy_name

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
