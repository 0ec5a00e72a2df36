"""Checks that GPU nodes are kept for GPU work: the GPU taint is set, and CPU pods stay off.

Run only when the configuration requires the taint (``cluster.gpu_taint_required``).
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
from fracctl.core.fractional import AnnotationMatcher
from fracctl.core.podspec import gpu_requests, items, mapping


@check(
    "gpu-node-taints",
    "GPU nodes are tainted for GPU workloads",
    reads=("nodes",),
    skip=taint_not_required,
)
def gpu_node_taints(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """GPU nodes without the GPU taint."""
    untainted = []
    for n in gpu_nodes(snap.nodes, s):
        taints = [mapping(t) for t in items(mapping(n.get("spec")).get("taints"))]
        if not any(
            t.get("key") == s.cluster.gpu_taint and t.get("effect") == "NoSchedule" for t in taints
        ):
            untainted.append(name_of(n))
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
