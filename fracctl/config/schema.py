"""The whole of fracctl.yaml: :class:`Config`, one field per section.

The field names are the file's section names and the ``FRACCTL_<SECTION>_<KEY>``
prefixes; the loader reads the sections and their keys from these type hints, so a
section added here is read from the file, the environment and flags alike. A backend
may bring a section of its own (``section=`` in :mod:`fracctl.core.gitops.backends`); those are
read the same way and kept in :attr:`Config.backends`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.config.cluster import (
    NAMINGS,
    ArgoCDConfig,
    ClusterConfig,
    FleetConfig,
    FluxConfig,
    GitConfig,
    KubeConfig,
    LabelsConfig,
    LintConfig,
    PodsConfig,
    ReadinessConfig,
    RecreateConfig,
    TargetConfig,
    TimeoutsConfig,
)
from fracctl.config.node import MPSConfig, ProbeConfig


@dataclass(frozen=True)
class Config:
    """Everything fracctl is configured with."""

    kube: KubeConfig = field(default_factory=KubeConfig)
    target: TargetConfig = field(default_factory=TargetConfig)
    readiness: ReadinessConfig = field(default_factory=ReadinessConfig)
    labels: LabelsConfig = field(default_factory=LabelsConfig)
    pods: PodsConfig = field(default_factory=PodsConfig)
    git: GitConfig = field(default_factory=GitConfig)
    argocd: ArgoCDConfig = field(default_factory=ArgoCDConfig)
    flux: FluxConfig = field(default_factory=FluxConfig)
    recreate: RecreateConfig = field(default_factory=RecreateConfig)
    timeouts: TimeoutsConfig = field(default_factory=TimeoutsConfig)
    mps: MPSConfig = field(default_factory=MPSConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    lint: LintConfig = field(default_factory=LintConfig)
    fleet: FleetConfig = field(default_factory=FleetConfig)
    # The backends' own sections (``fracctl.core.gitops.backends``), by backend name.
    backends: Mapping[str, Any] = field(default_factory=dict, hash=False)
    source: str | None = None  # the file this came from, if any

    def section(self, name: str) -> Any:
        """A backend's own section: as configured, else its defaults."""
        from fracctl.core.gitops.backends import section

        return section(self.backends, name)

    @property
    def condition(self) -> str:
        """The readiness condition type, from the naming preset unless set."""
        return self.readiness.condition or NAMINGS[self.target.naming]["condition"]
