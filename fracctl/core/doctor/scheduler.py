"""Checks on KAI's side of fractions: its reservation pods, the RuntimeClass they need, its Config.

A fractional pod is bound by KAI, which first starts a reservation pod on the GPU;
that pod loads NVML through the GPU RuntimeClass, and KAI hands out fractions only
when its Config runs in NvFractions mode. When any of this fails, the fractional
pods stay Pending and their own events say nothing useful.
"""

from __future__ import annotations

from fracctl.core.doctor.helpers import container_troubles, name_of
from fracctl.core.doctor.model import (
    SHARING_MODE,
    DoctorSettings,
    Signature,
    Snapshot,
    check,
)
from fracctl.core.fractions.fractional import AnnotationMatcher
from fracctl.core.kube.podspec import mapping


@check("reservation-pods", "KAI's reservation pods run", reads=("pods",))
def reservation_pods(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """Reservation pods that failed, and whether the RuntimeClass is why."""
    failing: list[str] = []
    evidence: list[str] = []
    no_runtime: list[str] = []
    nvml = False
    for pod in snap.pods:
        if mapping(pod.get("metadata")).get("namespace") != s.pods.reservation_namespace:
            continue
        phase = mapping(pod.get("status")).get("phase")
        troubles = container_troubles(pod)
        if phase != "Failed" and not troubles:
            continue
        name = name_of(pod)
        failing.append(name)
        runtime = mapping(pod.get("spec")).get("runtimeClassName")
        if runtime != s.cluster.runtime_class:
            no_runtime.append(name)
        text = "; ".join(troubles) or f"phase {phase}"
        nvml = nvml or "NVML" in text
        evidence.append(f"{name} (runtimeClassName {runtime or 'unset'}): {text}")
    if not failing:
        return []
    cause = "a reservation pod calls NVML and needs the GPU driver libraries"
    if no_runtime or nvml:
        cause = (
            f"the reservation pods do not run with the {s.cluster.runtime_class!r} RuntimeClass, "
            "so NVML is not found (unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND)"
        )
    patch = (
        '{"spec":{"binder":{"resourceReservation":{"runtimeClassName":"'
        + s.cluster.runtime_class
        + '"}}}}'
    )
    return [
        Signature(
            f"{len(failing)} reservation pod(s) in {s.pods.reservation_namespace} failing; "
            "fractional pods stay Pending and their own events say nothing useful",
            cause,
            f"kubectl patch config.kai.scheduler {s.cluster.scheduler_config} --type=merge -p "
            f"'{patch}' && kubectl -n {s.pods.reservation_namespace} delete pod --all",
            tuple(failing),
            tuple(evidence),
        )
    ]


@check("runtime-class", "the GPU RuntimeClass exists", reads=("runtime_class",))
def runtime_class(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """The GPU RuntimeClass is missing."""
    if snap.runtime_class is not None:
        return []
    return [
        Signature(
            f"no RuntimeClass {s.cluster.runtime_class!r}: GPU pods get no driver libraries and "
            "KAI's reservation pods fail to load NVML",
            "the GPU Operator (which creates it) is missing or was installed without its "
            "runtime class",
            "kubectl apply -f - <<'EOF'\n"
            f"{{apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {{name: "
            f"{s.cluster.runtime_class}}}, handler: {s.cluster.runtime_class}}}\nEOF",
            (s.cluster.runtime_class,),
        )
    ]


@check(
    "kai-config",
    "KAI's Config runs in NvFractions mode",
    reads=("kai_config", "kai_config_missing"),
)
def kai_config(snap: Snapshot, s: DoctorSettings, m: AnnotationMatcher) -> list[Signature]:
    """KAI's Config is missing, or not in NvFractions mode."""
    cfg = snap.kai_config
    if cfg is None:
        return [
            Signature(
                f"KAI's Config {s.cluster.scheduler_config} is missing "
                f"({snap.kai_config_missing}); the scheduler does not run in NvFractions mode",
                "KAI is not installed, or was installed from a chart without the operator",
                f"helm upgrade --install kai-scheduler ./deployments/kai-scheduler -n "
                f"{s.cluster.scheduler_namespace} --create-namespace --set "
                f"global.gpuSharingMode={SHARING_MODE}",
                (s.cluster.scheduler_config,),
            )
        ]
    mode = mapping(mapping(cfg.get("spec")).get("global")).get("gpuSharingMode")
    if mode == SHARING_MODE:
        return []
    patch = '{"spec":{"global":{"gpuSharingMode":"' + SHARING_MODE + '"}}}'
    return [
        Signature(
            f"KAI's Config {s.cluster.scheduler_config} has spec.global.gpuSharingMode "
            f"{mode!r}, not {SHARING_MODE!r}: fractional pods are not given MPS fractions",
            "the value is case-sensitive and must be exactly NvFractions; a chart value "
            "was left at its default or misspelt",
            f"kubectl patch config.kai.scheduler {s.cluster.scheduler_config} --type=merge -p "
            f"'{patch}' (and set global.gpuSharingMode={SHARING_MODE} in the chart values)",
            (s.cluster.scheduler_config,),
            (f"spec.global.gpuSharingMode: {mode!r}",),
        )
    ]
