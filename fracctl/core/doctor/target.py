"""Checks on the fractioning config: it exists and is Ready, and its nodes are the right ones.

The config's ``spec.nodeSelector`` picks the nodes that run fraction daemons; KAI
gives fractions only on nodes that report the readiness condition. The selector is
immutable, so a node opted in after the config was made may be left out with no
error anywhere.
"""

from __future__ import annotations

from fracctl.core.doctor.helpers import listing, name_of, target_selector, without_target
from fracctl.core.doctor.model import DoctorSettings, Signature, Snapshot, check
from fracctl.core.drain import FENCE_REASON, fence_run
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.fractions.policy import is_denied
from fracctl.core.kube.nodes import (
    condition,
    describe_condition,
    is_ready,
    labels_of,
    matches,
    selector_string,
)
from fracctl.core.kube.podspec import items, mapping
from fracctl.core.recreate.operator import (
    DRIVER_UPGRADE_CONDITION,
    DRIVER_UPGRADE_LABEL,
    driver_upgrades,
)


@check(
    "fractioning-config",
    "the fractioning config exists and is Ready",
    reads=("target", "target_missing"),
)
def fractioning_config(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """The config is missing, or its conditions are not all True."""
    obj = snap.target
    kind = f"{s.target.kind}/{s.target.name}"
    if obj is None:
        return [
            Signature(
                f"{kind} is missing ({snap.target_missing}): no node runs fraction daemons, and "
                "KAI's Config reports DependenciesFulfilled=False",
                "it was never applied, or was deleted (a recreate that stopped half-way)",
                f"{snap.recreate_command}: it creates the config from git through "
                "recreate.backend after its guards (a bare kubectl apply would bypass the "
                "chart whose hook it may be), and resumes a recreate that stopped",
                (kind,),
            )
        ]
    conditions = [
        mapping(c)
        for c in items(mapping(obj.get("status")).get("conditions"))
        # False is its healthy state; the driver-upgrade check reads it.
        if mapping(c).get("type") != DRIVER_UPGRADE_CONDITION
    ]
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") == "True":
        return []
    if ready is None and conditions and all(c.get("status") == "True" for c in conditions):
        return []  # a release that names its conditions otherwise, all of them fine
    bad = [c for c in conditions if c.get("status") != "True"] or ([ready] if ready else [])
    evidence = tuple(
        f"{c.get('type')}={c.get('status')} ({c.get('reason') or 'no reason'}"
        + (f": {c.get('message')}" if c.get("message") else "")
        + ")"
        for c in bad
    )
    symptom = (
        f"{kind} is not Ready: " + "; ".join(evidence)
        if evidence
        else f"{kind} has no status conditions: the operator has not reconciled it"
    )
    return [
        Signature(
            symptom,
            "the operator cannot bring the daemons up (see the reason), or is not running",
            f"kubectl describe {s.target.plural}.{s.target.group} {s.target.name} && kubectl -n "
            f"{s.cluster.agent_namespace} get pods -o wide",
            (kind,),
            evidence,
        )
    ]


@check(
    "node-readiness",
    "selected nodes report the readiness condition",
    reads=("target", "nodes"),
    skip=without_target,
)
def node_readiness(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """Nodes the config selects that do not report the readiness condition as True."""
    if snap.target is None:
        return []
    selector = target_selector(snap.target)
    # A drain's fence is not an agent that failed to start: drain-fence names it, and its run.
    # A denied node must never be ready: denied-selected names it, and a different fix.
    lagging = [
        n
        for n in snap.nodes
        if matches(selector, labels_of(n))
        and not is_ready(n, s.condition)
        and fence_run(condition(n, s.condition)) is None
        and not is_denied(labels_of(n), s.labels)
    ]
    if not lagging:
        return []
    names = [name_of(n) for n in sorted(lagging, key=name_of)]
    evidence = tuple(
        f"{name_of(n)}: {s.condition} {describe_condition(n, s.condition)}" for n in lagging
    )
    missing = all(condition(n, s.condition) is None for n in lagging)
    return [
        Signature(
            f"node(s) selected by {s.target.kind}/{s.target.name} without {s.condition}=True: "
            f"{listing(names)}; KAI refuses fractional pods there (node is not ready for "
            "fractional GPU scheduling)",
            "the node agents have not started there"
            + (" yet (no condition at all)" if missing else " (see the reason)"),
            f"kubectl -n {s.cluster.agent_namespace} get pods -o wide --field-selector "
            f"spec.nodeName={names[0]} && fracctl wait",
            tuple(names),
            evidence,
        )
    ]


@check(
    "unfinished-recreates",
    "no recreate KIND/NAME stopped half-way on this machine",
    reads=("unfinished",),
)
def unfinished_recreates(
    snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher
) -> list[Signature]:
    """Each open journal: the object is not done whatever the cluster shows."""
    return [
        Signature(
            f"{u.key}: {u.said()}",
            "the run was interrupted (Ctrl-C, a kill, a lost machine) or failed after its "
            "first change; its journal keeps what the rerun must finish",
            f"rerun {u.rerun}",
            (u.key,),
            (f"journal: {u.path}",),
        )
        for u in snap.unfinished
    ]


@check(
    "denied-selected",
    "the config selects no node of a denied GPU class or product",
    reads=("target", "nodes"),
    skip=without_target,
)
def denied_selected(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """Nodes of a denied class (the H200 inference nodes) that the live selector picks."""
    if snap.target is None:
        return []
    selector = target_selector(snap.target)
    denied = sorted(
        name_of(n)
        for n in snap.nodes
        if matches(selector, labels_of(n)) and is_denied(labels_of(n), s.labels)
    )
    if not denied:
        return []
    live = selector_string(selector) or "(empty)"
    classes = ", ".join(s.labels.denied_classes) or "none"
    return [
        Signature(
            f"{s.target.kind}/{s.target.name} selects node(s) of a denied GPU class or "
            f"product: {listing(denied)}; the operator places MPS daemons there, and KAI "
            "would give fractions on them once they report ready",
            "the live spec.nodeSelector matches the denied nodes' labels (a selector that "
            "names a GPU feature every class has, as the operator chart's default does, "
            "rather than the opt-in label); it is immutable, so only a recreate changes it",
            "fracctl nodes check, then fracctl drift && fracctl recreate --yes (git's "
            "selector: the opt-in label, which no denied node carries)",
            tuple(denied),
            (
                f"live spec.nodeSelector: {live}",
                f"denied classes ({s.labels.class_key}): {classes}",
            ),
        )
    ]


@check(
    "opted-in-selected",
    "nodes opted in for fractions are selected",
    reads=("target", "nodes"),
    skip=without_target,
)
def opted_in_selected(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """Nodes that carry the opt-in label but that the live selector leaves out."""
    if snap.target is None:
        return []
    selector = target_selector(snap.target)
    label = {s.labels.opt_in_key: s.labels.opt_in_value}
    left_out = sorted(
        name_of(n)
        for n in snap.nodes
        if matches(label, labels_of(n)) and not matches(selector, labels_of(n))
    )
    if not left_out:
        return []
    opt_in = f"{s.labels.opt_in_key}={s.labels.opt_in_value}"
    live = selector_string(selector) or "(empty)"
    return [
        Signature(
            f"node(s) opted in for fractions ({opt_in}) that {s.target.kind}/{s.target.name} "
            f"does not select: {listing(left_out)}; no daemons start there, KAI refuses "
            "fractional pods there (ConditionNotFound), and nothing reports an error",
            "the live spec.nodeSelector is not the one that selects the opt-in label: it is "
            "immutable, so a sync cannot change it (and Argo CD can still say Synced)",
            "fracctl drift && fracctl recreate --yes",
            tuple(left_out),
            (f"live spec.nodeSelector: {live}",),
        )
    ]


@check(
    "guard-policy",
    "only fracctl recreate may delete the config (the guard policy is bound)",
    reads=("guard_problems", "guard_unreadable"),
)
def guard_policy(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """The admission policy that holds deletes of the config to a recreate is off."""
    kind = f"{s.target.kind}/{s.target.name}"
    if snap.guard_unreadable:
        return [
            Signature(
                f"cannot tell whether deletes of {kind} are guarded: {snap.guard_unreadable}",
                "the identity may not read validatingadmissionpolicies and their bindings",
                "grant the doctor role (fracctl rbac print --role doctor) and rerun",
                (kind,),
            )
        ]
    if not snap.guard_problems:
        return []
    return [
        Signature(
            f"{kind} can be deleted outside fracctl recreate (kubectl delete, Argo CD's "
            "Force+Replace or prune, Flux's force) while fractional pods run: "
            + "; ".join(snap.guard_problems),
            "the guard policy is not installed, or not bound to the target and the lock Lease",
            "fracctl policy apply   (see runbooks/guard-policy.md)",
            (kind,),
            tuple(snap.guard_problems),
        )
    ]


@check(
    "drain-fence",
    "no node is fenced by a drain",
    reads=("nodes", "lock_holder"),
)
def drain_fence(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """Nodes fenced by ``recreate --drain``: a run under way, or one that stopped."""
    fenced = {name_of(n): run for n in snap.nodes if (run := fence_run(condition(n, s.condition)))}
    if not fenced:
        return []
    runs = ", ".join(sorted(set(fenced.values())))
    blocked = f"KAI places no fractional pod there ({s.condition} False, reason {FENCE_REASON})"
    if snap.lock_holder:  # a recreate runs: the fence is meant, and says whose it is
        return [
            Signature(
                f"{listing(sorted(fenced))} fenced by fracctl drain run {runs}, under way: "
                f"the recreate lock is held by {snap.lock_holder}; {blocked}",
                "a recreate --drain is running: it evicts the fractional pods, recreates the "
                "config and reopens scheduling on the nodes it then selects",
                "wait for that run to finish; if it was killed, its lock Lease expires and "
                "this check then names the undo (runbooks/drain.md)",
                tuple(sorted(fenced)),
            )
        ]
    return [
        Signature(
            f"{listing(sorted(fenced))} fenced by fracctl drain run {runs}, which is not "
            f"running: {blocked}",
            "a recreate --drain stopped (killed, or its machine lost) before it finished",
            "fracctl recreate --abort   (undoes a drain that has not reached the delete; "
            "after it: fracctl recreate --drain --yes goes forward; see runbooks/drain.md)",
            tuple(sorted(fenced)),
        )
    ]


@check(
    "driver-upgrade",
    "no driver upgrade moves the agents",
    reads=("target", "nodes"),
    skip=without_target,
)
def driver_upgrade(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """The config reports DriverUpgradeInProgress, or a node it selects is mid-upgrade."""
    assert snap.target is not None  # skipped otherwise
    sel = target_selector(snap.target)
    labels = {name_of(n): labels_of(n) for n in snap.nodes}
    selected = {n for n, lab in labels.items() if matches(sel, lab)}
    found = driver_upgrades(snap.target, labels, selected)
    if not found:
        return []
    nodes = sorted(n for n in selected if f"node {n}:" in " ".join(found))
    kind = f"{s.target.kind}/{s.target.name}"
    return [
        Signature(
            f"a driver upgrade moves the fraction agents: {'; '.join(found[:3])}"
            + (f" and {len(found) - 3} more" if len(found) > 3 else ""),
            "the GPU Operator is upgrading the driver; the gpu-fractioning operator stops and "
            "restarts the agents on those nodes itself, and fractional pods there lose MPS",
            f"wait for it: kubectl get nodes -L {DRIVER_UPGRADE_LABEL} (upgrade-done) and "
            f"kubectl get {s.target.plural}.{s.target.group} {s.target.name} -o "
            f"jsonpath='{{.status.conditions}}'; fracctl recreate refuses meanwhile",
            tuple(nodes) or (kind,),
            tuple(found),
        )
    ]
