"""How ``fracctl doctor`` reads pods: through the paging scan, cut down to what the checks read.

Every unfinished pod of the cluster is looked at, so pods come through the same paged
protobuf scan as preflight's (:meth:`~fracctl.adapters.kube.Kube.picked_pod_pages`).
Each is read for its metadata, its node and where its containers lie
(:data:`FIRST_POD_FIELDS`) and judged there, once; it is read again, for the fields the checks read
(:data:`~fracctl.core.doctor.model.SCAN_POD_FIELDS`), only when it is fractional or its
containers' bytes name a GPU resource on a GPU node or waiting for one. A page is
dropped once read. What is kept is what a check looks at: KAI's reservation pods,
every fractional pod, each GPU pod that waits for a node, and each pod on a GPU node
that asks for no GPU, the one finding that can name a large share of a cluster, in
the few bytes it is reported by: the first :data:`~fracctl.core.doctor.model.LISTED` of
them, as its finding lists, and a count of the rest, so doctor's memory does not grow
with the cluster's CPU pods.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from fracctl.adapters.kube import podpage
from fracctl.core.doctor import DoctorSettings, Snapshot, gpu_nodes, model
from fracctl.core.doctor.helpers import fractional, name_of
from fracctl.core.doctor.model import NAMESPACE_POD_FIELDS, SCAN_POD_FIELDS
from fracctl.core.doctor.taints import (
    gpu_nodes_for_gpu_pods,
    runs_on_gpu_node_without_gpu,
    unexpected_on_gpu_node,
    unscheduled_gpu_pod,
)
from fracctl.core.fractions.fractional import AnnotationMatcher, unfinished_selector
from fracctl.core.kube.podspec import gpu_name_fragments
from fracctl.flows.context import Context

#: What every pod is read for first: enough to tell a fractional pod, and a pod on a GPU
#: node that the CPU-pod check would name; the others are read again, whole as far as
#: SCAN_POD_FIELDS goes, only when that is not enough (:func:`read_pods`).
FIRST_POD_FIELDS: tuple[str, ...] = (
    "metadata.name",
    "metadata.namespace",
    "metadata.annotations",
    "metadata.ownerReferences[].kind",
    "spec.nodeName",
    # Where the containers lie in the body, for their bytes to be searched, not decoded.
    "spec.containers@",
    "spec.initContainers@",
)
_CONTAINERS_AT = ("containers@", "initContainers@")


@cache
def _pick(paths: tuple[str, ...]) -> podpage.Pick:
    return podpage.compile_pod(paths)


class StrayPod(Mapping[str, Any]):
    """A pod on a GPU node that asks for no GPU: its name, namespace and node, as JSON reads.

    ``{"metadata": {"name": …, "namespace": …}, "spec": {"nodeName": …}}``, built when
    asked for: a cluster that runs its CPU pods on GPU nodes has tens of thousands of
    them, and this keeps each in the bytes of its name.
    """

    __slots__ = ("_name", "_namespace", "_node")

    def __init__(self, name: str, namespace: str, node: str) -> None:
        self._name = name
        self._namespace = sys.intern(namespace)
        self._node = sys.intern(node)

    def __getitem__(self, key: str) -> dict[str, str]:
        if key == "metadata":
            return {"name": self._name, "namespace": self._namespace}
        if key == "spec":
            return {"nodeName": self._node}
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(("metadata", "spec"))

    def __len__(self) -> int:
        return 2

    def __repr__(self) -> str:
        return f"StrayPod({self._namespace}/{self._name} on {self._node})"

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> StrayPod:
        """The StrayPod of a pod read as JSON reads, with at least its name and node."""
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName") or ""
        return cls(str(meta.get("name", "")), str(meta.get("namespace", "")), str(node))


def namespace_pods(ctx: Context, namespace: str) -> list[Mapping[str, Any]]:
    """Every pod of ``namespace``, finished ones included, cut to NAMESPACE_POD_FIELDS."""
    pick = _pick(NAMESPACE_POD_FIELDS)
    limit = ctx.config.pods.page_size
    return [
        pod
        for page in ctx.kube.picked_pod_pages(pick, namespace=namespace, limit=limit)
        for pod in page.pods
    ]


def _names_gpu(
    pod: Mapping[str, Any], body: bytes | None, needles: tuple[bytes, ...] | None
) -> bool:
    """Whether a pod's containers may ask for a GPU: their bytes name a GPU resource.

    Without the bytes (a JSON answer) or with no fragments to look for, it may.
    """
    if body is None or needles is None:
        return True
    spec = pod.get("spec") or {}
    return any(
        body.find(n, s0, e0) >= 0
        for at in _CONTAINERS_AT
        for s0, e0 in spec.get(at, ())
        for n in needles
    )


def read_pods(ctx: Context, s: DoctorSettings, snap: Snapshot, m: AnnotationMatcher) -> None:
    """Fill ``snap.pods`` (``snap.nodes`` read already): one scan of every unfinished pod.

    Reservation pods are read from their namespace, failed ones included: a failed one
    is what their check is for. Pods on GPU nodes that ask for no GPU are kept only
    when that check runs (``cluster.gpu_taint_required``), and beyond the first
    :data:`~fracctl.core.doctor.model.LISTED` only counted (``snap.strays_unlisted``).
    """
    reservation_ns = s.pods.reservation_namespace
    snap.pods = namespace_pods(ctx, reservation_ns)
    gpus = {name_of(n) for n in gpu_nodes(snap.nodes, s)}
    strays = not gpu_nodes_for_gpu_pods.skipped(snap, s)
    fragments = gpu_name_fragments(s.cluster.gpu_resources)
    needles = None if fragments is None else tuple(f.encode() for f in fragments)

    def judge(pod: dict[str, Any], body: bytes | None, start: int, end: int) -> podpage.Verdict:
        """Each pod judged once, on its metadata and node: what the page keeps of it."""
        if (pod.get("metadata") or {}).get("namespace") == reservation_ns:
            return None  # read from its namespace already
        if fractional(pod, m, s):
            return podpage.REREAD
        if strays and not (pod.get("spec") or {}).get("nodeName"):
            # Waiting for a node: kept when it asks for a GPU (its containers say).
            return podpage.REREAD if _names_gpu(pod, body, needles) else None
        if not (strays and unexpected_on_gpu_node(pod, gpus, s)):
            return None  # kept by no check, whatever its containers say
        # On a GPU node: whether it asks for a GPU. A pod whose containers' bytes name
        # no GPU resource asks for none, and its containers need not be decoded.
        return podpage.REREAD if _names_gpu(pod, body, needles) else StrayPod.of(pod)

    kept = 0  # StrayPods in snap.pods
    for page in ctx.kube.picked_pod_pages(
        _pick(FIRST_POD_FIELDS),
        field_selector=unfinished_selector(),
        limit=ctx.config.pods.page_size,
        refine=podpage.Refine(_pick(SCAN_POD_FIELDS), judge),
    ):
        for pod in page.pods:
            if not isinstance(pod, StrayPod):  # read again: its containers are there
                if fractional(pod, m, s) or (strays and unscheduled_gpu_pod(pod, s, m)):
                    snap.pods.append(pod)
                    continue
                if not runs_on_gpu_node_without_gpu(pod, gpus, s, m):
                    continue  # it asks for a GPU
                pod = StrayPod.of(pod)
            if kept < model.LISTED:  # a finding lists this many: the rest are counted
                snap.pods.append(pod)
                kept += 1
            else:
                snap.strays_unlisted += 1
