"""Rules on how a workload's pods ask for GPUs: placement, vendor, root, and the GPU taint.

Each reads the pod templates of a Pod or a workload (Deployment, Job, CronJob, an
operator's own kind with ``spec.template``, and the ML workload kinds: Kubeflow's
replica specs, Ray's head and worker groups, JobSet's replicated jobs; see
:func:`fracctl.core.kube.podspec.pod_templates`); a manifest without one is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fracctl.core.kube.podspec import (
    dig,
    gpu_requests,
    items,
    mapping,
    path_string,
    root_problems,
    tolerates,
)
from fracctl.core.lint.base import (
    ERROR,
    MULTI_VENDOR_ANNOTATION,
    WARNING,
    Hit,
    LintSettings,
    Manifest,
)
from fracctl.core.lint.registry import rule


def _gpu_affinity_keys(spec: Mapping[str, Any], s: LintSettings) -> list[str]:
    keys = {s.labels.class_key, s.labels.opt_in_key, *s.labels.product_keys}
    found: list[str] = []
    preferred = dig(
        spec, ("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    )
    for term in items(preferred):
        pref = mapping(mapping(term).get("preference"))
        for expr in items(pref.get("matchExpressions")) + items(pref.get("matchFields")):
            key = str(mapping(expr).get("key") or "")
            if key and (key in keys or "gpu" in key.lower()):
                found.append(key)
    return found


@rule(
    "FL001",
    "optional-gpu-trap",
    ERROR,
    "preferred GPU node affinity with a hard GPU request: the pod can never fall back",
)
def optional_gpu_trap(m: Manifest) -> Iterator[Hit]:
    """A preferred GPU node affinity on a pod that requires a GPU anyway."""
    t = m.template
    if t is None:
        return
    affinity = _gpu_affinity_keys(t.spec, m.settings)
    if affinity and m.gpu:
        c, res, value = m.gpu[0]
        yield (
            f"prefers GPU nodes ({', '.join(sorted(set(affinity)))}) but container "
            f"{c.name or c.index} requires {res}: {value}; the preference cannot help the pod "
            "fall back, it stays Pending when no GPU is free. Make the GPU node affinity "
            "required, or drop the GPU request for a CPU fallback",
            path_string(t.at("spec", "affinity")),
        )


@rule(
    "FL002",
    "vendor-gpu-resource",
    WARNING,
    "a vendor's GPU resource hard-coded in a workload meant for several vendors",
)
def vendor_gpu_resource(m: Manifest) -> Iterator[Hit]:
    """Each vendor GPU resource, when the workload (or the policy) is multi-vendor."""
    t = m.template
    if t is None:
        return
    meta_notes = {
        str(k): str(v)
        for k, v in mapping(mapping(m.obj.get("metadata")).get("annotations")).items()
    }
    multi = m.settings.lint.multi_vendor or "true" in (
        m.notes.get(MULTI_VENDOR_ANNOTATION, "").lower(),
        meta_notes.get(MULTI_VENDOR_ANNOTATION, "").lower(),
    )
    if not multi:
        return
    for c, res, value in m.gpu:
        yield (
            f"container {c.name or c.index} hard-codes {res}: {value} in a workload meant "
            "for several GPU vendors; request the GPU through a vendor-neutral resource "
            "(a DRA ResourceClaim or a class-level resource) chosen per cluster",
            path_string(t.at("spec", c.field, c.index, "resources")),
        )


@rule(
    "FL007",
    "fractional-root",
    ERROR,
    "a fractional workload without runAsNonRoot: true, or running as UID 0",
)
def fractional_root(m: Manifest) -> Iterator[Hit]:
    """A fractional pod whose spec lets a process run as root."""
    t = m.template
    if t is None or not m.fractional:
        return
    problems = root_problems(t.spec)
    if problems:
        yield (
            "a fractional workload may run as root ("
            + "; ".join(problems)
            + "): in multi-user MPS a root client can raise its own cap or delete a "
            "neighbour's namespace. Set securityContext.runAsNonRoot: true and a non-zero "
            "runAsUser",
            path_string(t.at("spec", "securityContext")),
        )


# The admission plugin that gives a pod the toleration for each extended resource it
# requests (kubernetes/kubernetes plugin/pkg/admission/extendedresourcetoleration).
_PLUGIN = "ExtendedResourceToleration"


def _untolerated(m: Manifest) -> bool:
    """Whether a GPU or fractional pod lacks the toleration of a GPU taint the policy requires."""
    t = m.template
    s = m.settings
    return (
        t is not None
        and s.cluster.gpu_taint_required
        and bool(m.gpu or m.fractional)
        and not tolerates(t.spec, s.cluster.gpu_taint)
    )


def _named_like_taint(m: Manifest) -> list[str]:
    """The containers that request the resource named like the GPU taint's key."""
    t = m.template
    if t is None:
        return []
    return [
        str(c.name or c.index) for c, _, _ in gpu_requests(t.spec, (m.settings.cluster.gpu_taint,))
    ]


def _fix(taint: str) -> str:
    return f"Add tolerations: [{{key: {taint}, operator: Exists, effect: NoSchedule}}]"


@rule(
    "FL008",
    "gpu-toleration-missing",
    ERROR,
    "a GPU workload that nothing gives the toleration for the GPU taint the policy requires",
)
def gpu_toleration_missing(m: Manifest) -> Iterator[Hit]:
    """A GPU or fractional pod that cannot tolerate the GPU taint the policy requires.

    A pod that requests the extended resource named like the taint's key gets the
    toleration from the ExtendedResourceToleration admission plugin, when the API
    server runs it (``Admit`` in kubernetes/kubernetes
    ``plugin/pkg/admission/extendedresourcetoleration/admission.go``, over the
    requests of ``containers`` and ``initContainers``; a limit alone counts, as
    ``SetDefaults_Pod`` in ``pkg/apis/core/v1/defaults.go`` copies limits into missing
    requests). Such a pod is FL013's, unless ``lint.extended_resource_toleration`` is
    false. A fractional pod requests no GPU resource (KAI's reservation pod holds the
    GPU and copies the pod's own tolerations: ``createResourceReservationPod`` in
    kai-scheduler/KAI-Scheduler ``pkg/binder/binding/resourcereservation/
    resource_reservation.go``), so nothing adds the toleration for it.
    """
    if not _untolerated(m) or m.template is None:
        return
    s = m.settings
    taint = s.cluster.gpu_taint
    plugin = s.lint.extended_resource_toleration
    named = _named_like_taint(m)
    if named and plugin is not False:
        return  # FL013, or tolerated by the plugin
    if named:
        why = (
            f"container(s) {', '.join(named)} request {taint}, but the API server does not run "
            f"the {_PLUGIN} admission plugin (lint.extended_resource_toleration: false), so "
            "no toleration is added"
        )
    elif m.gpu:
        resources = sorted({res for _, res, _ in m.gpu})
        why = (
            f"it requests {', '.join(resources)}, not {taint}: the {_PLUGIN} admission "
            "plugin adds a toleration only for the name of the resource requested"
        )
    else:
        why = (
            f"a fractional pod requests no {taint} resource, so the {_PLUGIN} admission "
            "plugin adds no toleration for it"
        )
    yield (
        f"a GPU workload without a toleration for the {taint}:NoSchedule taint: {why}. "
        "GPU nodes carry that taint (assumed from cluster.gpu_taint_required: true), so it "
        f"will never schedule there. {_fix(taint)}",
        path_string(m.template.at("spec")),
    )


@rule(
    "FL013",
    "gpu-toleration-by-admission",
    WARNING,
    "a GPU workload whose toleration for the GPU taint depends on an admission plugin",
)
def gpu_toleration_by_admission(m: Manifest) -> Iterator[Hit]:
    """A pod that requests the resource named like the GPU taint, without its toleration.

    Where the API server runs the ExtendedResourceToleration admission plugin the pod
    gets the toleration when it is created (see FL008); lint cannot know whether it
    does, so this is a warning until ``lint.extended_resource_toleration`` says (true:
    quiet; false: FL008's error).
    """
    if not _untolerated(m) or m.template is None:
        return
    s = m.settings
    named = _named_like_taint(m)
    if not named or s.lint.extended_resource_toleration is not None:
        return
    taint = s.cluster.gpu_taint
    yield (
        f"no toleration for the {taint}:NoSchedule taint (GPU nodes carry it: assumed from "
        f"cluster.gpu_taint_required: true); container(s) {', '.join(named)} request {taint}, "
        f"so the pod schedules there only if the API server runs the {_PLUGIN} admission "
        "plugin, which adds the toleration (set lint.extended_resource_toleration when you "
        f"know). {_fix(taint)} to depend on no plugin",
        path_string(m.template.at("spec")),
    )
