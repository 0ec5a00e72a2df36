"""A doctor check: GPU nodes that are cordoned keep their fractions from being scheduled."""

from __future__ import annotations

from fracctl.core.doctor.helpers import gpu_nodes, name_of
from fracctl.core.doctor.model import DoctorSettings, Signature, Snapshot, check
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.kube.podspec import mapping


@check("cordoned-gpu-nodes", "no GPU node is cordoned", reads=("nodes",))
def cordoned_gpu_nodes(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """GPU nodes with ``spec.unschedulable``."""
    cordoned = [
        name_of(n) for n in gpu_nodes(snap.nodes, s) if mapping(n.get("spec")).get("unschedulable")
    ]
    if not cordoned:
        return []
    return [
        Signature(
            symptom=f"{len(cordoned)} GPU node(s) take no new pods",
            cause="the nodes are cordoned (spec.unschedulable), left over from maintenance",
            fix=f"kubectl uncordon {' '.join(cordoned)}",
            subjects=tuple(cordoned),
        )
    ]
