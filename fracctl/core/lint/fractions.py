"""Rules on the fraction annotations of a pod template: their values, and which container.

KAI reads ``gpu-fraction`` (a share of one GPU in (0, 1]) or ``gpu-memory`` (whole
MiB), never both, and gives the fraction to one container: the one named by
``gpu-fraction-container-name``, or by ``nvidia.com/container.<name>.gpu-…`` keys.

How KAI finds that container: ``GetFractionContainerRef`` in
kai-scheduler/KAI-Scheduler ``pkg/binder/common/gpu_access.go`` (called by the
admission webhook, ``pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go``, and
by the binder) takes the first entry of ``spec.containers`` when the pod has no
``gpu-fraction-container-name``; otherwise it looks for that name among
``spec.initContainers`` first, then ``spec.containers``, and fails ("container with
name … not found for fraction request") when neither holds it. Ephemeral containers
are not searched, so naming one is the same failure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from fracctl.core.fractions.fractional import (
    agent_prefixes,
)
from fracctl.core.fractions.memory import memory_key_container, quantity_bytes, unread_memory_keys
from fracctl.core.kube.podspec import containers, items, mapping
from fracctl.core.lint.base import ERROR, Hit, Manifest
from fracctl.core.lint.registry import rule

_FRACTION = "gpu-fraction"
_MEMORY = "gpu-memory"
_CONTAINER_NAME = "gpu-fraction-container-name"
_PER_CONTAINER = re.compile(r"^nvidia\.com/container\.([^/.]+)\.(gpu-memory|gpu-compute)\.")
_MIB = re.compile(r"^[1-9][0-9]*$")


@rule("FL003", "gpu-fraction-range", ERROR, "gpu-fraction is not a number in (0, 1]")
def gpu_fraction_range(m: Manifest) -> Iterator[Hit]:
    """A gpu-fraction that is not a number in (0, 1]."""
    fraction = m.notes.get(_FRACTION)
    if fraction is None:
        return
    try:
        share = float(fraction)
    except ValueError:
        share = math.nan
    if not (0 < share <= 1):
        yield (
            f'gpu-fraction is {fraction!r}; it must be a number in (0, 1], such as "0.5"',
            m.annotations_path,
        )


@rule(
    "FL004",
    "gpu-memory-mib",
    ERROR,
    "gpu-memory is not whole MiB, or an agents' memory key not a quantity of 1 MiB or more",
)
def gpu_memory_mib(m: Manifest) -> Iterator[Hit]:
    """A gpu-memory that is not whole MiB; an agents' memory key that is no quantity.

    KAI's pod-wide ``gpu-memory`` is a whole number of MiB. The node agents' per-container
    keys (``<prefix><container>.gpu-memory.limit``) are Kubernetes quantities of at
    least 1 MiB (kai-gpu-fractioning ``fractiond/internal/annotations``:
    ``resource.ParseQuantity``, "minimum is 1 MiB"): ``"4Gi"`` is right there, and a
    bare ``"4096"`` is 4096 bytes, which the agents refuse.
    """
    notes = m.notes
    mib = notes.get(_MEMORY)
    if mib is not None and not _MIB.match(mib.strip()):
        yield (
            f"{_MEMORY} is {mib!r}; it must be a whole, positive number of MiB "
            '("4096", not "4Gi" or "4096.5")',
            m.annotations_path,
        )
    prefixes = [m.agents] if m.agents is not None else []
    prefixes += agent_prefixes(m.settings.target.naming)
    for key, value in notes.items():
        if key == _MEMORY or memory_key_container(key, prefixes) is None:
            continue
        size = quantity_bytes(value)
        if size is None or size < 2**20:
            yield (
                f"{key} is {value!r}; the node agents read it as a Kubernetes quantity of at "
                'least 1 MiB ("4Gi", "4096Mi"; a bare "4096" is 4096 bytes)',
                m.annotations_path,
            )


@rule("FL005", "fraction-and-memory", ERROR, "gpu-fraction and gpu-memory are both set")
def fraction_and_memory(m: Manifest) -> Iterator[Hit]:
    """Both gpu-fraction and gpu-memory."""
    if m.notes.get(_FRACTION) is not None and _MEMORY in m.notes:
        yield (
            "both gpu-fraction and gpu-memory are set; KAI takes one or the other: keep the "
            "one that states what the workload needs",
            m.annotations_path,
        )


@rule(
    "FL006",
    "fraction-containers",
    ERROR,
    "fraction annotations on several containers, or on a container the pod lacks",
)
def fraction_containers(m: Manifest) -> Iterator[Hit]:
    """Fraction annotations naming several containers, then containers the pod lacks.

    A container is found among ``initContainers`` and ``containers``, where KAI looks
    (see the module's docstring); an ephemeral container is not one KAI reads.
    """
    t = m.template
    if t is None:
        return
    notes = m.notes
    names = [c.name for c in containers(t.spec)]
    annotated = sorted({hit.group(1) for k in notes if (hit := _PER_CONTAINER.match(k))})
    if len(annotated) > 1:
        yield (
            f"fraction annotations name {len(annotated)} containers ({', '.join(annotated)}); "
            "a fraction is given to one container: annotate only that one",
            m.annotations_path,
        )
    missing = [c for c in annotated if names and c not in names]
    target = notes.get(_CONTAINER_NAME)
    if target is not None and names and target not in names:
        missing.append(target)
    if missing:
        ephemeral = {
            str(mapping(c).get("name") or "") for c in items(t.spec.get("ephemeralContainers"))
        }
        among = ", ".join(sorted(set(missing) & ephemeral))
        yield (
            f"fraction annotations name container(s) the pod does not have: "
            f"{', '.join(sorted(set(missing)))} (containers and init containers: "
            f"{', '.join(names)})"
            + (f"; {among}: an ephemeral container, which KAI does not look among" if among else "")
            + "; KAI's admission webhook and binder find no container to give the fraction to",
            m.annotations_path,
        )


@rule(
    "FL014",
    "unread-memory-annotations",
    ERROR,
    "GPU-memory annotations in a format the node agents do not read: no memory limit",
)
def unread_memory_annotations(m: Manifest) -> Iterator[Hit]:
    """GPU-memory keys the agents ignore, under another prefix or generation's format.

    The agents read ``<prefix><container>.gpu-memory.limit`` under the fractioning
    config's ``spec.fractioningAgent.annotationPrefix`` (the config among the linted
    manifests, else the agents' default ``nvidia.com/container.``; kai-gpu-fractioning
    ``fractioning-manager/fractiond/internal/annotations/annotations.go``). A limit
    written otherwise is ignored and the container runs with no MPS memory limit.
    """
    if m.agents is None or m.template is None:
        return
    unread = unread_memory_keys(m.notes, m.agents)
    if unread:
        keys = ", ".join(f"{key} (read: {instead})" for key, instead in unread)
        yield (
            f"the node agents read GPU-memory limits under {m.agents.value} "
            f"({'; '.join(m.agents.origins)}), not: {keys}; this container would run with no "
            "memory limit",
            m.annotations_path,
        )
