"""``recreate KIND/NAME --backend helm``: an object of a Helm release, then the release.

``helm upgrade`` fails on an immutable field (``cannot patch "db" with kind StatefulSet:
… spec: Forbidden``; with Helm 4's server-side apply, ``server-side apply failed``), and
``--force`` (Helm 3) or ``--force-replace`` (Helm 4) is a PUT that hits the same wall
(helm/helm ``pkg/kube/client.go`` ``replaceResource``). This backend carries the object
across by its kind's procedure, then runs the release's own upgrade, which now succeeds:

* the release is the object's own: its ownership marks name it
  (``meta.helm.sh/release-name``, ``meta.helm.sh/release-namespace``), else the
  configured one (``git.helm_release``, ``git.helm_namespace``);
* the object is created from Helm's own rendering of git's chart (``helm upgrade
  --dry-run=server``, the very upgrade that follows), held to git's immutable fields, and
  with the marks Helm itself writes on every object it installs (``pkg/action/validate.go``
  ``setMetadataVisitor``: ``app.kubernetes.io/managed-by: Helm`` and the two
  annotations). Without them Helm 4 would skip the object on ``helm uninstall`` ("not
  owned by this release"), and a later install would refuse it ("invalid ownership
  metadata", ``checkOwnership``);
* the object is created, and its hold released, by server-side apply under the field
  manager Helm itself uses: the helm binary's base name (``pkg/kube/client.go``
  ``getManagedFieldsManager``). Helm 4 upgrades by server-side apply; under another
  manager its apply conflicts on every atomic field the API server defaults (a
  StatefulSet's ``volumeClaimTemplates``: a conflict with fracctl);
* once the object is git's, ``helm upgrade`` brings the release to git's chart. Helm
  patches from the last deployed revision (``prepareUpgrade``); with the live object
  already the chart's, that patch changes no immutable field. Never ``--atomic`` (its
  rollback would patch the old immutable values back and fail) or ``--cleanup-on-fail``.

An upgrade killed half-way leaves its revision ``pending-upgrade``; the release journal
(:mod:`fracctl.flows.engines.helm.backend`) tells a rerun it was this host's, and the rerun
marks it ``failed``, as Helm would have, before upgrading again.
"""

from __future__ import annotations

import copy
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from fracctl.core.gitops import helm_release
from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.errors import Refused
from fracctl.flows.engines import Stuck, clean_desired, dry_run_create, steps
from fracctl.flows.engines.helm.backend import Upgrade
from fracctl.flows.engines.helm.journal import ReleaseId

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.engines.journal import ObjectJournal
    from fracctl.flows.engines.steps import Work

Obj = dict[str, Any]

MANAGED_BY, MANAGED_BY_HELM = helm_release.MANAGED_BY, helm_release.MANAGED_BY_HELM
RELEASE_NAME, RELEASE_NAMESPACE = helm_release.RELEASE_NAME, helm_release.RELEASE_NAMESPACE


def owning_release(ctx: Context, live: Obj | None, label: str) -> ReleaseId:
    """The release ``live`` belongs to: its marks, else the configured one.

    Raises:
        Refused: the marks name another release than the configured one, or there is
            neither.
    """
    owner = helm_release.owner_of(live)
    g = ctx.config.git
    configured = ReleaseId.configured(ctx) if g.helm_release else None
    if owner is not None:
        ns, name = owner
        marked = ReleaseId(name, ns)
        if configured is not None and configured != marked:
            raise Refused(
                f"{label} belongs to Helm release {marked} ({RELEASE_NAME}), but fracctl "
                f"renders git's chart as release {configured}; nothing changed",
                hint=f"set git.helm_release: {name} and git.helm_namespace: {ns}",
            )
        return marked
    if configured is None:
        raise Refused(
            f"{label} carries no Helm ownership marks ({RELEASE_NAME}) and no release is "
            "configured: the helm backend upgrades the release that owns the object; "
            "nothing changed",
            hint="set git.helm_release and git.helm_namespace, or pick the backend that "
            "applies it (--backend apply, argocd or flux)",
        )
    return configured


def marked(obj: Obj, rid: ReleaseId) -> Obj:
    """``obj`` with Helm's ownership marks for ``rid``, as Helm writes them."""
    body = copy.deepcopy(obj)
    meta = body.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), MANAGED_BY: MANAGED_BY_HELM}
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        RELEASE_NAME: rid.name,
        RELEASE_NAMESPACE: rid.namespace,
    }
    return body


def shown(values: dict[str, Any]) -> str:
    """Held fields and their values: ``spec.serviceName db-v2 and …``."""
    return " and ".join(f"{path} {value}" for path, value in values.items())


class ReleaseRendering:
    """What the helm and HelmRelease creators share: a release's rendering of the object.

    It is created (held where asked) and applied again as the field manager that
    upgrades the release.
    """

    renderer = ""  # whose rendering, in messages
    verifies = True

    def __init__(self, target: SyncTarget, live: Obj | None, manager: str) -> None:
        self.target = target
        self.live = live
        self.creates: Obj | None = None  # the rendering, with Helm's marks, once proven
        self.manager = manager

    def create(self, w: Work, *, held: bool = False) -> Obj:
        """Create the rendering, marked (held where asked)."""
        body = self._creates()
        return steps.create(w, steps.held(w, body) if held else body, manager=self.manager)

    def release(self, w: Work) -> None:
        """Apply the rendering again: the hold goes."""
        w.ctx.kube.apply(w.ref, clean_desired(self._creates()), field_manager=self.manager)
        w.say(f"applied {self.renderer}'s rendering of {w.journal.key}: the hold is gone")

    def _creates(self) -> Obj:
        if self.creates is None:
            raise AssertionError(f"{self.renderer}'s rendering is read by prove() first")
        return copy.deepcopy(self.creates)


class HelmCreator(ReleaseRendering):
    """The release's own rendering creates the object; ``helm upgrade`` follows."""

    name = "helm"
    renderer = "helm"

    def __init__(self, target: SyncTarget, live: Obj | None, stuck: Stuck) -> None:
        super().__init__(target, live, "helm")  # helm's field manager, once known
        self.stuck = stuck
        self.rid: ReleaseId | None = None
        self.facts: Upgrade | None = None
        self.others: list[Obj] = []  # the release's other objects, as helm renders them

    def prove(self, ctx: Context, desired: Obj) -> list[str]:
        """Helm's server-side dry run of the upgrade renders git's object; all is admitted.

        Raises:
            Refused: the release is missing or busy, or Helm renders another object.
        """
        from fracctl.adapters.render import parse_documents
        from fracctl.flows.engines.helm.backend import cli, may_write_release, upgrade_facts

        t = self.target
        rid = self.rid = owning_release(ctx, self.live, t.label)
        self.manager = PurePosixPath(cli(ctx).binary).name
        facts = self.facts = upgrade_facts(ctx, rid, hooks=False)
        manifest = str(facts.rendered.get("manifest") or "")
        rendered = [d.obj for d in parse_documents(manifest, "helm's rendering", stream=True)]
        found = [o for o in rendered if t.matches(o)]
        self.others = [o for o in rendered if not t.matches(o)]
        if not found:
            raise Refused(
                f"helm's rendering of git's chart as release {rid} has no {t.label}: the "
                "upgrade would not keep it; nothing changed",
                hint="check git.path, git.helm_values and the object's name",
            )
        theirs, ours = t.values(found[0]), t.values(desired)
        if theirs != ours:
            raise Refused(
                f"helm renders {t.label} for release {rid} with {shown(theirs)}, not git's "
                f"{shown(ours)}; nothing changed",
                hint="render git's chart the way the release is upgraded (git.helm_values, "
                "git.helm_release, git.helm_namespace), then rerun",
            )
        body = found[0]
        if t.namespace:
            body.setdefault("metadata", {})["namespace"] = t.namespace
        self.creates = marked(body, rid)
        dry_run_create(ctx, self.creates, ref=t.ref)
        stuck = self._stuck(ctx)
        waits = (
            [f"the release's {', '.join(stuck)} also need(s) a recreate: helm upgrade runs "
             "after the last of them (recreate --all --backend helm carries them in turn)"]
            if stuck else []
        )  # fmt: skip
        return [
            *facts.evidence,
            *waits,
            f"helm renders {t.label} with {shown(theirs)}, as git has",
            f"a dry-run create of helm's rendering with Helm's marks ({MANAGED_BY}: "
            f"{MANAGED_BY_HELM}, {RELEASE_NAME} {rid.name}) passes; it is applied as helm's "
            f"field manager {self.manager!r}, so the next upgrade keeps it and helm uninstall "
            "removes it",
            *may_write_release(ctx, rid, facts),
            f"afterwards helm upgrade brings release {rid} to git's chart (never --atomic "
            "or --cleanup-on-fail)",
        ]

    def before_delete(self, ctx: Context, journal: ObjectJournal) -> list[str]:
        """Nothing: the helm CLI runs only when asked."""
        return []

    def finish(self, w: Work) -> None:
        """``helm upgrade`` of the release to git's chart; it must succeed."""
        from fracctl.flows.engines.helm.backend import run_upgrade

        assert self.rid is not None and self.facts is not None, "prove() runs first"
        stuck = self._stuck(w.ctx)
        if stuck:
            said = (
                f"helm upgrade of release {self.rid} waits: {', '.join(stuck)} still need(s) "
                "a recreate (fracctl recreate KIND/NAME --backend helm for each, or --all); "
                "the last one upgrades the release"
            )
            w.say(said)
            w.notes.append(said)
            return
        w.say(run_upgrade(w.ctx, self.rid, self.facts))

    def _stuck(self, ctx: Context) -> list[str]:
        """The release's other objects that git's chart changes on an immutable field.

        Helm's upgrade would stop on the first of them: it runs after the last.
        """
        if not self.others or self.rid is None:
            return []
        return self.stuck(ctx, self.others, self.rid.namespace)


def helm_creator(
    ctx: Context, target: SyncTarget, *, live: Obj | None, stuck: Stuck, **_: Any
) -> HelmCreator:
    """The release the object's Helm marks name (the registry's ``objects`` for helm)."""
    return HelmCreator(target, live, stuck)
