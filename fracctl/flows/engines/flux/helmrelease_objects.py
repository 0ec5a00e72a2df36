"""``recreate KIND/NAME --backend flux`` for an object of a Flux HelmRelease.

helm-controller upgrades a release by server-side apply as field manager
``helm-controller``; on an immutable field the upgrade fails, the HelmRelease goes
``Ready=False`` with reason ``UpgradeFailed`` ("Helm upgrade failed for release …:
server-side apply failed for object …"), then ``Stalled``/``RetriesExceeded`` once its
remediation retries are spent (fluxcd/helm-controller ``internal/reconcile``). This
creator carries the object across by its kind's procedure and then lets helm-controller
finish the upgrade:

* the HelmRelease is the object's own (the ``helm.toolkit.fluxcd.io/name`` and
  ``/namespace`` labels its post-renderer writes on every object), else
  ``flux.helmrelease``;
* git's object is what helm-controller itself rendered: the manifest of the release
  revision its failed upgrade wrote (``sh.helm.release.v1.<release>.v<N>``, status
  ``failed``), post-renderers applied, held to git's immutable fields. A HelmRelease that
  has not tried git's chart yet has no such rendering, and is refused until it has;
* the HelmRelease is suspended (``spec.suspend``, journaled first) from the delete until
  the object is git's, so that neither a retry, a remediation (``rollback`` or
  ``uninstall``) nor drift correction acts mid-procedure;
* the object is created from that rendering, with Helm's ownership marks, applied as
  the field manager helm-controller applies as, so that its next apply owns it;
* at the end the HelmRelease is resumed, asked to reconcile with its failure counters
  reset (``reconcile.fluxcd.io/requestedAt`` and ``reconcile.fluxcd.io/resetAt``, the same
  token, as ``flux reconcile helmrelease --reset`` writes them), and must come back
  ``Ready`` with a deployed revision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.core.gitops import helm_release
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import HELMRELEASES
from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.errors import Refused
from fracctl.flows.engines import dry_run_create
from fracctl.flows.engines.access import require
from fracctl.flows.engines.flux.release import (
    HelmReleaseRef,
    release_id,
    remediation,
    request_upgrade,
    settled,
    wait_deployed,
)
from fracctl.flows.engines.helm.journal import ReleaseId
from fracctl.flows.engines.helm.objects import ReleaseRendering, marked, shown

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.engines.journal import ObjectJournal
    from fracctl.flows.engines.steps import Work

Obj = dict[str, Any]
OWNER_NAME = helm_release.FLUX_OWNER_NAME
MANAGER = "helm-controller"  # helm-controller's field manager


def owned_by_helmrelease(ctx: Context, live: Obj | None) -> bool:
    """Whether ``--backend flux`` for this object goes through a HelmRelease.

    The live object's owner labels decide: helm-controller's name a HelmRelease,
    kustomize-controller's a Kustomization (``flux.helmrelease`` names the operator's
    chart, not every object's owner). Only an object that carries neither (gone after a
    stopped run) follows ``flux.helmrelease``.
    """
    from fracctl.core.recreate.rehearsal import FLUX_NAME

    labels = ((live or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(OWNER_NAME):
        return True
    return not labels.get(FLUX_NAME) and bool(ctx.config.flux.helmrelease)


def _owner(ctx: Context, live: Obj | None, label: str) -> tuple[str, str]:
    """The HelmRelease (namespace, name) that owns ``live``."""
    f = ctx.config.flux
    owner = helm_release.flux_owner_of(live)
    if owner is not None:
        ns, name = owner
        if f.helmrelease and (f.namespace, f.helmrelease) != (ns, name):
            raise Refused(
                f"{label} belongs to Flux HelmRelease {ns}/{name} ({OWNER_NAME}), not to "
                f"flux.helmrelease {f.namespace}/{f.helmrelease}; nothing changed",
                hint=f"set flux.namespace: {ns} and flux.helmrelease: {name}",
            )
        return ns, name
    return f.namespace, f.helmrelease


def _manager(live: Obj | None) -> str:
    """The manager that applied the object (helm-controller's), as the live object says."""
    for entry in ((live or {}).get("metadata") or {}).get("managedFields") or []:
        if entry.get("operation") == "Apply" and entry.get("manager") != "fracctl":
            return str(entry.get("manager"))
    return MANAGER


class HelmReleaseCreator(ReleaseRendering):
    """helm-controller's own rendering creates the object; the HelmRelease finishes."""

    name = "flux"
    renderer = "helm-controller"

    def __init__(self, target: SyncTarget, live: Obj | None) -> None:
        super().__init__(target, live, _manager(live))
        self.where = ("", "")  # the HelmRelease's namespace and name

    @property
    def label(self) -> str:
        """``HelmRelease namespace/name``."""
        return f"HelmRelease {self.where[0]}/{self.where[1]}"

    def _get(self, ctx: Context) -> Obj:
        return HelmReleaseRef(*self.where).get(ctx)

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """helm-controller's failed upgrade rendered git's object; the rest is admitted.

        Raises:
            Refused: no HelmRelease, another's suspension, a release busy or not yet
                upgraded to git's chart, or a rendering other than git's.
        """
        from fracctl.adapters.render import parse_documents

        t = self.target
        self.where = _owner(ctx, self.live, t.label)
        hr = self._get(ctx)
        spec = hr.get("spec") or {}
        ready = condition(hr, "Ready") or {}
        ns, name = self.where
        rid = release_id(hr)
        release = settled(ctx, rid, HelmReleaseRef(ns, name))
        said = [
            f"Flux {self.label} is Ready={ready.get('status')} ({ready.get('reason')}); "
            f"release {rid} is at revision {release.version} ({release.status}, chart "
            f"{release.chart})"
        ]
        found = [d.obj for d in parse_documents(release.manifest, "helm-controller's rendering",
                                                stream=True)]  # fmt: skip
        found = [o for o in found if t.matches(o)]
        theirs, ours = (t.values(found[0]) if found else {}), t.values(desired)
        if not found or theirs != ours:
            has = shown(theirs) or f"no {t.label}"
            raise Refused(
                f"revision {release.version} of release {rid}, helm-controller's newest "
                f"rendering, has {has}, not git's: it has not tried git's chart yet; "
                "nothing changed",
                hint=f"let it try (flux reconcile helmrelease {name} -n {ns}), then rerun",
            )
        body = found[0]
        if t.namespace:
            body.setdefault("metadata", {})["namespace"] = t.namespace
        # Helm marks the release's own namespace (its record may be stored elsewhere).
        self.creates = marked(body, ReleaseId(release.name, release.namespace or rid.namespace))
        dry_run_create(ctx, self.creates, ref=t.ref)
        said += [
            f"helm-controller rendered {t.label} in revision {release.version} with "
            f"{shown(theirs)}, as git has",
            f"a dry-run create of that rendering with Helm's marks passes; it is applied as "
            f"field manager {self.manager!r}, so helm-controller's next apply owns it",
            require(ctx, "patch", ref=HELMRELEASES, name=name, namespace=ns),
            f"fracctl suspends {self.label} from the delete until the object is git's: no "
            f"retry, remediation ({remediation(spec)}) or drift correction acts meanwhile",
            f"afterwards {self.label} is resumed, reset and reconciled, and must be Ready",
        ]
        return said

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """Suspend the HelmRelease (journaled first)."""
        from fracctl.flows.engines import journal as journals

        hr = self._get(ctx)
        if (hr.get("spec") or {}).get("suspend") and journal.suspended != self.label:
            raise Refused(
                f"{self.label} is suspended by someone else; nothing changed",
                hint=f"resume it (flux resume helmrelease {self.where[1]} -n {self.where[0]}) "
                "or let its owner finish, then rerun",
            )
        journal.suspended = self.label
        journals.write(ctx, journal)
        self._suspend(ctx, True)
        return [f"suspended Flux {self.label} until the object is git's"]

    def _suspend(self, ctx: Context, suspend: bool) -> None:
        ns, name = self.where
        ctx.kube.patch(HELMRELEASES, name, {"spec": {"suspend": suspend}}, namespace=ns)

    def finish(self, w: Work) -> None:
        """Resume, reset and reconcile the HelmRelease; wait until it is Ready.

        Raises:
            TimedOut: not Ready after ``timeouts.sync``.
        """
        from fracctl.flows.engines import journal as journals

        ctx, owner = w.ctx, HelmReleaseRef(*self.where)
        if w.journal.suspended:
            self._suspend(ctx, False)
            w.say(f"resumed Flux {self.label}")
            w.journal.suspended = ""
            journals.write(ctx, w.journal)
        token = request_upgrade(ctx, owner, force=False)
        done = wait_deployed(ctx, owner, token)
        w.say(
            f"Flux {self.label} is Ready: release revision {done.get('version')} "
            f"deployed (chart {done.get('chartName')} {done.get('chartVersion')})"
        )
