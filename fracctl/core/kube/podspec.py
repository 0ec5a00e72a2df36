"""Pod specs inside manifests and live objects: where they are and what they ask for.

Shared by ``fracctl lint`` (rendered manifests) and ``fracctl doctor`` (live pods).
Every helper takes arbitrary parsed YAML: a value of an unexpected type reads as absent,
never as an exception, so an odd document cannot crash either command.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Obj = dict[str, Any]
Path = tuple[str | int, ...]

# The GPU resources of the common vendors, as their device plugins advertise them.
DEFAULT_GPU_RESOURCES = (
    "nvidia.com/gpu",
    "nvidia.com/mig-*",
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
)


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def items(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def dig(obj: Any, path: Sequence[str | int]) -> Any:
    """The value at ``path``, or None when any step is missing or of the wrong type."""
    node = obj
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return None
        elif not isinstance(node, Mapping):
            return None
        node = node[step] if isinstance(step, int) else node.get(step)
    return node


def path_string(path: Sequence[str | int]) -> str:
    """``("spec", "containers", 0)`` -> ``spec.containers[0]``."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


#: A step of a template path that stands for every key of a mapping or item of a list.
ANY = "*"

# Where each kind keeps its pod templates; anything else with a ``spec.template.spec``
# (Deployment, Job, an operator's own kind) is read there. The paths of the ML
# workload kinds follow their public API types:
#
# - kubeflow/training-operator ``pkg/apis/kubeflow.org/v1`` (v1.9.0): PyTorchJob
#   ``spec.pytorchReplicaSpecs``, TFJob ``spec.tfReplicaSpecs``, MPIJob
#   ``spec.mpiReplicaSpecs``, XGBoostJob ``spec.xgbReplicaSpecs``, PaddleJob
#   ``spec.paddleReplicaSpecs``, JAXJob ``spec.jaxReplicaSpecs``: each a map of replica
#   type to a ``ReplicaSpec`` whose ``template`` is a PodTemplateSpec (common_types.go).
#   kubeflow/mpi-operator ``pkg/apis/kubeflow/v2beta1/types.go`` keeps the same
#   ``spec.mpiReplicaSpecs.<type>.template`` for its MPIJob.
# - kubeflow/training-operator ``pkg/apis/trainer/v1alpha1/trainingruntime_types.go``
#   (Kubeflow Trainer v2): TrainingRuntime and ClusterTrainingRuntime hold a JobSet spec
#   at ``spec.template.spec``.
# - ray-project/kuberay ``ray-operator/apis/ray/v1``: RayCluster
#   ``spec.headGroupSpec.template`` and ``spec.workerGroupSpecs[].template``
#   (raycluster_types.go); RayJob the same under ``spec.rayClusterSpec``, and its
#   ``spec.submitterPodTemplate`` (rayjob_types.go); RayService the same under
#   ``spec.rayClusterConfig`` (rayservice_types.go).
# - kubernetes-sigs/jobset ``api/jobset/v1alpha2/jobset_types.go``: JobSet
#   ``spec.replicatedJobs[].template`` is a JobTemplateSpec, its pods at
#   ``.spec.template``.
_KUBEFLOW_REPLICAS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}
_JOBSET: tuple[Path, ...] = (("replicatedJobs", ANY, "template", "spec", "template"),)
_RAY: tuple[Path, ...] = (("headGroupSpec", "template"), ("workerGroupSpecs", ANY, "template"))


def _under(prefix: Path, paths: Sequence[Path]) -> tuple[Path, ...]:
    return tuple((*prefix, *p) for p in paths)


_TEMPLATE_PATHS: Mapping[str, tuple[Path, ...]] = {
    "Pod": ((),),
    "CronJob": (("spec", "jobTemplate", "spec", "template"),),
    **{kind: (("spec", key, ANY, "template"),) for kind, key in _KUBEFLOW_REPLICAS.items()},
    "TrainingRuntime": _under(("spec", "template", "spec"), _JOBSET),
    "ClusterTrainingRuntime": _under(("spec", "template", "spec"), _JOBSET),
    "RayCluster": _under(("spec",), _RAY),
    "RayJob": (*_under(("spec", "rayClusterSpec"), _RAY), ("spec", "submitterPodTemplate")),
    "RayService": _under(("spec", "rayClusterConfig"), _RAY),
    "JobSet": _under(("spec",), _JOBSET),
}
_DEFAULT_PATHS: tuple[Path, ...] = (("spec", "template"),)


@dataclass(frozen=True)
class PodTemplate:
    """A pod template found in an object: its metadata, its spec, and where they are."""

    path: Path  # () for a Pod; ("spec", "template") for a Deployment
    metadata: Mapping[str, Any]
    spec: Mapping[str, Any]

    def at(self, *rest: str | int) -> Path:
        """A path below the template (``at("spec", "containers", 0)``)."""
        return (*self.path, *rest)

    @property
    def annotations(self) -> dict[str, str]:
        """The pod's annotations, values as text."""
        return {str(k): str(v) for k, v in mapping(self.metadata.get("annotations")).items()}


def _expand(node: Any, pattern: Path, done: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Each ``(path, value)`` that ``pattern`` reaches in ``node``, :data:`ANY` expanded."""
    if not pattern:
        yield done, node
        return
    step, rest = pattern[0], pattern[1:]
    if step == ANY:
        if isinstance(node, Mapping):
            for key, value in node.items():
                yield from _expand(value, rest, (*done, str(key)))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from _expand(value, rest, (*done, i))
        return
    value = dig(node, (step,))
    if value is not None:
        yield from _expand(value, rest, (*done, step))


def pod_templates(obj: Mapping[str, Any]) -> list[PodTemplate]:
    """Every pod template of a Pod, a workload, or an ML workload kind, in document order.

    A Deployment, Job or CronJob has one; a PyTorchJob one per replica type, a
    RayCluster its head group's and one per worker group, a JobSet one per replicated
    job (the paths and their sources are listed above :data:`_TEMPLATE_PATHS`). A
    template without a ``spec.containers`` list is not one (but a Pod always is).
    """
    kind = str(obj.get("kind") or "")
    found: list[PodTemplate] = []
    for pattern in _TEMPLATE_PATHS.get(kind, _DEFAULT_PATHS):
        for path, holder in _expand(obj, pattern):
            holder = mapping(holder)
            spec = holder.get("spec")
            if isinstance(spec, Mapping) and (
                isinstance(spec.get("containers"), list) or kind == "Pod"
            ):
                found.append(PodTemplate(path, mapping(holder.get("metadata")), spec))
    return found


def pod_template(obj: Mapping[str, Any]) -> PodTemplate | None:
    """The first pod template of an object (:func:`pod_templates`), or None."""
    found = pod_templates(obj)
    return found[0] if found else None


@dataclass(frozen=True)
class ContainerRef:
    """One container of a pod spec and its index in its list."""

    field: str  # containers | initContainers
    index: int
    container: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The container's name ("" when it has none)."""
        return str(self.container.get("name") or "")


def containers(spec: Mapping[str, Any], *, init: bool = True) -> Iterator[ContainerRef]:
    """The containers (and init containers) of a pod spec that are mappings."""
    fields = ("containers", "initContainers") if init else ("containers",)
    for f in fields:
        for i, c in enumerate(items(spec.get(f))):
            if isinstance(c, Mapping):
                yield ContainerRef(f, i, c)


def is_gpu_resource(name: str, resources: Sequence[str] = DEFAULT_GPU_RESOURCES) -> bool:
    """Whether a resource name is a GPU (``*`` in a pattern matches within the name)."""
    return _matches_any(name, tuple(resources))


def gpu_name_fragments(
    resources: Sequence[str] = DEFAULT_GPU_RESOURCES,
) -> tuple[str, ...] | None:
    """A text each GPU resource name must contain: every pattern's longest literal run.

    An object whose text holds none of them asks for no GPU resource by any name.
    ``None`` when a pattern has no literal (``*``): then no text rules a GPU out.
    """
    fragments = []
    for pattern in resources:
        runs = [r for r in re.split(r"\*|\?|\[[^\]]*\]", pattern) if r]
        if not runs:
            return None
        fragments.append(max(runs, key=len))
    return tuple(fragments)


@lru_cache(maxsize=4096)
def _matches_any(name: str, patterns: tuple[str, ...]) -> bool:
    # A cluster's pods name a handful of resources, each asked about once per container:
    # remembered, as a scan of every pod would otherwise match each pattern again.
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def gpu_requests(
    spec: Mapping[str, Any], resources: Sequence[str] = DEFAULT_GPU_RESOURCES
) -> list[tuple[ContainerRef, str, str]]:
    """Every GPU resource a container limits or requests: ``(container, resource, value)``.

    A zero quantity asks for nothing and is left out.
    """
    out: list[tuple[ContainerRef, str, str]] = []
    for c in containers(spec):
        seen: set[str] = set()
        res = mapping(c.container.get("resources"))
        for section in ("limits", "requests"):
            for name, value in mapping(res.get(section)).items():
                if (
                    is_gpu_resource(str(name), resources)
                    and str(value).strip() not in ("0", "")
                    and name not in seen
                ):
                    seen.add(str(name))
                    out.append((c, str(name), str(value)))
    return out


def root_problems(spec: Mapping[str, Any]) -> list[str]:
    """Why a pod spec may run a process as root (empty when it cannot).

    Non-root is proven by ``runAsNonRoot: true`` (on the pod, or on every container) or by
    a non-zero ``runAsUser``; ``runAsUser: 0`` anywhere is root whatever else says.
    """
    pod_ctx = mapping(spec.get("securityContext"))
    problems: list[str] = []
    if _uid(pod_ctx) == 0:
        problems.append("the pod's securityContext sets runAsUser: 0")
    pod_non_root = pod_ctx.get("runAsNonRoot") is True or (_uid(pod_ctx) or 0) > 0
    for c in containers(spec):
        ctx = mapping(c.container.get("securityContext"))
        label = f"container {c.name or c.index}"
        if _uid(ctx) == 0:
            problems.append(f"{label} sets runAsUser: 0")
            continue
        if ctx.get("runAsNonRoot") is False and _uid(ctx) is None:
            problems.append(f"{label} sets runAsNonRoot: false")
            continue
        if not (pod_non_root or ctx.get("runAsNonRoot") is True or (_uid(ctx) or 0) > 0):
            problems.append(f"{label} has no runAsNonRoot: true (nor the pod)")
    return problems


def _uid(ctx: Mapping[str, Any]) -> int | None:
    value = ctx.get("runAsUser")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def tolerates(spec: Mapping[str, Any], key: str, effect: str = "NoSchedule") -> bool:
    """Whether the pod spec tolerates a taint ``key`` (any value) with ``effect``."""
    for t in items(spec.get("tolerations")):
        t = mapping(t)
        operator = t.get("operator") or "Equal"
        if t.get("effect") not in (None, "", effect):
            continue
        if t.get("key") in (None, "") and operator == "Exists":
            return True  # tolerates everything
        if t.get("key") == key:
            return True
    return False


def image_tag(image: str) -> str:
    """The tag of an image reference ("" when none; a digest counts as a pin: ``@``)."""
    if "@" in image:
        return "@"
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


# Tags that mean "whatever was built last" or "the chart's placeholder".
UNPINNED_TAGS = ("", "latest", "0.0.0", "v0.0.0")


def unpinned(image: str) -> bool:
    """Whether an image has no tag, ``latest``, or a chart default such as ``0.0.0``."""
    return image_tag(image.strip()) in UNPINNED_TAGS
