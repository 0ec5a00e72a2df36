"""The shapes lint works with: a rule, the settings, one manifest as rules see it, a finding.

A rule is a :class:`LintRule`: its id, name, severity and one-line summary, and the
function that judges. Most rules judge one manifest at a time (``each``: a
:class:`Manifest` in, ``(message, field path)`` pairs out); a rule over the whole
input (``across``) sees every manifest at once. Rules are declared and registered
with the decorators in :mod:`fracctl.core.lint.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from fracctl.core.fractions.fractional import AnnotationMatcher, Prefix
from fracctl.core.fractions.policy import LabelPolicy
from fracctl.core.kube.podspec import ContainerRef, PodTemplate, gpu_requests, mapping, path_string
from fracctl.core.kube.resources import split_api_version
from fracctl.core.settings import ClusterSettings, LintOptions, PodsSettings, TargetSettings

IGNORE_ANNOTATION = "fracctl.io/ignore"
MULTI_VENDOR_ANNOTATION = "fracctl.io/multi-vendor"
ERROR = "error"
WARNING = "warning"

Hit = tuple[str, str]  # (message, field path) for one finding on one manifest
PlacedHit = tuple[int, str, str]  # (manifest index, message, field path)


@dataclass(frozen=True)
class LintSettings:
    """What the rules need from the configuration: its sections, taken whole."""

    labels: LabelPolicy
    target: TargetSettings
    cluster: ClusterSettings
    pods: PodsSettings
    lint: LintOptions


@dataclass(frozen=True)
class Manifest:
    """One parsed manifest as the rules see it, with what several rules read of it."""

    index: int  # its place in the input
    obj: Mapping[str, Any]
    template: PodTemplate | None  # its pod template, when it has one
    settings: LintSettings
    matcher: AnnotationMatcher
    agents: Prefix | None = None  # the annotation prefix the agents read, and its format

    @property
    def is_config(self) -> bool:
        """Whether it is the fractioning config (the target kind in the target group)."""
        s = self.settings
        group, _ = split_api_version(str(self.obj.get("apiVersion") or ""))
        return self.obj.get("kind") == s.target.kind and group == s.target.group

    @property
    def is_agent(self) -> bool:
        """Whether it is one of the node agents' workloads."""
        s = self.settings
        meta = mapping(self.obj.get("metadata"))
        name = str(meta.get("name") or "")
        return (
            meta.get("namespace") == s.cluster.agent_namespace
            or name in s.cluster.agent_daemonsets
            or name.startswith("gpu-fractioning")
        )

    @cached_property
    def notes(self) -> dict[str, str]:
        """The pod template's annotations (empty without a template)."""
        return self.template.annotations if self.template is not None else {}

    @cached_property
    def gpu(self) -> list[tuple[ContainerRef, str, str]]:
        """Every GPU resource the pod template's containers ask for."""
        if self.template is None:
            return []
        s = self.settings
        spec = self.template.spec
        return (
            gpu_requests(spec, s.cluster.gpu_resources)
            if s.cluster.gpu_resources
            else gpu_requests(spec)
        )

    @cached_property
    def fractional(self) -> bool:
        """Whether the pod template asks for a GPU fraction."""
        return bool(self.matcher.match(self.notes))

    @property
    def annotations_path(self) -> str:
        """The field path of the pod template's annotations."""
        return path_string(self.template.at("metadata", "annotations")) if self.template else ""


Each = Callable[[Manifest], Iterable[Hit]]
Across = Callable[[Sequence[Manifest], LintSettings], Iterable[PlacedHit]]


@dataclass(frozen=True)
class LintRule:
    """One lint rule: what it is called and how bad, and the function that judges."""

    id: str
    name: str
    severity: str
    summary: str  # the docs line; runbooks/lint-rules.md has a section per rule
    each: Each | None = field(default=None, compare=False, repr=False)
    across: Across | None = field(default=None, compare=False, repr=False)
    silenceable: bool = field(default=True, compare=False, repr=False)

    def to_dict(self) -> dict[str, str]:
        """Plain data for ``--list-rules -o json``."""
        return {
            "id": self.id,
            "name": self.name,
            "severity": self.severity,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class Finding:
    """One rule broken by one manifest."""

    rule: LintRule
    message: str
    index: int  # which manifest
    path: str = ""  # the field, for its line (spec.template.spec.containers[0])
    suppressed: str | None = None  # the reason given in the manifest, when silenced

    def with_reason(self, reason: str) -> Finding:
        """This finding, silenced with ``reason``."""
        return Finding(self.rule, self.message, self.index, self.path, reason)


def object_name(obj: Mapping[str, Any]) -> str:
    """``Deployment/ml/trainer``, ``GpuFractioningConfig/default``, or ``Kind/?``."""
    meta = mapping(obj.get("metadata"))
    kind = str(obj.get("kind") or "?")
    name = str(meta.get("name") or "?")
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{name}" if isinstance(ns, str) and ns else f"{kind}/{name}"
