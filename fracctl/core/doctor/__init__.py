"""Known failure signatures of fractional GPUs, judged from a read-only cluster snapshot.

Fractions fail in ways the workload's own events do not show: a node label the binder
needs, a RuntimeClass the reservation pod needs, a chart default image, a DaemonSet
that never came up on one node. Each check here turns one such signature into a
finding with the symptom, the likely cause and the fix as a command. Pure: the flow
reads the cluster into a :class:`Snapshot`; :func:`diagnose` decides. Each check is
one declaration in the module of its group; :mod:`.registry` lists them in order.
"""

from __future__ import annotations

from fracctl.core.doctor.helpers import gpu_nodes
from fracctl.core.doctor.model import (
    DAEMONSETS,
    DEPLOYMENTS,
    GPU_MEMORY_LABEL,
    KAI_CONFIG,
    RUNTIME_CLASSES,
    SHARING_MODE,
    Check,
    CheckResult,
    DoctorReport,
    DoctorSettings,
    Finding,
    Signature,
    Snapshot,
    check,
)
from fracctl.core.doctor.registry import CHECK_IDS, CHECKS, diagnose

__all__ = [
    "CHECKS",
    "CHECK_IDS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "GPU_MEMORY_LABEL",
    "KAI_CONFIG",
    "RUNTIME_CLASSES",
    "SHARING_MODE",
    "Check",
    "CheckResult",
    "DoctorReport",
    "DoctorSettings",
    "Finding",
    "Signature",
    "Snapshot",
    "check",
    "diagnose",
    "gpu_nodes",
]
