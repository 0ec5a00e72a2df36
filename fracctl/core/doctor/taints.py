"""Checks that GPU nodes are kept for GPU work: the taint is set, and honoured both ways.

The GPU taint is set, CPU pods stay off, and the GPU pods waiting for a node tolerate
it. Run only when the configuration requires the taint (``cluster.gpu_taint_required``).
Without it any pod can land on a GPU node and take the memory and CPU the GPU
workloads need; pods of the node agents, KAI's reservation pods, DaemonSet and
mirror pods are expected there.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from fracctl.core.doctor.helpers import (
    fractional,
    gpu_nodes,
    listing,
    name_of,
    ns_name,
    owned_by_daemonset,
    taint_not_required,
)
from fracctl.core.doctor.model import DoctorSettings, Signature, Snapshot, check
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.kube.podspec import gpu_requests, items, mapping, tolerates


def _tainted(node: Mapping[str, Any], key: str) -> bool:
    return any(
        mapping(t).get("key") == key and mapping(t).get("effect") == "NoSchedule"
        for t in items(mapping(node.get("spec")).get("taints"))
    )


@check(
    "gpu-node-taints",
    "GPU nodes are tainted for GPU workloads",
    reads=("nodes",),
    skip=taint_not_required,
)
def gpu_node_taints(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """GPU nodes without the GPU taint."""
    untainted = [
        name_of(n) for n in gpu_nodes(snap.nodes, s) if not _tainted(n, s.cluster.gpu_taint)
    ]
    if not untainted:
        return []
    return [
        Signature(
            f"GPU node(s) without the {s.cluster.gpu_taint}:NoSchedule taint: "
            f"{listing(untainted)}; any pod can land there and take the memory and CPU the GPU "
            "workloads need",
            "the taint was never set (the GPU Operator does not set it)",
            f"kubectl taint node {' '.join(untainted)} {s.cluster.gpu_taint}=present:NoSchedule "
            "(GPU workloads then need the toleration: fracctl lint rule FL008)",
            tuple(untainted),
        )
    ]


def unexpected_on_gpu_node(pod: Mapping[str, Any], gpus: Set[str], s: DoctorSettings) -> bool:
    """Whether a pod on one of the GPU nodes ``gpus`` is none of those expected there.

    Expected whatever they ask for: the node agents' pods, KAI's reservation pods,
    DaemonSet and mirror pods.
    """
    meta = mapping(pod.get("metadata"))
    return not (
        mapping(pod.get("spec")).get("nodeName") not in gpus
        or meta.get("namespace") in (s.pods.reservation_namespace, s.cluster.agent_namespace)
        or owned_by_daemonset(pod)
        or "kubernetes.io/config.mirror" in mapping(meta.get("annotations"))
    )


def runs_on_gpu_node_without_gpu(
    pod: Mapping[str, Any], gpus: Set[str], s: DoctorSettings, m: AnnotationMatcher
) -> bool:
    """Whether a pod runs on one of the GPU nodes ``gpus`` without asking for a GPU.

    Pods of the node agents, KAI's reservation pods, DaemonSet and mirror pods, and
    fractional pods are expected there.
    """
    return (
        unexpected_on_gpu_node(pod, gpus, s)
        and not fractional(pod, m, s)
        and not gpu_requests(mapping(pod.get("spec")), s.cluster.gpu_resources)
    )


@check(
    "gpu-nodes-for-gpu-pods",
    "only GPU workloads run on GPU nodes",
    reads=("nodes", "pods"),
    skip=taint_not_required,
)
def gpu_nodes_for_gpu_pods(
    snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher
) -> list[Signature]:
    """Pods that request no GPU but run on a GPU node (those counted only included)."""
    gpus = {name_of(n) for n in gpu_nodes(snap.nodes, s)}
    found = [
        f"{ns_name(pod)} on {mapping(pod.get('spec')).get('nodeName')}"
        for pod in snap.pods
        if runs_on_gpu_node_without_gpu(pod, gpus, s, m)
    ]
    total = len(found) + snap.strays_unlisted
    if not total:
        return []
    return [
        Signature(
            f"{total} pod(s) that request no GPU run on GPU nodes: {listing(found, total=total)}",
            f"the GPU nodes lack the {s.cluster.gpu_taint}:NoSchedule taint, or these pods "
            "tolerate every taint",
            "taint the GPU nodes (kubectl taint node NODE "
            f"{s.cluster.gpu_taint}=present:NoSchedule), then move these pods: "
            "kubectl -n NAMESPACE delete pod NAME",
            tuple(f.split(" on ")[0] for f in found),
            tuple(found),
            snap.strays_unlisted,
        )
    ]


def unscheduled_gpu_pod(pod: Mapping[str, Any], s: DoctorSettings, m: AnnotationMatcher) -> bool:
    """Whether a pod waits for a node and asks for a GPU (a fraction or a GPU resource)."""
    spec = mapping(pod.get("spec"))
    if spec.get("nodeName"):
        return False
    if mapping(pod.get("metadata")).get("namespace") == s.pods.reservation_namespace:
        return False
    return fractional(pod, m, s) or bool(gpu_requests(spec, s.cluster.gpu_resources))


@check(
    "gpu-pods-tolerate-gpu-taint",
    "GPU pods waiting for a node tolerate the GPU nodes' taint",
    reads=("nodes", "pods"),
    skip=taint_not_required,
)
def gpu_pods_tolerate_gpu_taint(
    snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher
) -> list[Signature]:
    """Unscheduled GPU pods without the toleration, while every GPU node has the taint.

    The live pod is the one admission let through: where the API server runs the
    ExtendedResourceToleration plugin, a pod that requests the resource named like the
    taint key carries the toleration by now (``plugin/pkg/admission/
    extendedresourcetoleration``), so what ``fracctl lint`` can only warn about is
    judged here. A fractional pod requests no GPU resource and never gets it that way.
    """
    key = s.cluster.gpu_taint
    nodes = gpu_nodes(snap.nodes, s)
    if not nodes or not all(_tainted(n, key) for n in nodes):
        return []  # an untainted GPU node can take them (gpu-node-taints reports it)
    stuck: list[str] = []
    evidence: list[str] = []
    for pod in snap.pods:
        if not unscheduled_gpu_pod(pod, s, m) or tolerates(mapping(pod.get("spec")), key):
            continue
        stuck.append(ns_name(pod))
        asks = gpu_requests(mapping(pod.get("spec")), s.cluster.gpu_resources)
        what = ", ".join(sorted({r for _, r, _ in asks})) if asks else "a fraction (no resource)"
        evidence.append(f"{ns_name(pod)} asks for {what}; tolerations name no {key}")
    if not stuck:
        return []
    return [
        Signature(
            f"{len(stuck)} GPU pod(s) wait for a node and never get one: every GPU node has "
            f"the {key}:NoSchedule taint and they do not tolerate it: {listing(stuck)}",
            "no toleration in the workload, and none added at admission (a fractional pod "
            "requests no GPU resource; for the others the API server does not run the "
            "ExtendedResourceToleration plugin)",
            f"add tolerations: [{{key: {key}, operator: Exists, effect: NoSchedule}}] to the "
            "workloads' pod templates (fracctl lint rules FL008 and FL013 find them before "
            "merge)",
            tuple(stuck),
            tuple(evidence),
        )
    ]
