"""fracctl.yaml + environment + flags, validated with clear messages.

Precedence: flags > environment > file > defaults. The file is found from ``--config``,
``FRACCTL_CONFIG``, or ``./fracctl.yaml`` (optional unless named explicitly). Every key
can also come from the environment as ``FRACCTL_<SECTION>_<KEY>`` (upper case), for
example ``FRACCTL_ARGOCD_APP`` or ``FRACCTL_TIMEOUTS_READY=15m``.

A bad file raises :class:`~fracctl.errors.ConfigError` naming the file, line and field;
a section's checks raise :class:`~fracctl.config.values.InvalidValue` with the key at
fault, which the loader turns into that error.
The sections are defined in :mod:`.cluster` and :mod:`.node`, the whole file in
:mod:`.schema`, and reading it in :mod:`.loader`; every name is importable from here.
"""

from __future__ import annotations

from fracctl.config.cluster import (
    NAMINGS,
    ArgoCDConfig,
    ClusterConfig,
    FleetCluster,
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
from fracctl.config.loader import check_value, load
from fracctl.config.node import MPSConfig, ProbeConfig
from fracctl.config.schema import Config
from fracctl.config.values import Duration, InvalidValue, parse_duration
from fracctl.errors import ConfigError

__all__ = [
    "NAMINGS",
    "ArgoCDConfig",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "Duration",
    "FleetCluster",
    "FleetConfig",
    "FluxConfig",
    "GitConfig",
    "InvalidValue",
    "KubeConfig",
    "LabelsConfig",
    "LintConfig",
    "MPSConfig",
    "PodsConfig",
    "ProbeConfig",
    "ReadinessConfig",
    "RecreateConfig",
    "TargetConfig",
    "TimeoutsConfig",
    "check_value",
    "load",
    "parse_duration",
]
