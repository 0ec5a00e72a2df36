"""The drain before a recreate: which nodes to fence, which pods to evict, what refuses.

Pure judgement over objects already read. The facts it rests on:

* KAI places a fractional pod only on a node whose readiness condition is ``True``
  (``pkg/scheduler/plugins/gpusharingnodevalidation``) and ignores the condition for
  whole-GPU pods, so setting it ``False`` fences fractions and nothing else. The fence
  carries :data:`FENCE_REASON` and the run's id, so that only a fence of this run is
  ever restored.
* The operator writes node conditions only while a daemon is not fully ready or the
  config was not ready before (``needsRequeue || wasUnhealthy`` in gpu-fractioning's
  ``gpufractioningconfig_controller.go``); in steady state it leaves a fence alone, and a
  fence it overwrites is written again.
* The Eviction API lets a pod go without consulting a budget when it is Pending,
  finished or already terminating, and an unready pod under most policies
  (``canIgnorePDB`` and the unhealthy-pod rules of Kubernetes'
  ``pkg/registry/core/pod/storage/eviction.go``); every other pod takes one of its
  budget's ``disruptionsAllowed``. It answers 500 when two budgets select a pod.
* While fractions are fenced everywhere an evicted pod's replacement stays Pending, so
  a budget does not recover by waiting: it must allow all its pods at once.
* KAI's stale-gang eviction deletes the rest of a PodGroup (annotation
  ``pod-group-name``) that falls below ``minMember``, regardless of budgets, so a group
  is evicted whole, its non-fractional members included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.kube.labels import selector_matches

Obj = dict[str, Any]

#: The reason of a fence written by fracctl; its message names the run.
FENCE_REASON = "FracctlDrain"
#: What to do about a refusal of the drain's plan, the same in the dry run's table and in
#: the error of ``--yes``: the runbook's table names the fix of each refusal.
REFUSAL_FIX = (
    'fix what it names, then rerun (the table under "Look first" in runbooks/drain.md '
    "gives each refusal's fix)"
)
#: KAI's annotation naming the PodGroup a pod belongs to.
POD_GROUP = "pod-group-name"
#: The name prefix of KAI's reservation pods (never evicted: without its reservation
#: pod KAI's binder deletes a fractional pod outright).
RESERVATION_PREFIX = "gpu-reservation"

#: Seconds the API server's budget keeps a pod in ``status.disruptedPods`` once it admitted
#: its eviction (the disruption controller's ``DeletionTimeout``): until then the pod is
#: out of the budget's healthy count. A client that went away mid-eviction can leave a
#: pod admitted but not deleted; evicting it again takes a second allowance.
DELETION_TIMEOUT = 120
#: Seconds an admitted eviction must still have in the budget's record for the drain to
#: finish it with a delete: later, the record may lapse before the delete lands (and the
#: delete would then take a disruption the budget never granted).
FINISH_MARGIN = 20

# Where the drain stands, in order; the journal records the last one reached.
FENCED = "fenced"
EVICTED = "evicted"
DELETING = "deleting"  # written right before the delete: from here there is no undo
PHASES = (FENCED, EVICTED, DELETING)


def journal_name(lock_name: str) -> str:
    """The drain journal's ConfigMap: beside the lock Lease, named after it."""
    return f"{lock_name}-drain"


#: One RBAC grant, as ``fracctl.core.rbac.RbacRule`` takes it: API groups, resources,
#: verbs, why, and the object names it is held to (none: every object).
Grant = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str, tuple[str, ...]]


def drain_grants(scheduler_config: str) -> list[Grant]:
    """What ``recreate --drain`` needs cluster-wide, beyond the recreate's own."""
    return [
        (
            ("",),
            ("pods/eviction",),
            ("create",),
            "--drain: evict the fractional pods through the Eviction API",
            (),
        ),
        (
            ("",),
            ("nodes/status",),
            ("patch",),
            "--drain: fence (and restore) the readiness condition KAI gates fractions on",
            (),
        ),
        (
            ("policy",),
            ("poddisruptionbudgets",),
            ("list",),
            "--drain: the budgets of the fractional pods, judged before any change",
            (),
        ),
        (
            ("kai.scheduler",),
            ("configs",),
            ("get",),
            "--drain: prove KAI runs in NvFractions mode (it gates fractions on the fence)",
            (scheduler_config,),
        ),
    ]


def journal_grants(lock_name: str) -> list[Grant]:
    """What ``recreate --drain`` needs of its journal, beside the lock Lease."""
    return [
        (
            ("",),
            ("configmaps",),
            ("create",),
            "--drain: write the drain's journal (RBAC cannot name an object not yet there)",
            (),
        ),
        (
            ("",),
            ("configmaps",),
            ("get", "update", "delete"),
            "--drain: read, update and clear the drain's journal",
            (journal_name(lock_name),),
        ),
    ]


def fence_message(run_id: str, target: str) -> str:
    """The fence's message: the run's id, and why."""
    return (
        f"fenced by fracctl drain run {run_id}: fractional pods are evicted before "
        f"{target} is recreated (undo: fracctl recreate --abort)"
    )


def fence_condition(type_: str, run_id: str, target: str, now: str) -> Obj:
    """The condition that fences one node."""
    return {
        "type": type_,
        "status": "False",
        "reason": FENCE_REASON,
        "message": fence_message(run_id, target),
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def fence_run(cond: Mapping[str, Any] | None) -> str | None:
    """The run id of the fracctl fence ``cond`` is, or None when it is not one."""
    if not cond or cond.get("reason") != FENCE_REASON or str(cond.get("status")) != "False":
        return None
    message = str(cond.get("message") or "")
    marker = "fracctl drain run "
    if marker not in message:
        return None
    return message.split(marker, 1)[1].split(":", 1)[0].strip() or None


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass(frozen=True)
class DrainPod:
    """A pod the drain evicts."""

    namespace: str
    name: str
    uid: str
    node: str
    group: str  # its PodGroup, "" when none
    owner: str  # ``Kind/name`` of its controller, "" for a bare pod
    fractional: bool
    takes_budget: bool  # its eviction takes one of a budget's disruptions

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, pod: Mapping[str, Any], *, fractional: bool) -> DrainPod:
        """From a pod object."""
        meta = pod.get("metadata") or {}
        owner = next(
            (
                f"{r.get('kind')}/{r.get('name')}"
                for r in meta.get("ownerReferences") or []
                if r.get("controller")
            ),
            "",
        )
        phase = (pod.get("status") or {}).get("phase")
        free = phase in ("Pending", "Succeeded", "Failed") or bool(meta.get("deletionTimestamp"))
        return cls(
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            node=str((pod.get("spec") or {}).get("nodeName") or ""),
            group=str((meta.get("annotations") or {}).get(POD_GROUP) or ""),
            owner=owner,
            fractional=fractional,
            takes_budget=not free and _ready(pod),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json`` and the journal."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "node": self.node,
            "group": self.group,
            "owner": self.owner,
            "fractional": self.fractional,
        }


@dataclass
class Group:
    """Pods evicted together: a PodGroup, or a single pod outside any."""

    namespace: str
    name: str  # the PodGroup's name, or the pod's own for a pod outside any group
    pods: list[DrainPod] = field(default_factory=list)
    pod_group: bool = True

    @property
    def label(self) -> str:
        """How the plan names it."""
        kind = "PodGroup" if self.pod_group else "pod"
        return f"{kind} {self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "pod_group": self.pod_group,
            "pods": [p.to_dict() for p in self.pods],
        }


@dataclass
class Budget:
    """A PodDisruptionBudget that covers pods the drain evicts."""

    namespace: str
    name: str
    allowed: int  # status.disruptionsAllowed
    pods: list[str] = field(default_factory=list)  # the covered pods the drain evicts
    needs: int = 0  # how many of them take a disruption
    stale: bool = False  # its status was not computed for its current generation

    @property
    def ok(self) -> bool:
        """Whether it lets every pod it covers go at once."""
        return not self.stale and self.allowed >= self.needs

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "namespace": self.namespace,
            "name": self.name,
            "disruptions_allowed": self.allowed,
            "needs": self.needs,
            "pods": self.pods,
            "ok": self.ok,
        }


def groups_of(pods: Iterable[DrainPod]) -> list[Group]:
    """Pods by PodGroup (a pod outside any is a group of its own), in a stable order."""
    found: dict[tuple[str, str, bool], Group] = {}
    for p in sorted(pods, key=lambda p: (p.namespace, p.group, p.name)):
        key = (p.namespace, p.group or p.name, bool(p.group))
        found.setdefault(key, Group(p.namespace, key[1], pod_group=bool(p.group))).pods.append(p)
    return list(found.values())


def budgets_for(
    pods: Iterable[DrainPod], pdbs: Iterable[Obj], labels: Mapping[str, Mapping[str, str]]
) -> tuple[list[Budget], list[str]]:
    """The budgets that cover ``pods``, and the pods more than one budget selects.

    ``labels`` maps ``namespace/name`` to each pod's labels.
    """
    by_ns: dict[str, list[Obj]] = {}
    for pdb in pdbs:
        by_ns.setdefault(str(pdb["metadata"].get("namespace")), []).append(pdb)
    budgets: dict[str, Budget] = {}
    doubled: list[str] = []
    for pod in pods:
        mine = [
            b
            for b in by_ns.get(pod.namespace, [])
            if selector_matches((b.get("spec") or {}).get("selector"), labels.get(pod.key, {}))
        ]
        if len(mine) > 1:
            names = ", ".join(sorted(str(b["metadata"]["name"]) for b in mine))
            doubled.append(f"{pod.key} (budgets {names})")
        for b in mine:
            meta, status = b["metadata"], b.get("status") or {}
            # A pod the budget lists as disrupted (an eviction was admitted, its delete has
            # not happened: the evicting client went away) is already out of its healthy
            # count (the disruption controller's countHealthyPods): it needs no allowance.
            paid = pod.name in (status.get("disruptedPods") or {})
            key = f"{pod.namespace}/{meta['name']}"
            budget = budgets.setdefault(
                key,
                Budget(
                    pod.namespace,
                    str(meta["name"]),
                    int(status.get("disruptionsAllowed") or 0),
                    stale=status.get("observedGeneration") != meta.get("generation"),
                ),
            )
            budget.pods.append(pod.key)
            budget.needs += int(pod.takes_budget and not paid)
    return sorted(budgets.values(), key=lambda b: (b.namespace, b.name)), doubled


@dataclass
class DrainPlan:
    """What the drain fences and evicts, and why it would not finish."""

    run_id: str
    nodes: list[str]  # the nodes to fence
    groups: list[Group]
    budgets: list[Budget]
    refusals: list[str] = field(default_factory=list)
    resumed: bool = False  # a journaled drain is picked up again
    grace: int = 30  # the longest termination grace period among the pods, in seconds
    force: bool = False  # bare pods are evicted too
    # Seconds until the budgets forget pods an earlier run's evictions admitted but did
    # not delete (see DELETION_TIMEOUT); their evictions may wait that long.
    budget_wait: float = 0.0
    # Pods (``namespace/name``) whose admitted eviction the drain finishes with a delete
    # (the identity may delete pods there, and the budget's record is fresh).
    finish: frozenset[str] = frozenset()

    @property
    def pods(self) -> list[DrainPod]:
        """Every pod to evict."""
        return [p for g in self.groups for p in g.pods]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "run": self.run_id,
            "resumed": self.resumed,
            "fence": self.nodes,
            "groups": [g.to_dict() for g in self.groups],
            "budgets": [b.to_dict() for b in self.budgets],
            "refusals": self.refusals,
        }
