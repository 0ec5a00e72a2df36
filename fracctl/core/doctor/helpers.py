"""Reading nodes, pods and workloads the way several checks need them.

Names and listings for messages, which nodes are GPU nodes, whether a pod is ready,
fractional or owned by a DaemonSet, why its containers fail, and the two reasons a
check is skipped (no fractioning config, no GPU taint required).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fracctl.core.doctor.model import GPU_MEMORY_LABEL, DoctorSettings, Obj, Snapshot
from fracctl.core.fractions.fractional import AnnotationMatcher, Fractions, PodKind, classify
from fracctl.core.fractions.policy import is_gpu_node
from fracctl.core.kube.nodes import labels_of
from fracctl.core.kube.podspec import is_gpu_resource, items, mapping

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


def name_of(obj: Mapping[str, Any]) -> str:
    """``metadata.name``, or ""."""
    return str(mapping(obj.get("metadata")).get("name") or "")


def ns_name(obj: Mapping[str, Any]) -> str:
    """``namespace/name``."""
    meta = mapping(obj.get("metadata"))
    return f"{meta.get('namespace')}/{meta.get('name')}"


def listing(names: Sequence[str], most: int = 10, *, total: int | None = None) -> str:
    """The first ``most`` names, then how many more (of ``total``, when more were found)."""
    shown = ", ".join(names[:most])
    rest = (len(names) if total is None else total) - min(len(names), most)
    return shown + (f" and {rest} more" if rest > 0 else "")


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
            if is_gpu_resource(str(k), s.cluster.gpu_resources)
        )
        if is_gpu_node(labels, s.labels) or GPU_MEMORY_LABEL in labels or has_gpu:
            out.append(n)
    return sorted(out, key=name_of)


def owned_by_daemonset(pod: Mapping[str, Any]) -> bool:
    """Whether a DaemonSet owns the pod."""
    return any(
        mapping(o).get("kind") == "DaemonSet"
        for o in items(mapping(pod.get("metadata")).get("ownerReferences"))
    )


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's Ready condition is True."""
    for c in items(mapping(pod.get("status")).get("conditions")):
        c = mapping(c)
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def container_troubles(pod: Mapping[str, Any]) -> list[str]:
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


def target_selector(target: Obj) -> dict[str, str]:
    """The fractioning config's ``spec.nodeSelector`` (empty when it is not a map)."""
    return {
        str(k): str(v) for k, v in mapping(mapping(target.get("spec")).get("nodeSelector")).items()
    }


def fractions_of(snap: Snapshot, s: DoctorSettings) -> Fractions:
    """How fractional pods are recognised on this cluster.

    KAI's annotations, the agents' keys under the live config's annotation prefix and
    each default, and the additions.

    Raises:
        ValueError: a pattern has no key, or the live config's prefix is unusable.
    """
    t = s.target
    return Fractions.of(
        s.pods.fraction_annotations, t.naming, live=snap.target, kind=f"{t.kind}/{t.name}"
    )


def fractional(pod: Mapping[str, Any], m: AnnotationMatcher, s: DoctorSettings) -> bool:
    """Whether the pod asks for a GPU fraction."""
    verdict = classify(
        mapping(pod.get("metadata")), m, reservation_namespace=s.pods.reservation_namespace
    )
    return verdict.kind is PodKind.FRACTIONAL


def without_target(snap: Snapshot, s: DoctorSettings) -> str:
    """Skip reason: the fractioning config is missing, so its selector is not known."""
    return f"{s.target.kind}/{s.target.name} is missing" if snap.target is None else ""


def taint_not_required(snap: Snapshot, s: DoctorSettings) -> str:
    """Skip reason: the configuration does not ask for GPU nodes to be tainted."""
    return "cluster.gpu_taint_required is false" if not s.cluster.gpu_taint_required else ""
