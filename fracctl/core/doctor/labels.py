"""Checks on the labels GPU nodes must carry: nvidia.com/gpu.memory and nvidia.com/gpu.present.

GPU Feature Discovery sets both. KAI's binder reads the memory label to turn a
fraction into MiB, and the node-agent DaemonSets select nodes by the present label;
without them fractional pods stay Pending, or a node gets no daemons, silently.
"""

from __future__ import annotations

from fracctl.core.doctor.helpers import gpu_nodes, listing, name_of
from fracctl.core.doctor.model import GPU_MEMORY_LABEL, DoctorSettings, Signature, Snapshot, check
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.fractions.policy import GPU_PRESENT
from fracctl.core.kube.nodes import labels_of


@check("gpu-memory-label", "GPU nodes carry nvidia.com/gpu.memory", reads=("nodes",))
def gpu_memory_label(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """GPU nodes without the memory label."""
    gpus = gpu_nodes(snap.nodes, s)
    no_memory = [name_of(n) for n in gpus if not str(labels_of(n).get(GPU_MEMORY_LABEL) or "")]
    if not no_memory:
        return []
    return [
        Signature(
            f"GPU node(s) without {GPU_MEMORY_LABEL}: {listing(no_memory)}; fractional pods "
            "stay Pending, and only a binder event says why (BindingError … failed to set "
            f"NvFractions memory annotation: node does not include {GPU_MEMORY_LABEL} label)",
            "GPU Feature Discovery (part of the GPU Operator), which sets the label, does "
            "not run on these nodes",
            "kubectl -n gpu-operator get pods -o wide | grep feature-discovery; by hand: "
            f"kubectl label node {' '.join(no_memory)} {GPU_MEMORY_LABEL}=<MiB per GPU>",
            tuple(no_memory),
        )
    ]


@check("gpu-present-label", "GPU nodes carry nvidia.com/gpu.present=true", reads=("nodes",))
def gpu_present_label(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """GPU nodes without the present label."""
    gpus = gpu_nodes(snap.nodes, s)
    key, value = GPU_PRESENT
    no_present = [name_of(n) for n in gpus if labels_of(n).get(key) != value]
    if not no_present:
        return []
    return [
        Signature(
            f"GPU node(s) without {key}={value}: {listing(no_present)}; the mpsd and "
            "fractiond DaemonSets select nodes by it, so these get no daemons and nothing "
            "reports an error",
            "the GPU Operator's feature discovery does not run there, or the label was removed",
            f"kubectl label node {' '.join(no_present)} {key}={value}",
            tuple(no_present),
        )
    ]
