"""Rules on how a workload's pods ask for GPUs: placement, vendor, root, and the GPU taint.

Each reads the pod template of a Pod or a workload (Deployment, Job, CronJob, an
operator's own kind with ``spec.template``); a manifest without one is not judged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fracctl.core.lint.base import (
    ERROR,
    MULTI_VENDOR_ANNOTATION,
    WARNING,
    Hit,
    LintSettings,
    Manifest,
)
from fracctl.core.lint.registry import rule
from fracctl.core.podspec import dig, items, mapping, path_string, root_problems, tolerates


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


@rule(
    "FL008",
    "gpu-toleration-missing",
    ERROR,
    "a GPU workload without a toleration for the GPU taint the policy requires",
)
def gpu_toleration_missing(m: Manifest) -> Iterator[Hit]:
    """A GPU or fractional pod that does not tolerate the GPU taint the policy requires."""
    t = m.template
    s = m.settings
    if t is None:
        return
    if (
        s.cluster.gpu_taint_required
        and (m.gpu or m.fractional)
        and not tolerates(t.spec, s.cluster.gpu_taint)
    ):
        yield (
            f"a GPU workload without a toleration for the {s.cluster.gpu_taint}:NoSchedule taint "
            "that GPU nodes carry; it will never schedule there. Add tolerations: "
            f"[{{key: {s.cluster.gpu_taint}, operator: Exists, effect: NoSchedule}}]",
            path_string(t.at("spec")),
        )
