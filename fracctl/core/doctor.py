"""Known failure signatures of fractional GPUs, judged from a read-only cluster snapshot.

Fractions fail in ways the workload's own events do not show: a node label the binder
needs, a RuntimeClass the reservation pod needs, a chart default image, a DaemonSet
that never came up on one node. Each check here turns one such signature into a
finding with the symptom, the likely cause and the fix as a command. Pure: the flow
reads the cluster into a :class:`Snapshot`; :func:`diagnose` decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.fractional import AnnotationMatcher, PodKind, classify
from fracctl.core.nodes import condition, describe_condition, is_ready, labels_of, matches
from fracctl.core.podspec import (
    gpu_requests,
    is_gpu_resource,
    items,
    mapping,
    pod_template,
    root_problems,
    unpinned,
)
from fracctl.core.policy import GPU_PRESENT, LabelPolicy, is_gpu_node
from fracctl.core.resources import ResourceRef

Obj = dict[str, Any]

KAI_CONFIG = ResourceRef("kai.scheduler", "v1", "configs", "Config", namespaced=False)
RUNTIME_CLASSES = ResourceRef("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False)
DAEMONSETS = ResourceRef("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
DEPLOYMENTS = ResourceRef("apps", "v1", "deployments", "Deployment", namespaced=True)

GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
SHARING_MODE = "NvFractions"
_FAILING = {
    "CrashLoopBackOff",
    "Error",
    "CreateContainerError",
    "CreateContainerConfigError",
    "RunContainerError",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "StartError",
}


@dataclass(frozen=True)
class Check:
    """One check doctor runs, in the install guide's troubleshooting order."""

    id: str
    title: str


CHECKS: tuple[Check, ...] = (
    Check("reservation-pods", "KAI's reservation pods run"),
    Check("runtime-class", "the GPU RuntimeClass exists"),
    Check("image-tags", "node-agent and scheduler images are pinned"),
    Check("agent-daemonsets", "node-agent DaemonSets are ready everywhere"),
    Check("gpu-memory-label", "GPU nodes carry nvidia.com/gpu.memory"),
    Check("gpu-present-label", "GPU nodes carry nvidia.com/gpu.present=true"),
    Check("kai-config", "KAI's Config runs in NvFractions mode"),
    Check("fractioning-config", "the fractioning config exists and is Ready"),
    Check("node-readiness", "selected nodes report the readiness condition"),
    Check("opted-in-selected", "nodes opted in for fractions are selected"),
    Check("pending-fractional-pods", "no fractional pod is stuck Pending"),
    Check("fractional-pods-non-root", "fractional pods run as non-root"),
    Check("gpu-node-taints", "GPU nodes are tainted for GPU workloads"),
    Check("gpu-nodes-for-gpu-pods", "only GPU workloads run on GPU nodes"),
)
CHECK_IDS = tuple(c.id for c in CHECKS)


@dataclass(frozen=True)
class Finding:
    """One failure signature found: what shows, why, and the command that fixes it."""

    check: str
    symptom: str
    cause: str
    fix: str
    subjects: tuple[str, ...] = ()  # the nodes, pods or objects concerned
    evidence: tuple[str, ...] = ()  # one line each

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {
            "check": self.check,
            "symptom": self.symptom,
            "cause": self.cause,
            "fix": self.fix,
            "subjects": list(self.subjects),
            "evidence": list(self.evidence),
        }


@dataclass(frozen=True)
class DoctorSettings:
    """What the checks need from the configuration."""

    policy: LabelPolicy
    condition: str
    fraction_annotations: Sequence[str]
    reservation_namespace: str
    target_kind: str
    target_name: str
    target_plural: str
    target_group: str
    agent_namespace: str
    agent_daemonsets: Sequence[str]
    scheduler_namespace: str
    scheduler_config: str
    runtime_class: str
    gpu_taint: str
    gpu_taint_required: bool
    gpu_resources: Sequence[str]


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
    agent_pods: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)  # agent and scheduler Deployments…
    pods: list[Obj] = field(default_factory=list)  # fractional, reservation, on GPU nodes
    events: dict[str, list[Obj]] = field(default_factory=dict)  # "ns/pod" -> its events


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


# --- helpers ---------------------------------------------------------------------------


def _name(obj: Mapping[str, Any]) -> str:
    return str(mapping(obj.get("metadata")).get("name") or "")


def _ns_name(obj: Mapping[str, Any]) -> str:
    meta = mapping(obj.get("metadata"))
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _listing(names: Sequence[str], most: int = 10) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def gpu_nodes(nodes: Sequence[Obj], s: DoctorSettings) -> list[Obj]:
    """GPU nodes: by their class, product or GPU labels, or a GPU resource in capacity."""
    out = []
    for n in nodes:
        labels = labels_of(n)
        capacity = {
            **mapping(mapping(n.get("status")).get("capacity")),
            **mapping(mapping(n.get("status")).get("allocatable")),
        }
        has_gpu = any(
            str(v) not in ("0", "")
            for k, v in capacity.items()
            if is_gpu_resource(str(k), s.gpu_resources)
        )
        if is_gpu_node(labels, s.policy) or GPU_MEMORY_LABEL in labels or has_gpu:
            out.append(n)
    return sorted(out, key=_name)


def _owned_by_daemonset(pod: Mapping[str, Any]) -> bool:
    return any(
        mapping(o).get("kind") == "DaemonSet"
        for o in items(mapping(pod.get("metadata")).get("ownerReferences"))
    )


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    for c in items(mapping(pod.get("status")).get("conditions")):
        c = mapping(c)
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def _container_troubles(pod: Mapping[str, Any]) -> list[str]:
    """``container: Reason: message`` for every container that is failing."""
    out = []
    status = mapping(pod.get("status"))
    for cs in items(status.get("containerStatuses")) + items(status.get("initContainerStatuses")):
        cs = mapping(cs)
        state = mapping(cs.get("state"))
        last = mapping(mapping(cs.get("lastState")).get("terminated"))
        waiting = mapping(state.get("waiting"))
        terminated = mapping(state.get("terminated"))
        if waiting.get("reason") in _FAILING or (
            terminated and terminated.get("exitCode") not in (0, None)
        ):
            detail = waiting or terminated
            text = f"{cs.get('name')}: {detail.get('reason') or 'failed'}"
            msg = str(detail.get("message") or "").strip()
            if msg:
                text += f": {msg.splitlines()[0][:300]}"
            # A crash loop's own message is the back-off; the last exit says why it crashed.
            last_msg = str(last.get("message") or "").strip()
            if last and detail is waiting:
                text += f" (last exit {last.get('exitCode')}"
                text += f": {last_msg.splitlines()[0][:300]})" if last_msg else ")"
            out.append(text)
    return out


# --- the checks ------------------------------------------------------------------------


def _reservation(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    failing: list[str] = []
    evidence: list[str] = []
    no_runtime: list[str] = []
    nvml = False
    for pod in snap.pods:
        if mapping(pod.get("metadata")).get("namespace") != s.reservation_namespace:
            continue
        phase = mapping(pod.get("status")).get("phase")
        troubles = _container_troubles(pod)
        if phase != "Failed" and not troubles:
            continue
        name = _name(pod)
        failing.append(name)
        runtime = mapping(pod.get("spec")).get("runtimeClassName")
        if runtime != s.runtime_class:
            no_runtime.append(name)
        text = "; ".join(troubles) or f"phase {phase}"
        nvml = nvml or "NVML" in text
        evidence.append(f"{name} (runtimeClassName {runtime or 'unset'}): {text}")
    if not failing:
        return []
    cause = "a reservation pod calls NVML and needs the GPU driver libraries"
    if no_runtime or nvml:
        cause = (
            f"the reservation pods do not run with the {s.runtime_class!r} RuntimeClass, so NVML "
            "is not found (unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND)"
        )
    patch = (
        '{"spec":{"binder":{"resourceReservation":{"runtimeClassName":"' + s.runtime_class + '"}}}}'
    )
    return [
        Finding(
            "reservation-pods",
            f"{len(failing)} reservation pod(s) in {s.reservation_namespace} failing; fractional "
            "pods stay Pending and their own events say nothing useful",
            cause,
            f"kubectl patch config.kai.scheduler {s.scheduler_config} --type=merge -p "
            f"'{patch}' && kubectl -n {s.reservation_namespace} delete pod --all",
            tuple(failing),
            tuple(evidence),
        )
    ]


def _runtime_class(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    if snap.runtime_class is not None:
        return []
    return [
        Finding(
            "runtime-class",
            f"no RuntimeClass {s.runtime_class!r}: GPU pods get no driver libraries and KAI's "
            "reservation pods fail to load NVML",
            "the GPU Operator (which creates it) is missing or was installed without its "
            "runtime class",
            "kubectl apply -f - <<'EOF'\n"
            f"{{apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {{name: "
            f"{s.runtime_class}}}, handler: {s.runtime_class}}}\nEOF",
            (s.runtime_class,),
        )
    ]


def _images(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    bad: list[str] = []
    agent = scheduler = False
    for w in snap.workloads:
        t = pod_template(w)
        if t is None:
            continue
        for key in ("containers", "initContainers"):
            for c in items(t.spec.get(key)):
                image = mapping(c).get("image")
                if isinstance(image, str) and unpinned(image):
                    meta = mapping(w.get("metadata"))
                    agent = agent or meta.get("namespace") == s.agent_namespace
                    scheduler = scheduler or meta.get("namespace") == s.scheduler_namespace
                    bad.append(f"{w.get('kind')}/{_ns_name(w)} {mapping(c).get('name')}: {image}")
    if not bad:
        return []
    fixes = []
    if agent:
        fixes.append(
            f"helm upgrade gpu-fractioning ./operator/charts -n {s.agent_namespace} "
            "--reuse-values --set images.operator.tag=$TAG --set images.fractiond.tag=$TAG "
            "--set images.metricsd.tag=$TAG --set images.mpsd.tag=$TAG"
        )
    if scheduler:
        fixes.append(
            f"helm upgrade kai-scheduler ./deployments/kai-scheduler -n {s.scheduler_namespace} "
            "--reuse-values --set global.tag=$TAG"
        )
    fix = " && ".join(fixes)
    return [
        Finding(
            "image-tags",
            f"{len(bad)} node-agent or scheduler container(s) run an unpinned image (no tag, "
            "latest, or a chart default such as 0.0.0): pods run the wrong code, or pull 0.0.0",
            "a tag value was left empty, so the chart fell back to its appVersion, which is not "
            "your build; the scheduler and node-agent forks then stop matching",
            fix,
            tuple(sorted({b.split(" ", 1)[0] for b in bad})),
            tuple(bad),
        )
    ]


def _daemonsets(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    out: list[Finding] = []
    missing = [n for n, ds in snap.daemonsets.items() if ds is None]
    if missing and snap.target is not None:
        out.append(
            Finding(
                "agent-daemonsets",
                f"DaemonSet(s) {', '.join(missing)} missing in {s.agent_namespace} although "
                f"{s.target_kind}/{s.target_name} exists: no MPS daemons run anywhere",
                "the gpu-fractioning operator is not running, or cannot create them",
                f"kubectl -n {s.agent_namespace} get deploy,pods -o wide && kubectl -n "
                f"{s.agent_namespace} logs deploy/gpu-fractioning-operator --tail=50",
                tuple(missing),
            )
        )
    nodes = {_name(n): n for n in snap.nodes}
    for name, ds in sorted(snap.daemonsets.items()):
        if ds is None:
            continue
        status = mapping(ds.get("status"))
        desired = int(status.get("desiredNumberScheduled") or 0)
        ready = int(status.get("numberReady") or 0)
        if desired == ready:
            continue
        selector = {
            str(k): str(v)
            for k, v in mapping(
                mapping(mapping(ds.get("spec")).get("selector")).get("matchLabels")
            ).items()
        }
        pods = [p for p in snap.agent_pods if selector and matches(selector, labels_of(p))]
        evidence: list[str] = []
        lagging: list[str] = []
        broken: list[str] = []  # pods not ready, whose logs say why
        with_pod: set[str] = set()
        for p in sorted(pods, key=_name):
            node = str(mapping(p.get("spec")).get("nodeName") or "")
            with_pod.add(node)
            if _pod_ready(p):
                continue
            lagging.append(node or "(unscheduled)")
            broken.append(_name(p))
            troubles = "; ".join(_container_troubles(p)) or str(
                mapping(p.get("status")).get("phase") or "not ready"
            )
            evidence.append(f"{node or '(unscheduled)'}: pod {_name(p)} not ready: {troubles}")
        template = pod_template(ds)
        node_selector = {
            str(k): str(v)
            for k, v in mapping(template.spec.get("nodeSelector") if template else {}).items()
        }
        for node_name, node_obj in sorted(nodes.items()):
            if (
                node_name not in with_pod
                and node_selector
                and matches(node_selector, labels_of(node_obj))
            ):
                lagging.append(node_name)
                evidence.append(f"{node_name}: no {name} pod")
        fix = (
            f"kubectl -n {s.agent_namespace} logs {broken[0]} --all-containers --tail=50"
            if broken
            else f"kubectl -n {s.agent_namespace} describe ds/{name}"
        )
        out.append(
            Finding(
                "agent-daemonsets",
                f"DaemonSet {s.agent_namespace}/{name}: {ready} of {desired} pod(s) ready; not "
                f"ready on: {_listing(lagging) or 'nodes not known'}",
                "usually a node failed the NRI or CRI socket check (fractiond), or mpsd ran out "
                "of host memory (about 50 MiB per GPU) or found no MPS protocol 3 driver",
                fix,
                tuple(lagging),
                tuple(evidence),
            )
        )
    return out


def _gpu_labels(snap: Snapshot, s: DoctorSettings) -> tuple[list[Finding], list[Finding]]:
    gpus = gpu_nodes(snap.nodes, s)
    no_memory = [_name(n) for n in gpus if not str(labels_of(n).get(GPU_MEMORY_LABEL) or "")]
    key, value = GPU_PRESENT
    no_present = [_name(n) for n in gpus if labels_of(n).get(key) != value]
    memory = (
        [
            Finding(
                "gpu-memory-label",
                f"GPU node(s) without {GPU_MEMORY_LABEL}: {_listing(no_memory)}; fractional pods "
                "stay Pending, and only a binder event says why (BindingError … failed to set "
                f"NvFractions memory annotation: node does not include {GPU_MEMORY_LABEL} label)",
                "GPU Feature Discovery (part of the GPU Operator), which sets the label, does "
                "not run on these nodes",
                "kubectl -n gpu-operator get pods -o wide | grep feature-discovery; by hand: "
                f"kubectl label node {' '.join(no_memory)} {GPU_MEMORY_LABEL}=<MiB per GPU>",
                tuple(no_memory),
            )
        ]
        if no_memory
        else []
    )
    present = (
        [
            Finding(
                "gpu-present-label",
                f"GPU node(s) without {key}={value}: {_listing(no_present)}; the mpsd and "
                "fractiond DaemonSets select nodes by it, so these get no daemons and nothing "
                "reports an error",
                "the GPU Operator's feature discovery does not run there, or the label was removed",
                f"kubectl label node {' '.join(no_present)} {key}={value}",
                tuple(no_present),
            )
        ]
        if no_present
        else []
    )
    return memory, present


def _kai_config(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    cfg = snap.kai_config
    if cfg is None:
        return [
            Finding(
                "kai-config",
                f"KAI's Config {s.scheduler_config} is missing ({snap.kai_config_missing}); the "
                "scheduler does not run in NvFractions mode",
                "KAI is not installed, or was installed from a chart without the operator",
                f"helm upgrade --install kai-scheduler ./deployments/kai-scheduler -n "
                f"{s.scheduler_namespace} --create-namespace --set "
                f"global.gpuSharingMode={SHARING_MODE}",
                (s.scheduler_config,),
            )
        ]
    mode = mapping(mapping(cfg.get("spec")).get("global")).get("gpuSharingMode")
    if mode == SHARING_MODE:
        return []
    patch = '{"spec":{"global":{"gpuSharingMode":"' + SHARING_MODE + '"}}}'
    return [
        Finding(
            "kai-config",
            f"KAI's Config {s.scheduler_config} has spec.global.gpuSharingMode "
            f"{mode!r}, not {SHARING_MODE!r}: fractional pods are not given MPS fractions",
            "the value is case-sensitive and must be exactly NvFractions; a chart value "
            "was left at its default or misspelt",
            f"kubectl patch config.kai.scheduler {s.scheduler_config} --type=merge -p "
            f"'{patch}' (and set global.gpuSharingMode={SHARING_MODE} in the chart values)",
            (s.scheduler_config,),
            (f"spec.global.gpuSharingMode: {mode!r}",),
        )
    ]


def _target(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    obj = snap.target
    kind = f"{s.target_kind}/{s.target_name}"
    if obj is None:
        return [
            Finding(
                "fractioning-config",
                f"{kind} is missing ({snap.target_missing}): no node runs fraction daemons, and "
                "KAI's Config reports DependenciesFulfilled=False",
                "it was never applied, or was deleted (a recreate that stopped half-way)",
                f"fracctl render --kind {s.target_kind} | kubectl apply -f -   (or: fracctl "
                "recreate --yes, which resumes a stopped recreate)",
                (kind,),
            )
        ]
    conditions = [mapping(c) for c in items(mapping(obj.get("status")).get("conditions"))]
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
        Finding(
            "fractioning-config",
            symptom,
            "the operator cannot bring the daemons up (see the reason), or is not running",
            f"kubectl describe {s.target_plural}.{s.target_group} {s.target_name} && kubectl -n "
            f"{s.agent_namespace} get pods -o wide",
            (kind,),
            evidence,
        )
    ]


def _readiness(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    if snap.target is None:
        return []
    selector = {
        str(k): str(v)
        for k, v in mapping(mapping(snap.target.get("spec")).get("nodeSelector")).items()
    }
    lagging = [
        n for n in snap.nodes if matches(selector, labels_of(n)) and not is_ready(n, s.condition)
    ]
    if not lagging:
        return []
    names = [_name(n) for n in sorted(lagging, key=_name)]
    evidence = tuple(
        f"{_name(n)}: {s.condition} {describe_condition(n, s.condition)}" for n in lagging
    )
    missing = all(condition(n, s.condition) is None for n in lagging)
    return [
        Finding(
            "node-readiness",
            f"node(s) selected by {s.target_kind}/{s.target_name} without {s.condition}=True: "
            f"{_listing(names)}; KAI refuses fractional pods there (node is not ready for "
            "fractional GPU scheduling)",
            "the node agents have not started there"
            + (" yet (no condition at all)" if missing else " (see the reason)"),
            f"kubectl -n {s.agent_namespace} get pods -o wide --field-selector "
            f"spec.nodeName={names[0]} && fracctl wait",
            tuple(names),
            evidence,
        )
    ]


def _opted_in(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    if snap.target is None:
        return []
    selector = {
        str(k): str(v)
        for k, v in mapping(mapping(snap.target.get("spec")).get("nodeSelector")).items()
    }
    label = {s.policy.opt_in_key: s.policy.opt_in_value}
    left_out = sorted(
        _name(n)
        for n in snap.nodes
        if matches(label, labels_of(n)) and not matches(selector, labels_of(n))
    )
    if not left_out:
        return []
    opt_in = f"{s.policy.opt_in_key}={s.policy.opt_in_value}"
    live = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "(empty)"
    return [
        Finding(
            "opted-in-selected",
            f"node(s) opted in for fractions ({opt_in}) that {s.target_kind}/{s.target_name} "
            f"does not select: {_listing(left_out)}; no daemons start there, KAI refuses "
            "fractional pods there (ConditionNotFound), and nothing reports an error",
            "the live spec.nodeSelector is not the one that selects the opt-in label: it is "
            "immutable, so a sync cannot change it (and Argo CD can still say Synced)",
            "fracctl drift && fracctl recreate --yes",
            tuple(left_out),
            (f"live spec.nodeSelector: {live}",),
        )
    ]


def _fractional(pod: Mapping[str, Any], m: AnnotationMatcher, s: DoctorSettings) -> bool:
    verdict = classify(
        mapping(pod.get("metadata")), m, reservation_namespace=s.reservation_namespace
    )
    return verdict.kind is PodKind.FRACTIONAL


def _pending(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Finding]:
    groups: dict[str, list[str]] = {}
    for pod in snap.pods:
        if mapping(pod.get("status")).get("phase") != "Pending" or not _fractional(pod, m, s):
            continue
        key = _ns_name(pod)
        messages: list[str] = []
        for e in snap.events.get(key, []):
            text = str(e.get("message") or "").strip()
            source = str(mapping(e.get("source")).get("component") or e.get("reportingComponent"))
            # The scheduler's and the binder's complaints; a kubelet's are about a pod that
            # was placed, and Normal events are progress.
            if text and e.get("type") == "Warning" and source != "kubelet":
                messages.append(f"{e.get('reason') or 'Event'}: {text}")
        for c in items(mapping(pod.get("status")).get("conditions")):
            c = mapping(c)
            if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("message"):
                messages.append(f"{c.get('reason') or 'Unschedulable'}: {c.get('message')}")
        for text in dict.fromkeys(messages):
            groups.setdefault(text, []).append(key)
    if not groups:
        return []
    text = " ".join(groups)
    if GPU_MEMORY_LABEL in text:
        cause = f"a node lacks the {GPU_MEMORY_LABEL} label the binder reads"
        fix = f"kubectl get nodes -L {GPU_MEMORY_LABEL}, then label or fix GPU Feature Discovery"
    elif "not ready for fractional GPU scheduling" in text:
        cause = "the pool's nodes do not report the readiness condition (daemons not running)"
        fix = "fracctl wait (and see the node-readiness finding)"
    else:
        cause = "the scheduler or binder refuses the pods; the messages say why"
        fix = "kubectl get events -n NAMESPACE --field-selector involvedObject.name=POD"
    pods = sorted({p for ps in groups.values() for p in ps})
    return [
        Finding(
            "pending-fractional-pods",
            f"{len(pods)} fractional pod(s) Pending with scheduler or binder messages "
            f"({len(groups)} distinct)",
            cause,
            fix,
            tuple(pods),
            tuple(f"{msg} [{len(ps)} pod(s): {_listing(ps, 5)}]" for msg, ps in groups.items()),
        )
    ]


def _non_root(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Finding]:
    evidence = []
    pods = []
    for pod in snap.pods:
        if not _fractional(pod, m, s):
            continue
        problems = root_problems(mapping(pod.get("spec")))
        if problems:
            pods.append(_ns_name(pod))
            evidence.append(f"{_ns_name(pod)}: {'; '.join(problems)}")
    if not pods:
        return []
    return [
        Finding(
            "fractional-pods-non-root",
            f"{len(pods)} fractional pod(s) may run as root: {_listing(pods)}",
            "in multi-user MPS the server is owned by root, so a root pod can raise its own "
            "cap or delete a neighbour's namespace",
            "set securityContext.runAsNonRoot: true and a non-zero runAsUser in each workload "
            "(fracctl lint catches it before merge, rule FL007), and enforce it with Pod "
            "Security Admission",
            tuple(pods),
            tuple(evidence),
        )
    ]


def _taints(snap: Snapshot, s: DoctorSettings) -> list[Finding]:
    if not s.gpu_taint_required:
        return []
    untainted = []
    for n in gpu_nodes(snap.nodes, s):
        taints = [mapping(t) for t in items(mapping(n.get("spec")).get("taints"))]
        if not any(t.get("key") == s.gpu_taint and t.get("effect") == "NoSchedule" for t in taints):
            untainted.append(_name(n))
    if not untainted:
        return []
    return [
        Finding(
            "gpu-node-taints",
            f"GPU node(s) without the {s.gpu_taint}:NoSchedule taint: {_listing(untainted)}; "
            "any pod can land there and take the memory and CPU the GPU workloads need",
            "the taint was never set (the GPU Operator does not set it)",
            f"kubectl taint node {' '.join(untainted)} {s.gpu_taint}=present:NoSchedule "
            "(GPU workloads then need the toleration: fracctl lint rule FL008)",
            tuple(untainted),
        )
    ]


def _cpu_pods(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Finding]:
    if not s.gpu_taint_required:
        return []
    gpus = {_name(n) for n in gpu_nodes(snap.nodes, s)}
    found = []
    for pod in snap.pods:
        meta = mapping(pod.get("metadata"))
        node = mapping(pod.get("spec")).get("nodeName")
        if (
            node not in gpus
            or meta.get("namespace") in (s.reservation_namespace, s.agent_namespace)
            or _owned_by_daemonset(pod)
            or "kubernetes.io/config.mirror" in mapping(meta.get("annotations"))
            or _fractional(pod, m, s)
            or gpu_requests(mapping(pod.get("spec")), s.gpu_resources)
        ):
            continue
        found.append(f"{_ns_name(pod)} on {node}")
    if not found:
        return []
    return [
        Finding(
            "gpu-nodes-for-gpu-pods",
            f"{len(found)} pod(s) that request no GPU run on GPU nodes: {_listing(found)}",
            f"the GPU nodes lack the {s.gpu_taint}:NoSchedule taint, or these pods tolerate "
            "every taint",
            f"taint the GPU nodes (kubectl taint node NODE {s.gpu_taint}=present:NoSchedule), "
            "then move these pods: kubectl -n NAMESPACE delete pod NAME",
            tuple(f.split(" on ")[0] for f in found),
            tuple(found),
        )
    ]


def diagnose(snap: Snapshot, s: DoctorSettings) -> DoctorReport:
    """Run every check on the snapshot.

    Returns:
        Each check's result, in :data:`CHECKS` order, and the findings in the same order.
    """
    m = AnnotationMatcher.compile(s.fraction_annotations)
    memory, present = _gpu_labels(snap, s)
    found: dict[str, list[Finding]] = {
        "reservation-pods": _reservation(snap, s),
        "runtime-class": _runtime_class(snap, s),
        "image-tags": _images(snap, s),
        "agent-daemonsets": _daemonsets(snap, s),
        "gpu-memory-label": memory,
        "gpu-present-label": present,
        "kai-config": _kai_config(snap, s),
        "fractioning-config": _target(snap, s),
        "node-readiness": _readiness(snap, s),
        "opted-in-selected": _opted_in(snap, s),
        "pending-fractional-pods": _pending(snap, s, m),
        "fractional-pods-non-root": _non_root(snap, s, m),
        "gpu-node-taints": _taints(snap, s),
        "gpu-nodes-for-gpu-pods": _cpu_pods(snap, s, m),
    }
    skipped = {
        "node-readiness": f"{s.target_kind}/{s.target_name} is missing"
        if snap.target is None
        else "",
        "opted-in-selected": f"{s.target_kind}/{s.target_name} is missing"
        if snap.target is None
        else "",
        "gpu-node-taints": "cluster.gpu_taint_required is false"
        if not s.gpu_taint_required
        else "",
        "gpu-nodes-for-gpu-pods": (
            "cluster.gpu_taint_required is false" if not s.gpu_taint_required else ""
        ),
    }
    results = []
    findings: list[Finding] = []
    for check in CHECKS:
        fs = found[check.id]
        findings.extend(fs)
        if fs:
            results.append(CheckResult(check, "finding", f"{len(fs)} finding(s)"))
        elif skipped.get(check.id):
            results.append(CheckResult(check, "skipped", skipped[check.id]))
        else:
            results.append(CheckResult(check, "ok"))
    return DoctorReport(results, findings)
