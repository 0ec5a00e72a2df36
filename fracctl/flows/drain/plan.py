"""The drain's plan, read-only.

The nodes to fence, the pods and groups to evict, the budgets they take, and every
reason the drain could not finish, found before any change.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from fracctl.core.doctor import KAI_CONFIG, SHARING_MODE
from fracctl.core.drain import (
    POD_GROUP,
    RESERVATION_PREFIX,
    Budget,
    DrainPlan,
    DrainPod,
    budgets_for,
    groups_of,
)
from fracctl.core.fractions.fractional import unfinished_selector
from fracctl.core.kube.nodes import condition, labels_of, matches, selector_of
from fracctl.core.kube.resources import NODES, PDBS, PODS
from fracctl.errors import NotFound
from fracctl.flows.context import Context
from fracctl.flows.drain.journal import Journal

Obj = dict[str, Any]


def kai_mode(ctx: Context) -> str | None:
    """Why KAI does not run in NvFractions mode (its fence would not hold), or None."""
    name = ctx.config.cluster.scheduler_config
    try:
        cfg = ctx.kube.get(KAI_CONFIG, name)
    except NotFound:
        return (
            f"KAI's Config {name} ({KAI_CONFIG.group}) is not there, so nothing proves KAI "
            "honours the readiness condition the drain fences"
        )
    mode = ((cfg.get("spec") or {}).get("global") or {}).get("gpuSharingMode")
    if mode != SHARING_MODE:
        return (
            f"KAI's Config {name} has spec.global.gpuSharingMode {mode!r}, not "
            f"{SHARING_MODE!r}: KAI does not gate fractions on the condition the drain fences"
        )
    return None


def plan(ctx: Context, *, live: Obj | None, desired: Obj, force: bool, journal: Journal | None,
         run_id: str = "") -> DrainPlan:  # fmt: skip
    """What the drain would fence and evict now, and why it would not finish.

    ``live`` is None once the config is gone (nothing is fenced then); ``desired``'s
    annotation prefix says which pods are fractional; ``force`` evicts bare pods too;
    ``journal`` is that of a drain this run resumes (its run id is kept); ``run_id`` names
    a new one (the lock's, so that the Lease, the fence and the journal name one run).
    """
    from fracctl.flows.guards.scan import fractions, scan_fractional_pods

    refusals: list[str] = []
    if (why := kai_mode(ctx)) is not None:
        refusals.append(why)
    nodes = ctx.kube.list(NODES)
    fence = _fence(ctx, nodes, live, journal, refusals)

    scan = scan_fractional_pods(ctx, fractions(ctx, live=live, desired=desired))
    bound = [p for p in scan.pods if p.node]
    refusals += _unfenced(ctx.config.condition, nodes, [p.node or "" for p in bound])
    full = _unfinished_pods(ctx, {p.namespace for p in bound})
    pods, labels, grace = _to_evict(full, {f"{p.namespace}/{p.name}" for p in bound})
    bare = [p.key for p in pods if not p.owner]
    if bare and not force:
        refusals.append(
            f"bare pod(s) with no controller to recreate them: {_some(bare)}; evicting deletes "
            "them for good (--force evicts them anyway)"
        )
    pdbs = [
        b for ns in sorted({p.namespace for p in pods}) for b in ctx.kube.list(PDBS, namespace=ns)
    ]
    budgets, doubled = budgets_for(pods, pdbs, labels)
    if doubled:
        refusals.append(
            f"pod(s) selected by more than one PodDisruptionBudget, which the Eviction API "
            f"never evicts (500): {_some(doubled)}"
        )
    refusals += _budget_refusals(budgets)
    finish, wait = _admitted(ctx, pods, pdbs, full)
    return DrainPlan(
        budget_wait=wait,
        finish=frozenset(finish),
        run_id=journal.run_id if journal else (run_id or secrets.token_hex(4)),
        nodes=fence,
        groups=groups_of(pods),
        budgets=budgets,
        force=force,
        refusals=refusals,
        resumed=journal is not None,
        grace=grace or 30,
    )


def _unfenced(cond_type: str, nodes: list[Obj], placed: list[str]) -> list[str]:
    """A refusal when fractional pods run on nodes (of ``placed``) without the condition.

    The drain fences that condition only: KAI gates such pods on another one.
    """
    by_name = {n["metadata"]["name"]: n for n in nodes}
    unfenced = sorted({n for n in placed if n in by_name and not condition(by_name[n], cond_type)})
    if not unfenced:
        return []
    return [
        f"fractional pods run on {', '.join(unfenced)}, which carry no {cond_type} "
        "condition: KAI gates them on another condition, which the drain would not fence"
    ]


def _unfinished_pods(ctx: Context, namespaces: set[str]) -> dict[str, Obj]:
    """Every unfinished pod of these namespaces, by ``namespace/name``."""
    full: dict[str, Obj] = {}
    for ns in sorted(namespaces):
        for pod in ctx.kube.list(PODS, namespace=ns, field_selector=unfinished_selector()):
            full[f"{ns}/{pod['metadata']['name']}"] = pod
    return full


def _to_evict(
    full: Mapping[str, Obj], fractional: set[str]
) -> tuple[list[DrainPod], dict[str, Mapping[str, str]], int]:
    """The pods to evict, their labels, and their longest grace period.

    The fractional pods placed on a node and every member of their PodGroups; never KAI's
    reservation pods.
    """
    wanted_groups = {
        (k.split("/", 1)[0], _group(full[k])) for k in fractional if k in full and _group(full[k])
    }
    pods: list[DrainPod] = []
    labels: dict[str, Mapping[str, str]] = {}
    grace = 0
    for key, pod in full.items():
        ns, name = key.split("/", 1)
        on_node = bool((pod.get("spec") or {}).get("nodeName"))
        member = (ns, _group(pod)) in wanted_groups
        if not on_node or name.startswith(RESERVATION_PREFIX) or not (key in fractional or member):
            continue
        pods.append(DrainPod.of(pod, fractional=key in fractional))
        labels[key] = labels_of(pod)
        grace = max(grace, int((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 30))
    return pods, labels, grace


def _fence(
    ctx: Context, nodes: list[Obj], live: Obj | None, journal: Journal | None, refusals: list[str]
) -> list[str]:
    """The nodes to fence: the journal's, and the old selection's that are open now."""
    t, cond_type = ctx.config.target, ctx.config.condition
    fence: list[str] = sorted(journal.nodes) if journal else []
    if live is None:
        return fence
    sel = selector_of(live, t.selector_field) or {}
    old = [n for n in nodes if sel and matches(sel, labels_of(n))]
    open_now = [
        n["metadata"]["name"]
        for n in old
        if str((condition(n, cond_type) or {}).get("status")) == "True"
    ]
    if old and not any(condition(n, cond_type) for n in old):
        refusals.append(
            f"no node {t.kind}/{t.name} selects carries the condition {cond_type}, so "
            "fencing it would not stop KAI (is the readiness condition in fracctl.yaml "
            "the one this cluster's operator writes?)"
        )
    return sorted(set(fence) | set(open_now))


def _budget_refusals(budgets: list[Budget]) -> list[str]:
    refusals = []
    for b in budgets:
        if b.stale:
            refusals.append(
                f"PodDisruptionBudget {b.namespace}/{b.name}: its status is not computed for "
                "its current generation, so the Eviction API refuses every eviction it covers"
            )
        elif not b.ok:
            refusals.append(
                f"PodDisruptionBudget {b.namespace}/{b.name} allows {b.allowed} disruption(s) "
                f"and the drain needs {b.needs} at once (while fractions are fenced the "
                "evicted pods' replacements stay Pending, so it will not recover)"
            )
    return refusals


def _admitted(
    ctx: Context, pods: list[DrainPod], pdbs: list[Obj], full: Mapping[str, Obj]
) -> tuple[set[str], float]:
    """The admitted evictions the drain finishes, and the seconds the others may wait.

    A budget lists a pod in ``status.disruptedPods`` from the moment the API server admits
    its eviction until the pod is deleted, or for the disruption controller's
    ``DeletionTimeout``. A client killed between the two leaves the pod listed and not
    deleted: out of the healthy count, so a budget at its floor answers 429 to every
    eviction until the record lapses. The budget counted that pod's disruption already;
    where the identity may delete pods, a delete of that incarnation finishes it at once.
    """
    from fracctl.core.drain import DELETION_TIMEOUT, FINISH_MARGIN
    from fracctl.core.recreate.lock import parse_time

    planned = {p.key for p in pods}
    now = ctx.clock.now()
    left: dict[str, float] = {}
    for pdb in pdbs:
        ns = pdb["metadata"].get("namespace")
        for name, stamp in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            key, when = f"{ns}/{name}", parse_time(stamp)
            if key in planned and when is not None:
                left[key] = max(left.get(key, 0.0), when.timestamp() + DELETION_TIMEOUT - now)
    may: dict[str, bool] = {}
    finish: set[str] = set()
    for key, seconds in left.items():
        ns = key.split("/", 1)[0]
        if ns not in may:
            may[ns] = ctx.kube.can_i("delete", PODS, None, ns)[0]
        if may[ns] and seconds > FINISH_MARGIN and _admitted_after(key, full, pdbs):
            finish.add(key)
    return finish, max((s for k, s in left.items() if k not in finish), default=0.0)


def _admitted_after(key: str, full: Mapping[str, Obj], pdbs: list[Obj]) -> bool:
    """Whether every budget record of the pod is later than this incarnation's creation.

    A record is keyed by name: it could be an older pod's of the same name.
    """
    from fracctl.core.recreate.lock import parse_time

    ns, name = key.split("/", 1)
    created = parse_time((full.get(key) or {}).get("metadata", {}).get("creationTimestamp"))
    stamps = [
        parse_time(((b.get("status") or {}).get("disruptedPods") or {}).get(name))
        for b in pdbs
        if b["metadata"].get("namespace") == ns
    ]
    seen = [s for s in stamps if s is not None]
    return created is not None and bool(seen) and all(s >= created for s in seen)


def _group(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("annotations") or {}).get(POD_GROUP) or "")


def _some(items: list[str], most: int = 10) -> str:
    more = f" and {len(items) - most} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more
