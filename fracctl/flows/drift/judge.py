"""Judging objects against the live cluster: read them, then ask the API server twice.

Live objects are read in bulk (one LIST per kind, or one GET when a kind has a single
object). Both questions to the API server are dry runs (``dryRun=All``). A dry-run create
first asks whether it would accept the desired object at all: it validates it as a whole
object (required fields, schema, CEL rules, admission), and ``AlreadyExists`` after
validation means yes. A refusal is ``rejected``, before any other verdict: a server-side
apply merges into the live object and keeps fields git dropped, so a comparison or an
apply alone can call an object "in sync" that neither a sync nor a recreate could ever
write. Where live and desired differ, the desired object is then sent as a server-side
apply: rejected as immutable means ``needs-recreate`` (its message kept verbatim),
accepted with a change means ``applies-in-place``, accepted without one means the
difference was only server defaults (``in-sync``).
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fracctl.core import drift as d
from fracctl.core.drift import rejection
from fracctl.core.drift.immutability import (
    FieldRule,
    builtin_rules,
    is_builtin_group,
    rules_from_crd,
)
from fracctl.core.gitops.helm_release import hook_of
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import ApiError, Conflict, Forbidden, NotFound
from fracctl.flows.context import Context
from fracctl.flows.drift.items import Item, Obj, check_unique
from fracctl.flows.drift.restarts import mark

if TYPE_CHECKING:
    from fracctl.adapters.kube import Kube


#: ``_carry``'s third word for a carried hook whose release's upgrade began and stopped.
STOPPED = "stopped"


class Judge:
    """Reads live objects in bulk and judges each object; caches rules per kind."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.kube: Kube = ctx.kube
        self._rules: dict[tuple[str, str, str], list[FieldRule]] = {}
        self._rules_lock = threading.Lock()  # judged in parallel: read each CRD once

    # --- rules ------------------------------------------------------------------------

    def rules(self, ref: ResourceRef) -> list[FieldRule]:
        """The immutability rules of ``ref``'s fields (read once per kind)."""
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

    def resolve(self, items: Sequence[Item]) -> None:
        """Find each item's resource (discovery once per kind and version)."""
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

    def read_live(self, items: Sequence[Item]) -> None:
        """Fill ``live``: one GET for a kind with one object, else one LIST per kind.

        The LIST is namespaced when every object of the kind shares one namespace, and
        falls back to one LIST per namespace when a cluster-wide read is forbidden.
        """
        by_ref: dict[ResourceRef, list[Item]] = defaultdict(list)
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

    def validate(self, ref: ResourceRef, body: Obj, it: Item) -> ApiError | None:
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

    def judge(self, it: Item) -> d.ObjectDrift:
        """The verdict on one item against its live object, and whether it is a hook.

        A live hook the rendering leaves out is ``hook``, never ``missing-desired``: the
        tool that runs the chart recreates it, and pruning it deletes the config.
        """
        out = self._judge(it)
        mark(self.ctx, out)  # an in-place change of the config that rolls the daemons
        out.hook = hook_of(it.live, it.desired)
        if out.hook is not None and out.verdict == d.MISSING_DESIRED and it.live is not None:
            out.verdict = d.HOOK
            out.note = "the rendering leaves out the chart's hooks; the live object is one"
        if out.hook is not None and self._runs_chart(it, out.hook):
            carried, why, fix = self._carry(it)
            if carried:
                out.hook["carried_by"] = carried
                # The object is done and its release not, or an upgrade began and stopped.
                if why and (out.verdict == d.IN_SYNC or fix == STOPPED):
                    out.unfinished = why
                    out.next_step = f"finish it: {self.ctx.rerun('recreate', '--yes')}"
            else:
                out.hook["not_carried"] = why
                out.next_step = out.next_step if not fix else f"{fix}; then rerun drift"
        return out

    def _runs_chart(self, it: Item, hook: dict[str, object]) -> bool:
        """Whether the run's engine has fracctl run the upgrade that recreates this hook.

        Where it runs a chart (``recreate.backend: helm``, or ``flux`` with
        ``flux.helmrelease``) the config in git is the chart's hook, and ``fracctl
        recreate`` runs the release's upgrade under the guard: the hook is the path the
        configuration chose, not drift. Any other hook still is.
        """
        from fracctl.flows import engines

        return (
            hook["source"] == "in the rendering"  # git's chart makes it the hook
            and it.desired is not None
            and self.ctx.config.target.matches(it.desired)
            and engines.select(self.ctx).runs_chart(self.ctx)
        )

    def _carry(self, it: Item) -> tuple[str, str, str]:
        """Who carries the hook and what of its release is left; or why not, and the fix.

        Carried means recreate's own read-only proofs pass: the very ones ``fracctl
        recreate`` runs before it changes anything, less those of the identity that runs
        it (drift's is read-only). The release exists and would run the hook, its
        rendering creates git's object, the API server admits the object.
        """
        from fracctl.errors import FracctlError
        from fracctl.flows import engines

        engine = engines.select(self.ctx)
        try:
            hook = engine.config(self.ctx).hook()
            if hook is None:
                return "", f"recreate.backend {engine.name} runs no chart", ""
            _evidence, creates = hook.carries(self.ctx, it.desired or {})
            engines.dry_run_create(self.ctx, creates)
            said, left, stopped = hook.carried_by(self.ctx, it.desired or {})
        except FracctlError as e:
            cause = e.cause if isinstance(e, engines.BackendCheckFailed) else e
            return "", f"fracctl recreate would refuse: {cause.message}", cause.hint or ""
        return said, left, STOPPED if stopped else ""

    def _judge(self, it: Item) -> d.ObjectDrift:
        """The verdict on one item against its live object."""
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
        return self._judge_update(out, it, it.ref, body, it.live, it.desired)

    def _judge_update(
        self, out: d.ObjectDrift, it: Item, ref: ResourceRef, body: Obj, live: Obj, desired: Obj
    ) -> d.ObjectDrift:
        """The verdict for an object both git and the cluster hold: the dry-run update."""
        rules = self.rules(ref)
        immutable = d.immutable_diffs(live, desired, rules)
        if not immutable and not d.changed_fields(live, desired):
            return out
        try:
            after = self.kube.apply(ref, body, dry_run=True, force=True)
        except ApiError as e:
            return self._rejected_update(out, e, it, rules, immutable)
        changes = d.update_changes(live, after)
        left = d.unapplied(after, immutable)
        if left:
            # The apply kept values that other field managers own, so its answer says
            # nothing about these fields: ask about them alone.
            from fracctl.adapters.kube import JSON_PATCH

            try:
                after = self.kube.patch(
                    ref,
                    it.name,
                    d.set_fields_patch(left),
                    namespace=it.namespace or None,
                    content_type=JSON_PATCH,
                    dry_run=True,
                )
            except ApiError as e:
                return self._rejected_update(out, e, it, rules, immutable)
            have = {c.path for c in changes}
            changes += [c for c in d.update_changes(live, after) if c.path not in have]
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
        it: Item,
        rules: list[FieldRule],
        immutable: list[d.FieldDiff],
    ) -> d.ObjectDrift:
        """The verdict for an update the API server refused (dry run)."""
        if e.status.code not in (400, 422) or it.live is None or it.desired is None:
            raise e
        out.message = e.status.message
        out.causes = list(e.status.causes)
        if rejection.is_immutable_rejection(e.status.causes, e.status.message, rules):
            out.verdict = d.NEEDS_RECREATE
            out.fields = d.narrow(
                immutable
                + rejection.fields_from_causes(e.status.causes, it.live, it.desired, immutable)
            )
            from fracctl.flows.procedures import name_procedure

            name_procedure(self.ctx, out)
        else:
            out.verdict = d.REJECTED
            out.note = "the API server rejects the desired object; recreating would not help"
        return out


def _rbac_denied(e: ApiError) -> bool:
    """Whether a 403 is RBAC refusing the identity (not admission refusing the object)."""
    return re.search(r"\bcannot \w+ resource\b", e.status.message) is not None


JUDGE_THREADS = 8  # concurrent dry runs while judging many objects


def judge_all(ctx: Context, items: list[Item]) -> list[d.ObjectDrift]:
    """Judge every item against the live cluster, in order."""
    judge = Judge(ctx)
    judge.resolve(items)
    check_unique(items)
    judge.read_live(items)
    if len(items) < 2:
        return [judge.judge(it) for it in items]
    # Each judgement waits on one or two dry runs; the API server answers them in parallel.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(JUDGE_THREADS, len(items))) as pool:
        return list(pool.map(judge.judge, items))
