"""Rules on the fraction annotations of a pod template: their values, and which container.

KAI reads ``gpu-fraction`` (a share of one GPU in (0, 1]) or ``gpu-memory`` (whole
MiB), never both, and gives the fraction to one container: the one named by
``gpu-fraction-container-name``, or by ``nvidia.com/container.<name>.gpu-…`` keys.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from fracctl.core.lint.base import ERROR, Hit, Manifest
from fracctl.core.lint.registry import rule
from fracctl.core.podspec import containers

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


@rule("FL004", "gpu-memory-mib", ERROR, "gpu-memory is not a whole, positive number of MiB")
def gpu_memory_mib(m: Manifest) -> Iterator[Hit]:
    """Each gpu-memory value (pod-wide or per container) that is not whole MiB."""
    notes = m.notes
    memory_keys = [
        k for k in notes if k == _MEMORY or (_PER_CONTAINER.match(k) and ".gpu-memory." in k)
    ]
    for key in memory_keys:
        if not _MIB.match(notes[key].strip()):
            yield (
                f"{key} is {notes[key]!r}; it must be a whole, positive number of MiB "
                '("4096", not "4Gi" or "4096.5")',
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
    """Fraction annotations naming several containers, then containers the pod lacks."""
    t = m.template
    if t is None:
        return
    notes = m.notes
    names = [c.name for c in containers(t.spec, init=False)]
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
        yield (
            f"fraction annotations name container(s) the pod does not have: "
            f"{', '.join(sorted(set(missing)))} (containers: {', '.join(names)})",
            m.annotations_path,
        )
