"""Which pods use fractional GPUs, decided from their metadata alone.

A pod is fractional when it carries an annotation that KAI or the node agents act on:

* KAI's own annotations, set by a user (``gpu-fraction``, ``gpu-memory``, ...) or by
  its binder when it places the pod (``received-resource-type: Fraction``):
  :data:`KAI_ANNOTATIONS`;
* the node agents' per-container keys, under a prefix the fractioning config carries
  (``spec.fractioningAgent.annotationPrefix``; ``spec.sharingAgent.annotationPrefix``
  in the gpu-sharing generation): :data:`AGENT_FORMATS`. The agents give a container an
  MPS memory limit from exactly these keys, so they are read from the live config and
  from git's desired config, beside each generation's documented default;
* what ``pods.fraction_annotations`` in fracctl.yaml adds.

Patterns are

* ``key``: the annotation is present (any value);
* ``key=value``: the annotation is present with exactly that value;
* a ``*`` in the key stands for one container name (no ``/`` and no ``.``).

Pods in the reservation namespace are KAI's own placeholders that hold a GPU for
fractions; they are infrastructure, reported apart from workloads and never blocking.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# A container name is a DNS-1123 label, so ``*`` never has to cross a dot or a slash.
_STAR = r"[^/.]+"


#: KAI's own annotations on a fractional pod: what a user writes (KAI-Scheduler
#: ``docs/gpu-sharing/README.md``: ``gpu-fraction``, ``gpu-memory``,
#: ``gpu-fraction-num-devices``, ``gpu-fraction-container-name``) and what its binder
#: writes when it binds a fraction (``received-resource-type: Fraction``,
#: ``pkg/common/constants``).
KAI_ANNOTATIONS: tuple[str, ...] = (
    "gpu-fraction",
    "gpu-memory",
    "gpu-fraction-num-devices",
    "gpu-fraction-container-name",
    "received-resource-type=Fraction",
)


@dataclass(frozen=True)
class AgentFormat:
    """How one generation of the gpu-fractioning node agents names a pod's annotations.

    The agents read ``<prefix><container>.<suffix>`` for each container; the prefix is
    the config's ``<agent>.annotationPrefix``, or :attr:`default_prefix` when unset.
    """

    naming: str  # the fracctl.yaml target naming it belongs to
    agent: str  # the config's field that carries the prefix, under spec
    default_prefix: str
    suffixes: tuple[str, ...]  # after "<prefix><container>."
    memory: tuple[str, ...]  # the suffixes that set the MPS memory limit
    pod_keys: tuple[str, ...] = ()  # keys of the whole pod, beside the per-container ones
    source: str = ""  # where the format is written, upstream

    @property
    def prefix_field(self) -> str:
        """The config's field that carries the prefix (dotted, from the object's root)."""
        return f"spec.{self.agent}.annotationPrefix"

    def patterns(self, prefix: str) -> list[str]:
        """The annotation patterns the agents read under ``prefix``."""
        return [f"{prefix}*.{suffix}" for suffix in self.suffixes] + list(self.pod_keys)

    def memory_key(self, prefix: str, container: str, which: str = "limit") -> str:
        """The key that gives ``container`` its memory ``limit`` (or ``request``)."""
        suffix = next(s for s in self.memory if s.endswith(which))
        return f"{prefix}{container}.{suffix}"


#: The formats, per naming. Read from kai-scheduler/kai-gpu-fractioning:
#: ``fractioning-manager/fractiond/internal/annotations/annotations.go`` and
#: ``fractioning-manager/common/configuration/configuration.go`` (DefaultAnnotationPrefix
#: ``nvidia.com/container.``; ``api/v1alpha1/gpufractioningconfig_types.go``
#: FractioningAgentSpec.AnnotationPrefix), and for the gpu-sharing generation
#: ``sharing-manager/sharingd/internal/annotations/annotations.go`` and
#: ``sharing-manager/common/configuration/configuration.go`` (DefaultAnnotationPrefix
#: ``nvidia.com/gpu-memory.container.``; ``api/v1alpha1/gpusharingconfig_types.go``
#: SharingAgentSpec.AnnotationPrefix; the pod-level ``nvidia.com/gpus.devices``).
AGENT_FORMATS: dict[str, AgentFormat] = {
    "gpu-fractioning": AgentFormat(
        naming="gpu-fractioning",
        agent="fractioningAgent",
        default_prefix="nvidia.com/container.",
        suffixes=("gpu-memory.request", "gpu-memory.limit", "gpus.devices", "gpu-compute.mode"),
        memory=("gpu-memory.request", "gpu-memory.limit"),
        source="kai-gpu-fractioning fractioning-manager/fractiond/internal/annotations/"
        "annotations.go",
    ),
    "gpu-sharing": AgentFormat(
        naming="gpu-sharing",
        agent="sharingAgent",
        default_prefix="nvidia.com/gpu-memory.container.",
        suffixes=("request", "limit"),
        memory=("request", "limit"),
        pod_keys=("nvidia.com/gpus.devices",),
        source="kai-gpu-fractioning sharing-manager/sharingd/internal/annotations/annotations.go",
    ),
}

# What an annotation key prefix may hold (a DNS subdomain, a slash, a name's start).
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*\Z")


@dataclass(frozen=True)
class Prefix:
    """An annotation prefix the agents read (or may read), and where it was learnt."""

    value: str
    naming: str
    origins: tuple[str, ...]

    @property
    def format(self) -> AgentFormat:
        """The key format under this prefix."""
        return AGENT_FORMATS[self.naming]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``-o json``."""
        return {"prefix": self.value, "naming": self.naming, "from": list(self.origins)}

    @property
    def configured(self) -> bool:
        """Whether a config sets it (not only an agent generation's documented default)."""
        return any(o.endswith(".annotationPrefix") for o in self.origins)

    def describe(self) -> str:
        """``nvidia.com/container. (from: ...)``."""
        return f"{self.value} ({'; '.join(self.origins)})"


class PrefixError(ValueError):
    """A config sets an annotation prefix that no annotation key can start with."""


def _prefix_of(obj: Mapping[str, Any], fmt: AgentFormat) -> tuple[str, bool]:
    """The prefix a config object sets for its agents, and whether it sets one."""
    agent = ((obj.get("spec") or {}).get(fmt.agent)) or {}
    value = agent.get("annotationPrefix") if isinstance(agent, Mapping) else None
    if isinstance(value, str) and value:
        if not _PREFIX.match(value):
            raise PrefixError(f"{fmt.prefix_field} {value!r} is not the start of an annotation key")
        return value, True
    return fmt.default_prefix, False


def agent_prefixes(
    naming: str,
    *,
    live: Mapping[str, Any] | None = None,
    desired: Mapping[str, Any] | None = None,
    kind: str = "config",
) -> list[Prefix]:
    """Every annotation prefix under which a pod's keys reach the agents.

    The live config's prefix (what the agents read now) and git's (what they read after a
    recreate), then each generation's documented default, in that order; one entry per
    prefix, with every place it came from.

    Raises:
        PrefixError: a config sets a prefix no annotation key can start with.
    """
    fmt = AGENT_FORMATS.get(naming, AGENT_FORMATS["gpu-fractioning"])
    found: dict[tuple[str, str], list[str]] = {}
    for where, obj in (("the live", live), ("git's", desired)):
        if obj is None:
            continue
        value, set_ = _prefix_of(obj, fmt)
        how = fmt.prefix_field if set_ else f"{fmt.prefix_field} unset: the agents' default"
        found.setdefault((value, fmt.naming), []).append(f"{where} {kind}, {how}")
    for other in AGENT_FORMATS.values():
        found.setdefault((other.default_prefix, other.naming), []).append(
            f"the {other.naming} agents' documented default"
        )
    return [Prefix(v, n, tuple(o)) for (v, n), o in found.items()]


def fraction_patterns(additions: Iterable[str], prefixes: Iterable[Prefix]) -> list[str]:
    """KAI's annotations, the agents' keys under each prefix, then ``additions``."""
    out = list(KAI_ANNOTATIONS)
    for p in prefixes:
        out += p.format.patterns(p.value)
    out += list(additions)
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Fractions:
    """How this cluster's fractional pods are recognised: the matcher and its prefixes."""

    matcher: AnnotationMatcher
    prefixes: tuple[Prefix, ...] = field(default=())

    @classmethod
    def of(
        cls,
        additions: Iterable[str],
        naming: str,
        *,
        live: Mapping[str, Any] | None = None,
        desired: Mapping[str, Any] | None = None,
        kind: str = "config",
    ) -> Fractions:
        """Compile KAI's and the agents' patterns and ``additions``.

        Raises:
            ValueError: a pattern has no key, or a config's prefix is not a key's start.
        """
        prefixes = agent_prefixes(naming, live=live, desired=desired, kind=kind)
        return cls(AnnotationMatcher.compile(fraction_patterns(additions, prefixes)),
                   tuple(prefixes))  # fmt: skip

    def describe(self, *, configured_only: bool = False) -> str:
        """The prefixes, for evidence: ``prefixes: a (from ...), b (from ...)``.

        With ``configured_only``, only those a config sets ("" when none does): a refusal
        lists the keys it matched, so the agents' defaults need no words there.
        """
        shown = [p for p in self.prefixes if p.configured or not configured_only]
        if not shown:
            return ""
        return "annotation prefixes " + ", ".join(p.describe() for p in shown)


class PodKind(str, Enum):
    """What a pod is, for the fractional-pod guard."""

    FRACTIONAL = "fractional"
    RESERVATION = "reservation"
    OTHER = "other"


@dataclass(frozen=True)
class AnnotationMatcher:
    """Compiled fraction-annotation patterns.

    Build it once with :meth:`compile`; :meth:`match` runs for every pod of a
    cluster-wide scan, so exact keys are a dict lookup, all wildcard keys share one
    regular expression (one named group per pattern), and only a key that starts as
    one of them does (``str.startswith`` on :attr:`starts`) is tried against it.
    """

    exact: Mapping[str, tuple[str | None, ...]]
    wildcard: re.Pattern[str] | None
    wildcard_values: Mapping[str, str | None]  # group name -> required value
    each: tuple[tuple[re.Pattern[str], str | None], ...] = ()  # for overlapping patterns
    starts: tuple[str, ...] = ()  # what every wildcard key starts with, before its ``*``

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
        starts: set[str] = set()
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
                starts.add(key.split("*", 1)[0])
            else:
                exact.setdefault(key, []).append(val)
        wildcard = re.compile("(?:" + "|".join(groups) + r")\Z") if groups else None
        exacts = {k: tuple(v) for k, v in exact.items()}
        return cls(exacts, wildcard, values, tuple(each), tuple(sorted(starts)))

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
            elif self.wildcard is not None and key.startswith(self.starts):
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
