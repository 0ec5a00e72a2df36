"""The one list of doctor's checks, in the install guide's troubleshooting order, and the run.

Everything that names or orders the checks reads :data:`CHECKS`: :func:`diagnose`,
the reports (``-o json``, the table, GitHub annotations) and the runbook test,
which wants a ``### <id>`` section in ``runbooks/doctor.md`` for each, in this order.
A new check is declared with :func:`~fracctl.core.doctor.model.check` in the module
of its group and listed here once.
"""

from __future__ import annotations

from fracctl.core.doctor.agents import agent_daemonsets, image_tags
from fracctl.core.doctor.helm import config_hook
from fracctl.core.doctor.helpers import fractions_of
from fracctl.core.doctor.labels import gpu_memory_label, gpu_present_label
from fracctl.core.doctor.model import (
    Check,
    CheckResult,
    DoctorReport,
    DoctorSettings,
    Finding,
    Snapshot,
)
from fracctl.core.doctor.pods import (
    fractional_pods_non_root,
    pending_fractional_pods,
    unread_memory_annotations,
)
from fracctl.core.doctor.scheduler import kai_config, reservation_pods, runtime_class
from fracctl.core.doctor.taints import (
    gpu_node_taints,
    gpu_nodes_for_gpu_pods,
    gpu_pods_tolerate_gpu_taint,
)
from fracctl.core.doctor.target import (
    denied_selected,
    drain_fence,
    driver_upgrade,
    fractioning_config,
    guard_policy,
    node_readiness,
    opted_in_selected,
    unfinished_recreates,
)

CHECKS: tuple[Check, ...] = (
    reservation_pods,
    runtime_class,
    image_tags,
    agent_daemonsets,
    gpu_memory_label,
    gpu_present_label,
    kai_config,
    fractioning_config,
    unfinished_recreates,
    config_hook,
    guard_policy,
    node_readiness,
    denied_selected,
    drain_fence,
    driver_upgrade,
    opted_in_selected,
    pending_fractional_pods,
    fractional_pods_non_root,
    unread_memory_annotations,
    gpu_node_taints,
    gpu_pods_tolerate_gpu_taint,
    gpu_nodes_for_gpu_pods,
)
CHECK_IDS = tuple(c.id for c in CHECKS)
if len(set(CHECK_IDS)) != len(CHECK_IDS):
    raise ValueError(f"doctor check ids repeat: {CHECK_IDS}")


def diagnose(snap: Snapshot, s: DoctorSettings) -> DoctorReport:
    """Run every check on the snapshot.

    Returns:
        Each check's result, in :data:`CHECKS` order, and the findings in the same order.
    """
    m = fractions_of(snap, s).matcher
    results = []
    findings: list[Finding] = []
    for check in CHECKS:
        reason = check.skipped(snap, s)
        if reason:
            results.append(CheckResult(check, "skipped", reason))
            continue
        fs = check.run(snap, s, m)
        findings.extend(fs)
        if fs:
            results.append(CheckResult(check, "finding", f"{len(fs)} finding(s)"))
        else:
            results.append(CheckResult(check, "ok", check.note(snap, s) if check.note else ""))
    return DoctorReport(results, findings)
