"""``fracctl doctor``: read the cluster (GET only) and look for known failure signatures."""

from __future__ import annotations

from typing import Any

from fracctl.core.doctor import (
    DAEMONSETS,
    DEPLOYMENTS,
    KAI_CONFIG,
    RUNTIME_CLASSES,
    DoctorReport,
    DoctorSettings,
    Snapshot,
    diagnose,
)
from fracctl.core.doctor.helpers import fractions_of
from fracctl.core.fractions.fractional import PodKind, PrefixError, classify
from fracctl.core.kube.resources import EVENTS, NODES, ResourceRef
from fracctl.errors import ConfigError, Forbidden, FracctlError, NotFound
from fracctl.flows.context import Context
from fracctl.flows.doctor.pods import namespace_pods, read_pods


def settings(ctx: Context) -> DoctorSettings:
    """The checks' settings: the configuration's sections, passed whole.

    The configured engine says which release's upgrade it guards, if any.
    """
    from fracctl.flows import engines

    c = ctx.config
    guards = engines.select(ctx).backend(ctx).doctor_settings(ctx)
    return DoctorSettings(c.labels, c.target, c.cluster, c.pods, condition=c.condition, **guards)


def _get(ctx: Context, ref: ResourceRef, name: str) -> tuple[dict[str, Any] | None, str]:
    """The object, or None and why: no such object, or no such resource type (no CRD)."""
    try:
        return ctx.kube.get(ref, name), ""
    except NotFound as e:
        if f'"{name}" not found' in e.status.message:
            return None, "no such object"
        return None, f"the API server serves no {ref.kind} in {ref.api_version}: CRD not installed"


def _guard(ctx: Context, snap: Snapshot) -> None:
    """What keeps the guard policy from holding deletes of the target; who holds the lock."""
    from datetime import datetime, timezone

    from fracctl.core.kube.resources import LEASES
    from fracctl.core.recreate.lock import HELD, judge_lease
    from fracctl.flows.policy import problems

    r = ctx.config.recreate
    try:
        lease = ctx.kube.get_or_none(LEASES, r.lock_name, r.lock_namespace)
    except Forbidden as e:
        snap.guard_unreadable = e.status.message
        snap.lock_holder = "(the Lease is unreadable)"  # cannot tell a fence is stale: say none
        return
    now = datetime.fromtimestamp(ctx.clock.now(), tz=timezone.utc)
    judged = judge_lease(lease, me="", now=now)
    snap.lock_holder = judged.holder if judged.state == HELD else ""
    try:
        snap.guard_problems = problems(ctx, lease)
    except Forbidden as e:
        snap.guard_unreadable = e.status.message


RECORDS_PAGE = 20  # Helm's release Secrets per list page


def _helm(ctx: Context, snap: Snapshot) -> None:
    """Helm's release records, when the live target is a hook (to name its release).

    Secrets labelled ``owner=helm`` (helm/helm ``pkg/storage/driver/secrets.go``) in
    every namespace when the identity may list them there, else in the agents'
    namespace, where the operator's chart is installed; the doctor role grants only
    that (``fracctl rbac print --role doctor``). What could not be read is said, never
    taken for "no release". Only the decoded records are kept: a Secret's data never
    reaches the report.
    """
    from fracctl.core.gitops.helm_release import OWNER_SELECTOR, Release, hook_use, latest
    from fracctl.core.kube.resources import SECRETS

    if snap.target is None or hook_use(snap.target) is None:
        return

    def read(namespace: str | None) -> list[Release]:
        # A page at a time: a record can be near a megabyte, and only the decoded newest
        # revision of each release is kept.
        pages = ctx.kube.list_pages(
            SECRETS, namespace=namespace, label_selector=OWNER_SELECTOR, limit=RECORDS_PAGE
        )
        found = latest(s for page in pages for s in page.get("items") or [])
        return sorted(found.values(), key=lambda r: (r.namespace, r.name))

    ns = ctx.config.cluster.agent_namespace
    try:
        snap.helm_releases, snap.helm_read = read(None), "every namespace"
    except Forbidden:
        try:
            snap.helm_releases, snap.helm_read = read(ns), f"namespace {ns}"
        except Forbidden as e:
            snap.helm_unreadable = e.status.message


def snapshot(ctx: Context, s: DoctorSettings) -> Snapshot:
    """Read what the checks need, with GET requests only.

    Where the config is a chart's hook that ``recreate.backend`` upgrades, that backend
    also reads git's chart, read-only (:func:`_release_left`).
    Pods come through the paging scan, each cut down to the fields the checks read,
    and only those the checks look at are kept (:mod:`fracctl.flows.doctor.pods`).
    Events are read only for fractional pods that are Pending.

    Raises:
        ApiError: the cluster refused a read (exit 3).
    """
    kube = ctx.kube
    snap = Snapshot(nodes=kube.list(NODES))
    snap.runtime_class = kube.get_or_none(RUNTIME_CLASSES, s.cluster.runtime_class)
    snap.kai_config, snap.kai_config_missing = _get(ctx, KAI_CONFIG, s.cluster.scheduler_config)
    snap.target, snap.target_missing = _get(ctx, ctx.config.target.ref, s.target.name)
    _guard(ctx, snap)
    _helm(ctx, snap)
    _unfinished(ctx, snap)
    _release_left(ctx, snap)
    snap.daemonsets = {
        name: kube.get_or_none(DAEMONSETS, name, s.cluster.agent_namespace)
        for name in s.cluster.agent_daemonsets
    }
    snap.agent_pods = namespace_pods(ctx, s.cluster.agent_namespace)
    for ns in dict.fromkeys((s.cluster.agent_namespace, s.cluster.scheduler_namespace)):
        for ref in (DEPLOYMENTS, DAEMONSETS):
            # Items of a list carry no kind of their own.
            snap.workloads += [{**w, "kind": ref.kind} for w in kube.list(ref, namespace=ns)]

    try:
        matcher = fractions_of(snap, s).matcher
    except PrefixError as e:
        raise ConfigError(str(e)) from None
    except ValueError as e:
        raise ConfigError(f"pods.fraction_annotations: {e}") from None
    read_pods(ctx, s, snap, matcher)
    pending: dict[str, set[str]] = {}  # namespace -> fractional pods Pending there
    for pod in snap.pods:
        meta = pod.get("metadata") or {}
        verdict = classify(meta, matcher, reservation_namespace=s.pods.reservation_namespace)
        if (pod.get("status") or {}).get("phase") == "Pending" and verdict.kind is (
            PodKind.FRACTIONAL
        ):
            pending.setdefault(meta["namespace"], set()).add(meta["name"])
    # One list of pod events per namespace, not one per pod.
    for ns, names in sorted(pending.items()):
        for event in kube.list(EVENTS, namespace=ns, field_selector="involvedObject.kind=Pod"):
            name = (event.get("involvedObject") or {}).get("name")
            if name in names:
                snap.events.setdefault(f"{ns}/{name}", []).append(event)
    return snap


def _unfinished(ctx: Context, snap: Snapshot) -> None:
    """The recreates that stopped half-way on this machine, and the command that resumes."""
    from fracctl.flows.unfinished import open_journals

    snap.unfinished = list(open_journals(ctx).values())
    snap.recreate_command = ctx.rerun("recreate", "--yes")


def _release_left(ctx: Context, snap: Snapshot) -> None:
    """What git's chart still changes of the release the configured backend upgrades.

    Only where the live config is a hook and ``recreate.backend`` runs its chart (helm, a
    HelmRelease): the backend's own reading (git rendered, helm's dry run), as drift
    reads it. A value no object of the config reads leaves the object equal to git while
    the release is not; nothing in the cluster alone shows that. Unread when git or helm
    cannot be read: the other checks do not depend on it.
    """
    from fracctl.core.gitops.helm_release import hook_use
    from fracctl.flows import engines
    from fracctl.flows.render import render_desired

    t = ctx.config.target
    if snap.target is None or hook_use(snap.target) is None:
        return
    try:
        hook = engines.select(ctx).config(ctx).hook()
        if hook is None:
            return
        desired = next((o for o in render_desired(ctx) if t.matches(o)), None)
        if desired is not None:
            snap.release_left = hook.left(ctx, desired)[0]
    except FracctlError:
        return


def doctor(ctx: Context) -> DoctorReport:
    """``fracctl doctor``: snapshot the cluster, then run every check on it."""
    s = settings(ctx)
    return diagnose(snapshot(ctx, s), s)
