"""``helm:`` in fracctl.yaml: the helm backend's own section.

Declared in the backends' registry (:mod:`fracctl.core.gitops.backends`) and read by
:mod:`fracctl.config` like every built-in section; a setting lives in config, so that
loading fracctl.yaml imports nothing of the flows that use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fracctl.config.values import Duration, InvalidValue


@dataclass(frozen=True)
class HelmSettings:
    """``helm:`` in fracctl.yaml: which helm runs the upgrade, and for how long."""

    binary: str = "helm"  # a name on PATH or a path
    timeout: Duration = Duration(600)  # helm upgrade --timeout: the hook's delete and create

    def __post_init__(self) -> None:
        if not str(self.binary).strip():
            raise InvalidValue("binary", "must name a helm binary")
        if self.timeout <= 0:
            raise InvalidValue("timeout", f"must be a positive duration, got {self.timeout:g}s")
