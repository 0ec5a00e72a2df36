"""Judging the desired objects of a rendering: all of them, or the configured target.

``check_objects`` judges every object given (rendered manifests), in order;
``check_target`` finds the configured target among the rendered objects, refuses to
pick one of two, and judges it alone. Both report git locations where the rendering has
them, pointed at the first differing field.
"""

from __future__ import annotations

from collections.abc import Sequence

from fracctl.core import drift as d
from fracctl.core.gitops.manifests import check_unique_keys
from fracctl.flows.context import Context
from fracctl.flows.drift.items import Item, Obj, add_field_lines, items_from, origin
from fracctl.flows.drift.judge import Judge, judge_all
from fracctl.flows.render import Desired


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
            (default ``git.objects_namespace``).
        desired: the rendering ``objects`` came from, for git locations and the source.

    Returns:
        One verdict per object, in the order given.
    """
    ns = default_namespace or ctx.config.git.objects_namespace
    locations = desired.locations if desired is not None else ()
    texts = desired.texts if desired is not None else ()
    items = items_from(objects, ns, locations, texts)
    report = d.DriftReport(
        objects=judge_all(ctx, items),
        source=dict(desired.source) if desired is not None else {},
    )
    add_field_lines(report, items)
    mark_unfinished(ctx, report.objects)
    return report


def mark_unfinished(ctx: Context, objects: Sequence[d.ObjectDrift]) -> None:
    """Mark each object a stopped ``recreate KIND/NAME`` left half-done.

    Say what stopped, and name the command that finishes it: the one the stopped run
    printed.
    """
    from fracctl.flows.unfinished import open_journals

    journals = open_journals(ctx)
    for o in objects:
        u = journals.get(o.key)
        if u is not None:
            o.unfinished = u.said()
            o.next_step = f"finish it: {u.rerun}"


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
    return target_report(ctx, desired_objects=desired_objects).objects[0]


def target_report(
    ctx: Context, *, desired_objects: Sequence[Obj] | None = None, desired: Desired | None = None
) -> d.DriftReport:
    """The drift report of the configured target alone (``drift`` without ``--all``)."""
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
            [origin(have, i) for i in found],
            source="the desired objects",
        )
    index = found[0] if found else None
    ref = t.ref
    item = Item(t.api_version, t.kind, "", t.name, None, ref=ref)
    if index is not None:
        item.desired = objects[index]
        if desired_objects is None:  # as the run's engine renders it (helm-controller)
            from fracctl.flows import engines

            item.desired = engines.select(ctx).backend(ctx).rendering(ctx, objects)[index]
        if desired is not None and desired_objects is None:
            item.location = desired.location_of(index)
            item.text = desired.text_of(index)
    judge = Judge(ctx)
    item.live = ctx.kube.get_or_none(ref, t.name)
    report = d.DriftReport(
        objects=[judge.judge(item)],
        source=dict(desired.source) if desired is not None else {},
    )
    add_field_lines(report, [item])
    (o,) = report.objects
    if o.verdict == d.MISSING_LIVE:
        # Not a sync: the config may be a chart's hook, and a recreate that deleted it
        # and stopped resumes only through the recreate (its backend, its guards).
        o.next_step = (
            f"{ctx.rerun('recreate', '--yes')} creates it from git through recreate.backend "
            f"({ctx.config.recreate.backend}), after its guards; a recreate that deleted it "
            "and stopped resumes the same way"
        )
    return report
