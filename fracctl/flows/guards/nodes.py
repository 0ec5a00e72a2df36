"""``fracctl nodes``: the opt-in policy table, and the node-join labelling step.

Labelling follows the policy in ``labels``: the opt-in label goes only on nodes of an
allowed GPU class whose GPU product is not denied. A request that names any other node
changes nothing at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.fractions.findings import node_findings
from fracctl.core.fractions.fractional import PodKind, classify_pod, unfinished_selector
from fracctl.core.fractions.policy import (
    Finding,
    LabelPolicy,
    NodeStanding,
    Verdict,
    label_decision,
    opted_in,
    standings,
)
from fracctl.core.kube.nodes import describe_condition, labels_of, matches, node_name_problems
from fracctl.core.kube.resources import NODES
from fracctl.errors import Conflict, Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.guards.preflight import live_selector
from fracctl.flows.guards.scan import fractions


@dataclass(frozen=True)
class NodeRow:
    """One GPU node in ``nodes check``."""

    standing: NodeStanding
    selected: bool | None  # by the live config; None when no config exists
    readiness: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        s = self.standing
        return {
            "name": s.name,
            "class": s.gpu_class,
            "product": s.product,
            "denied": s.denied,
            "opted_in": s.opted_in,
            "verdict": s.verdict.value,
            "selected": self.selected,
            "readiness": self.readiness,
        }


@dataclass
class NodesReport:
    """The policy standing of every GPU node."""

    rows: list[NodeRow]
    findings: list[Finding]
    live_selector: dict[str, str] | None

    @property
    def ok(self) -> bool:
        """Whether no node breaks the policy."""
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "ok": self.ok,
            "live_selector": self.live_selector,
            "nodes": [r.to_dict() for r in self.rows],
            "findings": [
                {"rule": f.rule.value, "nodes": list(f.nodes), "message": f.message, "fix": f.fix}
                for f in self.findings
            ],
        }


def check(ctx: Context) -> NodesReport:
    """Judge every GPU node against the opt-in policy."""
    policy = ctx.config.labels
    objs = {n["metadata"]["name"]: n for n in ctx.kube.list(NODES)}
    labels = {name: labels_of(obj) for name, obj in objs.items()}
    live = live_selector(ctx)
    rows = [
        NodeRow(
            s,
            None if live is None else matches(live, labels[s.name]),
            describe_condition(objs[s.name], ctx.config.condition),
        )
        for s in standings(labels, policy)
        if s.verdict is not Verdict.NOT_GPU
    ]
    findings = [f for f in node_findings(labels, policy).values() if f is not None]
    return NodesReport(rows, findings, live)


@dataclass(frozen=True)
class Change:
    """What ``nodes label|unlabel`` did (or, with ``--dry-run``, would do) to one node."""

    node: str
    action: str  # labelled | unlabelled | unchanged
    detail: str

    def to_dict(self) -> dict[str, str]:
        """Plain data for ``-o json``."""
        return {"node": self.node, "action": self.action, "detail": self.detail}


@dataclass
class LabelReport:
    """The outcome of ``nodes label`` or ``nodes unlabel``."""

    changes: list[Change]
    dry_run: bool
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "dry_run": self.dry_run,
            "changes": [c.to_dict() for c in self.changes],
            "notes": self.notes,
        }


def _unique(names: Sequence[str]) -> list[str]:
    """The names, once each, checked before anything is read or changed."""
    if not names:
        raise UsageError("name at least one node")
    problems = node_name_problems(names)
    if problems:
        raise UsageError("; ".join(problems) + " (nothing was changed)")
    return list(dict.fromkeys(names))


def _fetch(ctx: Context, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    found = {n: ctx.kube.get_or_none(NODES, n) for n in names}
    missing = [n for n, obj in found.items() if obj is None]
    if missing:
        raise UsageError(f"no such node: {', '.join(missing)} (nothing was changed)")
    return {n: obj for n, obj in found.items() if obj is not None}


def _set_label(
    ctx: Context, node: dict[str, Any], value: str | None, *, dry_run: bool
) -> dict[str, Any]:
    """Merge-patch the opt-in label, guarded by the resourceVersion that was judged."""
    meta = node["metadata"]
    return ctx.kube.patch(
        NODES,
        meta["name"],
        {
            "metadata": {
                "labels": {ctx.config.labels.opt_in_key: value},
                "resourceVersion": meta["resourceVersion"],
            }
        },
        dry_run=dry_run,
    )


def label(ctx: Context, *, nodes: Sequence[str], dry_run: bool = False) -> LabelReport:
    """Put the opt-in label on nodes of an allowed class; refuse any other, changing nothing.

    Raises:
        Refused: a node is of a denied, unknown or missing class, or of a denied GPU
            product whatever its class label says (exit 1).
        UsageError: a node name is empty or invalid, or the node does not exist.
    """
    policy = ctx.config.labels
    names = _unique(nodes)
    objs = _fetch(ctx, names)
    decisions = [label_decision(n, labels_of(objs[n]), policy) for n in names]
    refused = [d for d in decisions if not d.allowed]
    if refused:
        raise Refused(
            "refusing to label, nothing was changed: " + "; ".join(d.reason for d in refused),
            hint="label only nodes of an allowed class ("
            + ", ".join(policy.allowed_classes)
            + ") whose GPU product is not denied",
        )
    changes: list[Change] = []
    for d in decisions:
        if d.already:
            changes.append(Change(d.node, "unchanged", "already labelled"))
            continue
        try:
            _set_label(ctx, objs[d.node], policy.opt_in_value, dry_run=dry_run)
        except Conflict:  # the node changed since it was judged: judge it again
            fresh = ctx.kube.get(NODES, d.node)
            again = label_decision(d.node, labels_of(fresh), policy)
            if not again.allowed:
                done = [c.node for c in changes if c.action == "labelled"]
                raise Refused(
                    f"refusing to label {d.node}, which changed meanwhile: {again.reason}"
                    + (f" (already labelled: {', '.join(done)})" if done else "")
                ) from None
            if not again.already:
                _set_label(ctx, fresh, policy.opt_in_value, dry_run=dry_run)
        changes.append(Change(d.node, "labelled", policy.opt_in))
    live = live_selector(ctx)
    starting = [
        c.node
        for c in changes
        if c.action == "labelled" and _selection_flips(live, labels_of(objs[c.node]), policy)
    ]
    return LabelReport(changes, dry_run, _daemon_notes(starting, "start", dry_run))


def unlabel(
    ctx: Context, *, nodes: Sequence[str], dry_run: bool = False, force: bool = False
) -> LabelReport:
    """Remove the opt-in label (allowed on any class: it is the fix for a denied node).

    When the live config selects by the label, unlabelling stops the node's daemons at
    once; with fractional pods running there that kills their CUDA contexts, so it is
    refused unless ``force``.

    Raises:
        Refused: fractional pods would lose their daemon (exit 1).
        UsageError: a node name is empty or invalid, or the node does not exist.
    """
    policy = ctx.config.labels
    names = _unique(nodes)
    objs = _fetch(ctx, names)
    targets = [n for n in names if opted_in(labels_of(objs[n]), policy)]
    live = live_selector(ctx)
    stopping = [n for n in targets if _selection_flips(live, labels_of(objs[n]), policy)]
    if stopping and not force:
        hit = {n: _fractional_pods_on(ctx, n) for n in stopping}
        busy = {n: pods for n, pods in hit.items() if pods}
        if busy:
            raise Refused(
                "refusing to unlabel, nothing was changed: the live config selects by the "
                "opt-in label, so the daemons stop at once and these fractional pods lose "
                "their CUDA context: " + "; ".join(f"{n}: {', '.join(p)}" for n, p in busy.items()),
                hint="let the pods finish or move them first, or pass --force",
            )
    changes: list[Change] = []
    for n in names:
        if n not in targets:
            changes.append(Change(n, "unchanged", "not labelled"))
            continue
        try:
            _set_label(ctx, objs[n], None, dry_run=dry_run)
        except Conflict:  # changed since read: the label removal is still wanted
            _set_label(ctx, ctx.kube.get(NODES, n), None, dry_run=dry_run)
        changes.append(Change(n, "unlabelled", f"removed {policy.opt_in_key}"))
    return LabelReport(changes, dry_run, _daemon_notes(stopping, "stop", dry_run))


def _fractional_pods_on(ctx: Context, node: str) -> list[str]:
    m = fractions(ctx).matcher
    reservation_ns = ctx.config.pods.reservation_namespace
    out = []
    for page in ctx.kube.pod_pages(
        field_selector=f"spec.nodeName={node},{unfinished_selector()}",
        limit=ctx.config.pods.page_size,
    ):
        for pod in page.pods:
            verdict = classify_pod(
                pod.namespace, pod.annotations, m, reservation_namespace=reservation_ns
            )
            if verdict.kind is PodKind.FRACTIONAL:
                out.append(f"{pod.namespace}/{pod.name}")
    return out


def _selection_flips(
    live: dict[str, str] | None, labels: dict[str, str], policy: LabelPolicy
) -> bool:
    """Whether toggling the opt-in label changes whether the live config selects the node."""
    if live is None:
        return False
    without = {k: v for k, v in labels.items() if k != policy.opt_in_key}
    return matches(live, without) != matches(
        live, {**without, policy.opt_in_key: policy.opt_in_value}
    )


def _daemon_notes(names: list[str], verb: str, dry_run: bool) -> list[str]:
    if not names:
        return []
    when = f"would {verb}" if dry_run else verb
    return [f"the live config selects by the opt-in label: daemons {when} on {', '.join(names)}"]
