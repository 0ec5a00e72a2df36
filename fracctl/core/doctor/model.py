"""The data doctor works on: the snapshot it reads, the settings, checks and their findings.

A check is one :class:`Check` declaration, made with the :func:`check` decorator on its
judgement function: its id, its title, the :class:`Snapshot` fields it reads, when it
is skipped, and the function that turns the snapshot into failure signatures. The
check's id is stamped onto each :class:`Signature` it returns, making a
:class:`Finding`; :mod:`fracctl.core.doctor.registry` lists the checks in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.fractions.policy import LabelPolicy
from fracctl.core.gitops.helm_release import Release
from fracctl.core.kube import resources
from fracctl.core.kube.resources import ResourceRef
from fracctl.core.procedures.model import Unfinished
from fracctl.core.settings import ClusterSettings, PodsSettings, TargetSettings

Obj = dict[str, Any]

KAI_CONFIG = ResourceRef("kai.scheduler", "v1", "configs", "Config", namespaced=False)
RUNTIME_CLASSES = ResourceRef("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False)
DAEMONSETS, DEPLOYMENTS = resources.DAEMONSETS, resources.DEPLOYMENTS

GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"

#: How many subjects a finding lists, and how many evidence lines. One finding can name a
#: large share of a cluster (every CPU pod on its GPU nodes): it lists the first LISTED
#: and counts the rest (:attr:`Finding.unlisted`), so a report's size, and the memory
#: doctor needs to make it, do not grow with the cluster.
LISTED = 1000
SHARING_MODE = "NvFractions"

# The pod fields the checks read, as JSON paths: doctor reads pods through a paged scan
# that decodes these and nothing else, so a check that reads another field of a pod
# names it here. Every pod of the cluster is looked at for SCAN_POD_FIELDS; the pods
# of the agent and reservation namespaces also for their labels and container states.
SCAN_POD_FIELDS: tuple[str, ...] = (
    "metadata.name",
    "metadata.namespace",
    "metadata.annotations",
    "metadata.ownerReferences[].kind",
    "spec.nodeName",
    "spec.runtimeClassName",
    "spec.securityContext.runAsUser",
    "spec.securityContext.runAsNonRoot",
    "spec.tolerations[].key",
    "spec.tolerations[].operator",
    "spec.tolerations[].effect",
    *(
        f"spec.{c}[].{f}"
        for c in ("containers", "initContainers")
        for f in (
            "name",
            "resources.limits",
            "resources.requests",
            "securityContext.runAsUser",
            "securityContext.runAsNonRoot",
        )
    ),
    "status.phase",
    "status.conditions[].type",
    "status.conditions[].status",
    "status.conditions[].reason",
    "status.conditions[].message",
)
NAMESPACE_POD_FIELDS: tuple[str, ...] = (
    *SCAN_POD_FIELDS,
    "metadata.labels",
    *(
        f"status.{c}[].{f}"
        for c in ("containerStatuses", "initContainerStatuses")
        for f in (
            "name",
            "state.waiting.reason",
            "state.waiting.message",
            "state.terminated.exitCode",
            "state.terminated.reason",
            "state.terminated.message",
            "lastState.terminated.exitCode",
            "lastState.terminated.reason",
            "lastState.terminated.message",
        )
    ),
)


@dataclass(frozen=True)
class DoctorSettings:
    """What the checks need from the configuration: its sections, taken whole."""

    labels: LabelPolicy
    target: TargetSettings
    cluster: ClusterSettings
    pods: PodsSettings
    condition: str  # the node condition type that says the fraction daemons run
    # The Helm release ``(namespace, name)`` whose upgrade the configured backend runs
    # guarded (``recreate.backend: helm``), if any: its hook is the chosen path.
    guarded_release: tuple[str, str] | None = None
    # The Flux HelmRelease ``namespace/name`` that runs the operator's chart, when
    # ``recreate.backend: flux`` names one: the release is helm-controller's, not helm's.
    helmrelease: str = ""


@dataclass
class Snapshot:
    """What the flow read from the cluster (all of it with GET requests)."""

    nodes: list[Obj] = field(default_factory=list)
    runtime_class: Obj | None = None
    kai_config: Obj | None = None
    kai_config_missing: str = ""  # why it is absent: "no such object", "CRD not installed"
    target: Obj | None = None
    target_missing: str = ""
    daemonsets: dict[str, Obj | None] = field(default_factory=dict)
    agent_pods: list[Mapping[str, Any]] = field(default_factory=list)  # NAMESPACE_POD_FIELDS
    workloads: list[Obj] = field(default_factory=list)  # agent and scheduler Deployments…
    # Reservation pods (NAMESPACE_POD_FIELDS), fractional pods (SCAN_POD_FIELDS), and
    # pods on GPU nodes that request no GPU (their name, namespace and node alone).
    pods: list[Mapping[str, Any]] = field(default_factory=list)
    strays_unlisted: int = 0  # pods of that last kind beyond the first LISTED, counted only
    events: dict[str, list[Obj]] = field(default_factory=dict)  # "ns/pod" -> its events
    guard_problems: list[str] = field(default_factory=list)  # what keeps the guard off
    guard_unreadable: str = ""  # why the guard policy could not be read, if it could not
    lock_holder: str = ""  # who holds the recreate lock Lease now ("" when nobody does)
    # Helm's releases (newest revision each), read only when the live target is a hook.
    helm_releases: list[Release] = field(default_factory=list)
    helm_read: str = ""  # where they were read: "every namespace" or "namespace <ns>"
    helm_unreadable: str = ""  # why they could not be read, if they could not
    # What git's chart still changes of the release the configured backend upgrades
    # guarded ("" when nothing, or when git or helm could not be read).
    release_left: str = ""
    # The journals of recreate KIND/NAME runs that stopped half-way on this machine.
    unfinished: list[Unfinished] = field(default_factory=list)
    # The fix for a missing config: the recreate as this doctor was given its options.
    recreate_command: str = "fracctl recreate --yes"


@dataclass(frozen=True)
class Signature:
    """What a check's judgement found, before the check's id is put on it."""

    symptom: str
    cause: str
    fix: str
    subjects: tuple[str, ...] = ()  # the nodes, pods or objects concerned
    evidence: tuple[str, ...] = ()  # one line each
    unlisted: int = 0  # subjects found but counted only, beyond ``subjects``


@dataclass(frozen=True)
class Finding:
    """One failure signature found: what shows, why, and the command that fixes it."""

    check: str
    symptom: str
    cause: str
    fix: str
    subjects: tuple[str, ...] = ()  # the nodes, pods or objects concerned: the first LISTED
    evidence: tuple[str, ...] = ()  # one line each: the first LISTED
    unlisted: int = 0  # how many more subjects there are than ``subjects`` lists

    @classmethod
    def of(cls, check_id: str, sig: Signature) -> Finding:
        """The finding a check with id ``check_id`` makes of ``sig``, its lists cut to LISTED."""
        beyond = max(0, len(sig.subjects) - LISTED)
        return cls(
            check_id,
            sig.symptom,
            sig.cause,
            sig.fix,
            sig.subjects[:LISTED],
            sig.evidence[:LISTED],
            sig.unlisted + beyond,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "check": self.check,
            "symptom": self.symptom,
            "cause": self.cause,
            "fix": self.fix,
            "subjects": list(self.subjects),
            "unlisted": self.unlisted,
            "evidence": list(self.evidence),
        }


Judge = Callable[[Snapshot, DoctorSettings, AnnotationMatcher], list[Signature]]
Skip = Callable[[Snapshot, DoctorSettings], str]  # why the check cannot run, or ""
_SNAPSHOT_FIELDS = frozenset(f.name for f in fields(Snapshot))


@dataclass(frozen=True)
class Check:
    """One check doctor runs: its id, title, what it reads, and its judgement."""

    id: str
    title: str
    judge: Judge = field(compare=False, repr=False)
    reads: tuple[str, ...] = ()  # the Snapshot fields the judgement looks at
    skip: Skip | None = field(default=None, compare=False, repr=False)
    note: Skip | None = field(default=None, compare=False, repr=False)  # said on a pass

    def __post_init__(self) -> None:
        unknown = sorted(set(self.reads) - _SNAPSHOT_FIELDS)
        if unknown:
            raise ValueError(f"check {self.id}: no Snapshot field {', '.join(unknown)}")

    def skipped(self, snap: Snapshot, s: DoctorSettings) -> str:
        """Why the check does not run on this snapshot, or "" when it does."""
        return self.skip(snap, s) if self.skip is not None else ""

    def run(self, snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Finding]:
        """The check's findings on the snapshot."""
        return [Finding.of(self.id, sig) for sig in self.judge(snap, s, m)]


def check(
    id: str,
    title: str,
    *,
    reads: tuple[str, ...],
    skip: Skip | None = None,
    note: Skip | None = None,
) -> Callable[[Judge], Check]:
    """Declare a check: the decorated judgement function becomes a :class:`Check`.

    Args:
        id: the check's id, as reports and the runbook name it.
        title: what the check makes sure of, in a few words.
        reads: the :class:`Snapshot` fields the judgement looks at.
        skip: why the check cannot run on a snapshot ("" when it can); a skipped
            check's judgement is not called.
        note: what a pass says ("" for nothing), when the check passes.
    """

    def declare(judge: Judge) -> Check:
        return Check(id, title, judge, reads, skip, note)

    return declare


@dataclass
class CheckResult:
    """A check's outcome: ``ok``, ``finding`` or ``skipped`` (with why)."""

    check: Check
    status: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "id": self.check.id,
            "title": self.check.title,
            "status": self.status,
            "note": self.note,
        }


@dataclass
class DoctorReport:
    """Every check's result and every finding."""

    results: list[CheckResult]
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        """No finding."""
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "ok": self.ok,
            "checks": [r.to_dict() for r in self.results],
            "findings": [f.to_dict() for f in self.findings],
        }
