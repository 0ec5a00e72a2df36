"""``fracctl drift``: does the live cluster hold what git wants, and can it get there?

For each object: read the live one (one LIST per kind, or one GET when a kind has a
single object), then ask the API server twice, both with ``dryRun=All``:

1. Would it accept the desired object at all? A dry-run create validates it as a
   whole object (required fields, schema, CEL rules, admission); ``AlreadyExists``
   after validation means yes. A refusal is ``rejected``, before any other verdict:
   a server-side apply merges into the live object and keeps fields git dropped, so a
   comparison or an apply alone can call an object "in sync" that neither a sync nor a
   recreate could ever write.
2. Where live and desired differ, would it accept the update? The desired object is
   sent as a server-side apply. Rejected as immutable means ``needs-recreate`` (its
   message kept verbatim), accepted with a change means ``applies-in-place``, accepted
   without one means the difference was only server defaults (``in-sync``).
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fracctl.core import drift as d
from fracctl.core.immutability import (
    FieldRule,
    builtin_rules,
    is_builtin_group,
    rules_from_crd,
)
from fracctl.core.manifests import Identity, check_unique_keys
from fracctl.core.resources import ResourceRef, split_api_version
from fracctl.errors import ApiError, Conflict, Forbidden, NotFound, UsageError
from fracctl.flows.context import Context
from fracctl.flows.render import Desired

if TYPE_CHECKING:
    from fracctl.adapters.kube import Kube

Obj = dict[str, Any]

SYNCED_BUT_DIFFERS = "Argo CD reports Synced but the live object differs"


@dataclass
class _Item:
    """One object to judge: its resource, identity, and what git and the cluster hold."""

    api_version: str
    kind: str
    namespace: str
    name: str
    desired: Obj | None
    location: d.Location | None = None
    text: str = ""
    ref: ResourceRef | None = None
    live: Obj | None = None
    unknown_kind: str = ""


class _Judge:
    """Reads live objects in bulk and judges each object; caches rules per kind."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.kube: Kube = ctx.kube
        self._rules: dict[tuple[str, str, str], list[FieldRule]] = {}
        self._rules_lock = threading.Lock()  # judged in parallel: read each CRD once

    # --- rules ------------------------------------------------------------------------

    def rules(self, ref: ResourceRef) -> list[FieldRule]:
        with self._rules_lock:
            return self._rules_of(ref)

    def _rules_of(self, ref: ResourceRef) -> list[FieldRule]:
        key = (ref.group, ref.version, ref.kind)
        if key in self._rules:
            return self._rules[key]
        rules = builtin_rules(ref.group, ref.kind)
        if not is_builtin_group(ref.group):
            try:
                crd = self.kube.crd(ref.group, ref.plural)
            except Forbidden:
                self.ctx.warn(
                    f"cannot read the CRD {ref.plural}.{ref.group} (forbidden); immutable "
                    "fields come only from the API server's dry-run answer"
                )
                crd = None
            if crd is not None:
                rules = rules + rules_from_crd(crd, ref.version)
        self._rules[key] = rules
        return rules

    # --- live objects -----------------------------------------------------------------

    def resolve(self, items: Sequence[_Item]) -> None:
        refs: dict[tuple[str, str], ResourceRef | str] = {}
        for it in items:
            k = (it.api_version, it.kind)
            if k not in refs:
                try:
                    refs[k] = self.kube.resolve(it.api_version, it.kind)
                except NotFound as e:
                    refs[k] = e.status.message
            found = refs[k]
            if isinstance(found, str):
                it.unknown_kind = found
            else:
                it.ref = found
                if not found.namespaced:
                    it.namespace = ""

    def read_live(self, items: Sequence[_Item]) -> None:
        """Fill ``live``: one GET for a kind with one object, else one LIST per kind.

        The LIST is namespaced when every object of the kind shares one namespace, and
        falls back to one LIST per namespace when a cluster-wide read is forbidden.
        """
        by_ref: dict[ResourceRef, list[_Item]] = defaultdict(list)
        for it in items:
            if it.ref is not None:
                by_ref[it.ref].append(it)
        for ref, group in by_ref.items():
            if len(group) == 1:
                it = group[0]
                it.live = self.kube.get_or_none(ref, it.name, it.namespace or None)
                continue
            namespaces = {it.namespace for it in group}
            ns = next(iter(namespaces)) if ref.namespaced and len(namespaces) == 1 else None
            try:
                found = self.kube.list(ref, namespace=ns)
            except Forbidden:
                if ns is not None or not ref.namespaced:
                    raise
                # No cluster-wide read: one LIST in each namespace instead.
                found = [
                    o for n in sorted(namespaces) for o in self.kube.list(ref, namespace=n or None)
                ]
            index: dict[tuple[str, str], Obj] = {}
            for o in found:
                # List items carry no apiVersion/kind; the object read alone would.
                o.setdefault("apiVersion", ref.api_version)
                o.setdefault("kind", ref.kind)
                meta = o.get("metadata") or {}
                index[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = o
            for it in group:
                it.live = index.get((it.namespace, it.name))

    # --- one verdict ------------------------------------------------------------------

    def validate(self, ref: ResourceRef, body: Obj, it: _Item) -> ApiError | None:
        """The API server's refusal of the desired object as a whole object, if any.

        A dry-run create: the API server validates the object (schema, required fields,
        CEL rules, admission) before it looks for an existing one, so ``AlreadyExists``
        means the object itself is acceptable. Transition rules (``oldSelf``) do not
        run on a create; the server-side apply that follows judges the update.

        Raises:
            NotFound: the object's namespace does not exist.
            Forbidden: this identity may not send the dry run (RBAC).
        """
        try:
            self.kube.create(ref, body, namespace=it.namespace or None, dry_run=True)
        except Conflict:
            return None  # it exists, and passed validation to get that far
        except Forbidden as e:
            if _rbac_denied(e):
                raise Forbidden(
                    e.status,
                    hint=f"drift validates every desired object with a dry-run create: "
                    f"grant the create verb on {ref.plural}.{ref.group or 'core'} "
                    "(a ValidatingAdmissionPolicy can keep it to dry runs, see "
                    "examples/argocd/drift-postsync.yaml)",
                ) from e
            if it.live is not None and "exceeded quota" in e.status.message:
                # The quota counts the existing object twice; a recreate frees it first.
                return None
            return e  # an admission policy or webhook refuses the object
        except ApiError as e:
            if e.status.code in (400, 422):
                return e
            raise
        return None

    def judge(self, it: _Item) -> d.ObjectDrift:
        out = d.ObjectDrift(
            api_version=it.api_version,
            kind=it.kind,
            namespace=it.namespace,
            name=it.name,
            verdict=d.IN_SYNC,
            live=it.live,
            desired=it.desired,
            location=it.location,
        )
        if it.unknown_kind:
            out.verdict = d.MISSING_LIVE if it.desired is not None else d.MISSING_DESIRED
            out.note = it.unknown_kind
            return out
        if it.desired is None:
            out.verdict = d.MISSING_DESIRED
            out.note = "the live object is not in the desired manifests"
            if it.live is None:
                out.note = "neither the desired manifests nor the cluster have it"
            return out
        if it.ref is None:  # unresolved kinds were answered above
            return out
        body = d.apply_body(it.desired, it.namespace)
        missing_namespace = ""
        try:
            rejection = self.validate(it.ref, body, it)
        except NotFound as e:
            # Only a namespace can be missing here (the kind was resolved); an object
            # in it cannot be judged before the namespace exists.
            missing_namespace = e.status.message
            rejection = None
        if rejection is not None:
            out.verdict = d.REJECTED
            out.message = rejection.status.message
            out.causes = list(rejection.status.causes)
            out.note = (
                "the API server rejects the desired object itself: neither a sync nor "
                "a recreate can write it"
            )
            return out
        if it.live is None:
            out.verdict = d.MISSING_LIVE
            out.note = "the desired object does not exist in the cluster"
            if missing_namespace:
                out.note += f" ({missing_namespace})"
            return out
        rules = self.rules(it.ref)
        immutable = d.immutable_diffs(it.live, it.desired, rules)
        if not immutable and not d.changed_fields(it.live, it.desired):
            return out
        try:
            after = self.kube.apply(it.ref, body, dry_run=True, force=True)
        except ApiError as e:
            return self._rejected_update(out, e, it, rules, immutable)
        changes = d.update_changes(it.live, after)
        left = d.unapplied(after, immutable)
        if left:
            # The apply kept values that other field managers own, so its answer says
            # nothing about these fields: ask about them alone.
            from fracctl.adapters.kube import JSON_PATCH

            try:
                after = self.kube.patch(
                    it.ref,
                    it.name,
                    d.set_fields_patch(left),
                    namespace=it.namespace or None,
                    content_type=JSON_PATCH,
                    dry_run=True,
                )
            except ApiError as e:
                return self._rejected_update(out, e, it, rules, immutable)
            have = {c.path for c in changes}
            changes += [c for c in d.update_changes(it.live, after) if c.path not in have]
            out.note = (
                f"{', '.join(f.path for f in left)}: other field managers own the live "
                "values, so an apply keeps them; a sync by their owner changes them"
            )
        if changes:
            out.verdict = d.APPLIES_IN_PLACE
            out.changes = changes
        else:
            out.note = "differences are server-side defaults only"
        return out

    def _rejected_update(
        self,
        out: d.ObjectDrift,
        e: ApiError,
        it: _Item,
        rules: list[FieldRule],
        immutable: list[d.FieldDiff],
    ) -> d.ObjectDrift:
        """The verdict for an update the API server refused (dry run)."""
        if e.status.code not in (400, 422) or it.live is None or it.desired is None:
            raise e
        out.message = e.status.message
        out.causes = list(e.status.causes)
        if d.is_immutable_rejection(e.status.causes, e.status.message, rules):
            out.verdict = d.NEEDS_RECREATE
            out.fields = immutable + d.fields_from_causes(
                e.status.causes, it.live, it.desired, immutable
            )
            t = self.ctx.config.target
            out.next_step = d.recreate_step(out, (t.group, t.kind, t.name))
        else:
            out.verdict = d.REJECTED
            out.note = "the API server rejects the desired object; recreating would not help"
        return out


def _rbac_denied(e: ApiError) -> bool:
    """Whether a 403 is RBAC refusing the identity (not admission refusing the object)."""
    return re.search(r"\bcannot \w+ resource\b", e.status.message) is not None


def _items_from(
    objects: Sequence[Obj],
    default_namespace: str,
    locations: Sequence[d.Location | None] = (),
    texts: Sequence[str] = (),
) -> list[_Item]:
    items: list[_Item] = []
    for i, obj in enumerate(objects):
        api_version, kind, ns, name = d.object_identity(obj, default_namespace)
        if not api_version or not kind or not name:
            raise UsageError(f"desired object #{i + 1} lacks apiVersion, kind or metadata.name")
        items.append(
            _Item(
                api_version,
                kind,
                ns,
                name,
                obj,
                locations[i] if i < len(locations) else None,
                texts[i] if i < len(texts) else "",
            )
        )
    return items


def _check_unique(items: Sequence[_Item]) -> None:
    """Two desired objects for one live object: refuse rather than judge one of them.

    Runs after :meth:`_Judge.resolve`, so a namespace written on a cluster-scoped
    object no longer hides a duplicate.
    """
    keys: list[Identity | None] = [
        (split_api_version(it.api_version)[0], it.kind, it.namespace, it.name)
        if it.desired is not None
        else None
        for it in items
    ]
    origins = [
        f"{it.location.file}:{it.location.line}" if it.location else f"desired object #{i + 1}"
        for i, it in enumerate(items)
    ]
    check_unique_keys(keys, origins, source="the desired objects")


JUDGE_THREADS = 8  # concurrent dry runs while judging many objects


def _judge_all(ctx: Context, items: list[_Item]) -> list[d.ObjectDrift]:
    judge = _Judge(ctx)
    judge.resolve(items)
    _check_unique(items)
    judge.read_live(items)
    if len(items) < 2:
        return [judge.judge(it) for it in items]
    # Each judgement waits on one or two dry runs; the API server answers them in parallel.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(JUDGE_THREADS, len(items))) as pool:
        return list(pool.map(judge.judge, items))


def check_objects(
    ctx: Context,
    objects: Sequence[Obj],
    *,
    default_namespace: str | None = None,
    desired: Desired | None = None,
) -> d.DriftReport:
    """Judge every desired object against the live cluster.

    Args:
        ctx: the context.
        objects: desired objects (rendered manifests).
        default_namespace: namespace for namespaced objects that name none
            (default ``git.namespace``).
        desired: the rendering ``objects`` came from, for git locations and the source.

    Returns:
        One verdict per object, in the order given.
    """
    ns = default_namespace or ctx.config.git.namespace
    locations = desired.locations if desired is not None else ()
    texts = desired.texts if desired is not None else ()
    items = _items_from(objects, ns, locations, texts)
    report = d.DriftReport(
        objects=_judge_all(ctx, items),
        source=dict(desired.source) if desired is not None else {},
    )
    _add_field_lines(report, items)
    return report


def check_target(ctx: Context, *, desired_objects: Sequence[Obj] | None = None) -> d.ObjectDrift:
    """The verdict for the configured target object (``ctx.config.target``).

    Args:
        ctx: the context.
        desired_objects: rendered manifests to find the target in (default: render
            ``ctx.config.git``).

    Returns:
        The target's verdict; ``missing-live`` when the cluster lacks it,
        ``missing-desired`` when the manifests lack it.
    """
    return _check_target(ctx, desired_objects=desired_objects).objects[0]


def _check_target(
    ctx: Context, *, desired_objects: Sequence[Obj] | None = None, desired: Desired | None = None
) -> d.DriftReport:
    from fracctl.flows.render import render

    t = ctx.config.target
    if desired_objects is not None:
        objects = list(desired_objects)
    else:
        desired = desired or render(ctx)
        objects = desired.objects
    found = [i for i, o in enumerate(objects) if t.matches(o)]
    if len(found) > 1:
        # Never judge (or recreate from) the first of two: which one git "means" is
        # for its author to say.
        have = desired if desired_objects is None else None
        check_unique_keys(
            [(t.group, t.kind, "", t.name)] * len(found),
            [_origin(have, i) for i in found],
            source="the desired objects",
        )
    index = found[0] if found else None
    ref = t.ref
    item = _Item(t.api_version, t.kind, "", t.name, None, ref=ref)
    if index is not None:
        item.desired = objects[index]
        if desired is not None and desired_objects is None:
            item.location = desired.location_of(index)
            item.text = desired.text_of(index)
    judge = _Judge(ctx)
    item.live = ctx.kube.get_or_none(ref, t.name)
    report = d.DriftReport(
        objects=[judge.judge(item)],
        source=dict(desired.source) if desired is not None else {},
    )
    _add_field_lines(report, [item])
    return report


def _origin(desired: Desired | None, index: int) -> str:
    loc = desired.location_of(index) if desired is not None else None
    return f"{loc.file}:{loc.line}" if loc else f"desired object #{index + 1}"


def _add_field_lines(report: d.DriftReport, items: Sequence[_Item]) -> None:
    """Point each drifted object's location at its first differing field's line."""
    from fracctl.adapters.render import field_line

    for o, it in zip(report.objects, items, strict=True):
        if not o.drifted or o.location is None or not it.text:
            continue
        first = (o.fields or o.changes)[:1]
        if not first:
            continue
        line = field_line(it.text, first[0].path)
        if line is not None:
            o.location = d.Location(o.location.file, o.location.line + line - 1)


# --- Argo CD ----------------------------------------------------------------------------


def _claims(app_name: str, app: Obj) -> dict[str, Any]:
    status = app.get("status") or {}
    op = status.get("operationState") or {}
    return {
        "app": app_name,
        "sync": (status.get("sync") or {}).get("status") or "Unknown",
        "revision": (status.get("sync") or {}).get("revision") or "",
        "health": (status.get("health") or {}).get("status") or "Unknown",
        "operation": {
            "phase": op.get("phase") or "",
            "message": op.get("message") or "",
            "finishedAt": op.get("finishedAt") or "",
        },
    }


def _resource_claims(app: Obj) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    status = app.get("status") or {}
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for r in status.get("resources") or []:
        key = (
            r.get("group") or "",
            r.get("kind") or "",
            r.get("namespace") or "",
            r.get("name") or "",
        )
        out[key] = {
            "status": r.get("status") or "",
            "health": (r.get("health") or {}).get("status") or "",
            "requiresPruning": bool(r.get("requiresPruning")),
        }
    op = status.get("operationState") or {}
    for r in (op.get("syncResult") or {}).get("resources") or []:
        key = (
            r.get("group") or "",
            r.get("kind") or "",
            r.get("namespace") or "",
            r.get("name") or "",
        )
        entry = out.setdefault(key, {"status": "", "health": ""})
        entry["lastSync"] = r.get("status") or ""
        entry["lastSyncMessage"] = r.get("message") or ""
    return out


def _annotate_with_argocd(report: d.DriftReport, app_name: str, app: Obj) -> None:
    claims = _claims(app_name, app)
    report.argocd = claims
    per_resource = _resource_claims(app)
    for o in report.objects:
        entry = per_resource.get((o.group, o.kind, o.namespace, o.name))
        if entry is None:
            entry = {"status": claims["sync"], "health": "", "fromApplication": True}
        o.argocd = entry
        if o.argocd_claims_synced:
            report.warnings.append(f"{SYNCED_BUT_DIFFERS}: {o.key} is {o.verdict}")
    if (
        report.drifted
        and claims["sync"] == "Synced"
        and not any(w.startswith(SYNCED_BUT_DIFFERS) for w in report.warnings)
    ):
        report.warnings.append(f"{SYNCED_BUT_DIFFERS} (application {app_name})")


def check_app(
    ctx: Context,
    *,
    app: str,
    revision: str | None = None,
    kind: str | None = None,
    name: str | None = None,
) -> d.DriftReport:
    """Judge every resource of an Argo CD application, desired state from Argo CD.

    Resources Argo CD would prune (live, no longer rendered) are ``missing-desired``.
    """
    from fracctl.flows.render import check_argocd_unique, select

    client = ctx.argocd
    application = client.get_application(app)
    manifests = [m for m in client.manifests(app, revision=revision) if isinstance(m, dict)]
    dest_ns = ((application.get("spec") or {}).get("destination") or {}).get("namespace") or ""
    ns = dest_ns or ctx.config.git.namespace
    check_argocd_unique(ctx, manifests, app=app, default_namespace=ns)
    chosen = [manifests[i] for i in select(manifests, kind=kind, name=name)]
    items = _items_from(chosen, ns)
    have = {(split_api_version(it.api_version)[0], it.kind, it.namespace, it.name) for it in items}
    for r in (application.get("status") or {}).get("resources") or []:
        if not r.get("requiresPruning"):
            continue
        group, rkind = r.get("group") or "", r.get("kind") or ""
        if (kind and rkind.lower() != kind.lower()) or (name and r.get("name") != name):
            continue
        key = (group, rkind, r.get("namespace") or "", r.get("name") or "")
        if key in have:
            continue
        api_version = f"{group}/{r.get('version')}" if group else str(r.get("version") or "v1")
        items.append(_Item(api_version, rkind, key[2], key[3], None))
    report = d.DriftReport(
        objects=_judge_all(ctx, items), source={"argocd_app": app, "revision": revision or ""}
    )
    _annotate_with_argocd(report, app, application)
    return report


# --- the command's flow -----------------------------------------------------------------


def run(
    ctx: Context,
    *,
    all_objects: bool = False,
    app: str | None = None,
    repo: str | None = None,
    revision: str | None = None,
    path: str | None = None,
    renderer: str | None = None,
    kind: str | None = None,
    name: str | None = None,
) -> d.DriftReport:
    """What ``fracctl drift`` reports.

    Args:
        ctx: the context.
        all_objects: judge every rendered object, not only the configured target.
        app: judge every resource of this Argo CD application (desired from Argo CD).
        repo: git repository (default ``git.repo``).
        revision: git revision (default ``git.revision``); with ``app``, Argo CD's.
        path: path in the repository (default ``git.path``).
        renderer: ``auto``, ``plain``, ``kustomize`` or ``helm``.
        kind: only objects of this kind (with ``all_objects`` or ``app``).
        name: only objects of this name (with ``all_objects`` or ``app``).

    Returns:
        The report; with Argo CD configured, also what Argo CD claims.
    """
    from fracctl.flows.render import render, select

    if app:
        if any(v is not None for v in (repo, path, renderer)):
            raise UsageError(
                "--app takes the desired state from Argo CD: drop --repo/--path/--renderer"
            )
        return check_app(ctx, app=app, revision=revision, kind=kind, name=name)
    if (kind or name) and not all_objects:
        raise UsageError("--kind and --name select among rendered objects: add --all")
    desired = render(ctx, repo=repo, revision=revision, path=path, renderer=renderer)
    if all_objects:
        keep = select(desired.objects, kind=kind, name=name)
        chosen = Desired(
            objects=[desired.objects[i] for i in keep],
            locations=[desired.location_of(i) for i in keep],
            texts=[desired.text_of(i) for i in keep],
            source=desired.source,
        )
        report = check_objects(ctx, chosen.objects, desired=chosen)
    else:
        report = _check_target(ctx, desired=desired)
    app_name = ctx.config.argocd.app
    if app_name:
        application = ctx.argocd.get_application(app_name)
        _annotate_with_argocd(report, app_name, application)
    return report


def exit_code(report: d.DriftReport) -> int:
    """0 when everything is in sync, 1 when anything drifted."""
    return 1 if report.drifted else 0


def summary_line(report: d.DriftReport) -> str:
    """``3 objects: 1 needs-recreate, 2 in-sync``."""
    counts = {k: v for k, v in report.counts().items() if v}
    parts = ", ".join(f"{v} {k}" for k, v in counts.items())
    n = len(report.objects)
    return f"{n} object{'s' if n != 1 else ''}: {parts or 'none'}"
