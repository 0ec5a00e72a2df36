"""Which pods use fractional GPUs, decided from their metadata alone.

KAI marks a fractional pod with annotations: the ones a user sets (``gpu-fraction``,
``gpu-memory``, ``nvidia.com/container.<c>.gpu-memory.request`` ...) and the ones the
binder writes when it places the pod (``nvidia.com/container.<c>.gpus.devices``,
``received-resource-type: Fraction`` ...). The key set is configuration; each entry is

* ``key``: the annotation is present (any value);
* ``key=value``: the annotation is present with exactly that value;
* a ``*`` in the key stands for one container name (no ``/`` and no ``.``).

Pods in the reservation namespace are KAI's own placeholders that hold a GPU for
fractions; they are infrastructure, reported apart from workloads and never blocking.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

# A container name is a DNS-1123 label, so ``*`` never has to cross a dot or a slash.
_STAR = r"[^/.]+"


class PodKind(str, Enum):
    """What a pod is, for the fractional-pod guard."""

    FRACTIONAL = "fractional"
    RESERVATION = "reservation"
    OTHER = "other"


@dataclass(frozen=True)
class AnnotationMatcher:
    """Compiled fraction-annotation patterns.

    Build it once with :meth:`compile`; :meth:`match` runs for every pod of a
    cluster-wide scan, so exact keys are a dict lookup and all wildcard keys share one
    regular expression (one named group per pattern).
    """

    exact: Mapping[str, tuple[str | None, ...]]
    wildcard: re.Pattern[str] | None
    wildcard_values: Mapping[str, str | None]  # group name -> required value
    each: tuple[tuple[re.Pattern[str], str | None], ...] = ()  # for overlapping patterns

    @classmethod
    def compile(cls, patterns: Iterable[str]) -> AnnotationMatcher:
        """Compile ``key``, ``key=value`` and ``prefix.*.suffix`` patterns.

        Raises:
            ValueError: a pattern has an empty key.
        """
        exact: dict[str, list[str | None]] = {}
        groups: list[str] = []
        values: dict[str, str | None] = {}
        each: list[tuple[re.Pattern[str], str | None]] = []
        for raw in patterns:
            key, sep, value = raw.strip().partition("=")
            key = key.strip()
            if not key:
                raise ValueError(f"fraction annotation pattern {raw!r} has no key")
            val = value.strip() if sep else None
            if "*" in key:
                name = f"p{len(groups)}"
                body = _STAR.join(re.escape(part) for part in key.split("*"))
                groups.append(f"(?P<{name}>{body})")
                values[name] = val
                each.append((re.compile(body + r"\Z"), val))
            else:
                exact.setdefault(key, []).append(val)
        wildcard = re.compile("(?:" + "|".join(groups) + r")\Z") if groups else None
        return cls({k: tuple(v) for k, v in exact.items()}, wildcard, values, tuple(each))

    def match(self, annotations: Mapping[str, str] | None) -> list[str]:
        """The annotation keys that mark a pod fractional (sorted; empty when none)."""
        if not annotations:
            return []
        hits: list[str] = []
        for key, value in annotations.items():
            wanted = self.exact.get(key)
            if wanted is not None:
                if None in wanted or value in wanted:
                    hits.append(key)
            elif self.wildcard is not None:
                m = self.wildcard.match(key)
                if m is None:
                    continue
                if self.wildcard_values[m.lastgroup or ""] in (None, value) or any(
                    want in (None, value) and rx.match(key) for rx, want in self.each
                ):
                    hits.append(key)
        return sorted(hits)


@dataclass(frozen=True)
class PodClass:
    """The verdict on one pod."""

    kind: PodKind
    keys: tuple[str, ...] = ()


def classify(
    metadata: Mapping[str, Any], matcher: AnnotationMatcher, *, reservation_namespace: str
) -> PodClass:
    """Classify a pod from its ``metadata`` (a PartialObjectMetadata is enough).

    Args:
        metadata: the pod's ``metadata`` mapping.
        matcher: the compiled fraction-annotation patterns.
        reservation_namespace: where KAI keeps its GPU reservation pods.

    Returns:
        ``RESERVATION`` for any pod in the reservation namespace, ``FRACTIONAL`` with the
        matched keys for a pod carrying a fraction annotation, ``OTHER`` otherwise.
    """
    return classify_pod(
        metadata.get("namespace"),
        metadata.get("annotations"),
        matcher,
        reservation_namespace=reservation_namespace,
    )


def classify_pod(
    namespace: str | None,
    annotations: Mapping[str, str] | None,
    matcher: AnnotationMatcher,
    *,
    reservation_namespace: str,
) -> PodClass:
    """:func:`classify` from a pod's namespace and annotations alone."""
    keys = tuple(matcher.match(annotations))
    if namespace == reservation_namespace:
        return PodClass(PodKind.RESERVATION, keys)
    if keys:
        return PodClass(PodKind.FRACTIONAL, keys)
    return PodClass(PodKind.OTHER)


FINISHED_PHASES: Sequence[str] = ("Succeeded", "Failed")


def unfinished_selector() -> str:
    """The field selector that leaves out pods that can no longer run."""
    return ",".join(f"status.phase!={p}" for p in FINISHED_PHASES)
