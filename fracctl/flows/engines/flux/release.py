"""A HelmRelease's release, as the hook backend and the object creator both read and ask it.

Where helm-controller keeps the release (:func:`release_id`), when no upgrade runs on it,
how an upgrade is requested (the reconcile annotations ``flux reconcile helmrelease``
writes), and the wait until it is deployed.
"""

from __future__ import annotations

from dataclasses import dataclass

from fracctl.adapters.flux import FORCE_AT, REQUESTED_AT, RESET_AT
from fracctl.core.gitops import helm_release
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import HELMRELEASES
from fracctl.core.text import clip
from fracctl.errors import ExternalError, Refused, TimedOut
from fracctl.flows.context import Context
from fracctl.flows.engines import Obj
from fracctl.flows.engines.helm.journal import ReleaseId
from fracctl.flows.engines.helm.release import read_release

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
    from fracctl.flows.engines.flux.proofs import service_account_user

    return service_account_user(ctx, hr, default=ctx.config.flux.helm_service_account)
