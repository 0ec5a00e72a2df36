"""Reading what a procedure's choice depends on, then choosing (see :mod:`fracctl.core.procedures`).

Only the kinds that need them read more: a workload's pods (one LIST by its live
selector's labels), a Deployment's Services, a StatefulSet's claims and the
StorageClasses (one LIST each).
"""

from __future__ import annotations

from typing import Any

from fracctl.core.drift import ObjectDrift
from fracctl.core.kube.labels import selector_matches
from fracctl.core.kube.resources import PODS, PVCS, SERVICES, STORAGE_CLASSES
from fracctl.core.procedures import Choice, Facts, choose, next_step
from fracctl.errors import Forbidden
from fracctl.flows.context import Context
from fracctl.flows.engines.owners import carrier_of, said_by

Obj = dict[str, Any]

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
WORKLOADS = {("apps", "StatefulSet"), ("apps", "Deployment"), ("apps", "DaemonSet")}


def facts_for(
    ctx: Context, o: ObjectDrift, *, allow_active: bool = False, allow_new_ip: bool = False
) -> Facts:
    """What the cluster holds around ``o`` that its kind's choice reads."""
    facts = Facts(allow_active=allow_active, allow_new_ip=allow_new_ip)
    if (o.group, o.kind) in WORKLOADS and o.live is not None:
        facts.pods = selected_pods(ctx, o.live)
    if (o.group, o.kind) == ("apps", "Deployment") and o.live is not None:
        facts.services = ctx.kube.list(SERVICES, namespace=o.namespace)
    if (o.group, o.kind) == ("apps", "StatefulSet"):
        claims = ctx.kube.list(PVCS, namespace=o.namespace)
        facts.claims = {c["metadata"]["name"]: c for c in claims}
        classes = ctx.kube.list(STORAGE_CLASSES)
        facts.storage_classes = {c["metadata"]["name"]: c for c in classes}
        facts.default_class = next(
            (
                name
                for name, c in facts.storage_classes.items()
                if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS) == "true"
            ),
            "",
        )
    return facts


def selected_pods(ctx: Context, live: Obj) -> list[Obj]:
    """The pods in the object's namespace that its live selector selects."""
    selector = (live.get("spec") or {}).get("selector")
    labels = (selector or {}).get("matchLabels") or {}
    query = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or None
    namespace = live["metadata"].get("namespace")
    pods = ctx.kube.list(PODS, namespace=namespace, label_selector=query)
    return [p for p in pods if selector_matches(selector, p["metadata"].get("labels") or {})]


def procedure_for(ctx: Context, o: ObjectDrift, **options: bool) -> Choice:
    """The procedure (or refusal) for a ``needs-recreate`` object, from the cluster now."""
    t = ctx.config.target
    return choose(o, facts_for(ctx, o, **options), target=(t.group, t.kind, t.name))


def name_procedure(ctx: Context, o: ObjectDrift) -> None:
    """Set ``drift``'s procedure and next step for a ``needs-recreate`` object.

    An identity that may not read the object's pods or claims gets the command that
    names the procedure instead.
    """
    try:
        choice = procedure_for(ctx, o)
    except Forbidden as e:
        where = f" -n {o.namespace}" if o.namespace else ""
        o.next_step = (
            f"only delete + recreate can change it: fracctl recreate {o.kind}/{o.name}{where}"
            f"{ctx.source_args()} --dry-run names the safe procedure (this identity may not "
            f"read what it depends on: {e.status.message})"
        )
        return
    o.procedure = choice.to_dict()
    backend, owner = carrier_of(o.live)  # the engine its owner needs, else the direct one
    o.next_step = next_step(o, choice, ctx.source_args(), backend)
    said = said_by(ctx, owner) if owner else ""
    if said:
        o.note = f"{o.note}; {said}" if o.note else said
