"""The configuration sections core reads, named as protocols so core never imports config.

Doctor, lint and the RBAC roles take the sections of fracctl.yaml whole; each protocol
here lists exactly the attributes core reads of one section, and the section class in
:mod:`fracctl.config` fits it (``fracctl.config.TargetConfig`` fits
:class:`TargetSettings`, and so on). The defaults live only there. The node opt-in
labels are :class:`fracctl.core.fractions.policy.LabelPolicy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class TargetSettings(Protocol):
    """The fractioning config object (``fracctl.config.TargetConfig`` fits)."""

    @property
    def naming(self) -> str:
        """Its generation's naming (``gpu-fractioning`` or ``gpu-sharing``)."""
        ...

    @property
    def group(self) -> str:
        """Its API group."""
        ...

    @property
    def kind(self) -> str:
        """Its kind."""
        ...

    @property
    def plural(self) -> str:
        """Its resource's plural name."""
        ...

    @property
    def name(self) -> str:
        """The one object's name."""
        ...


class ClusterSettings(Protocol):
    """Where KAI and the node agents live (``fracctl.config.ClusterConfig`` fits)."""

    @property
    def agent_namespace(self) -> str:
        """The node agents' and the operator's namespace."""
        ...

    @property
    def agent_daemonsets(self) -> Sequence[str]:
        """The node agents' DaemonSets."""
        ...

    @property
    def operator_deployment(self) -> str:
        """The operator's Deployment, which releases the target's finalizer."""
        ...

    @property
    def operator_lease(self) -> str:
        """The operator's leader-election Lease ("" when leader election is off)."""
        ...

    @property
    def scheduler_namespace(self) -> str:
        """KAI's namespace."""
        ...

    @property
    def scheduler_config(self) -> str:
        """KAI's cluster-scoped Config."""
        ...

    @property
    def runtime_class(self) -> str:
        """The RuntimeClass fractional pods run with."""
        ...

    @property
    def gpu_taint(self) -> str:
        """The NoSchedule taint key that keeps GPU nodes apart."""
        ...

    @property
    def gpu_taint_required(self) -> bool:
        """Whether GPU nodes must carry that taint."""
        ...

    @property
    def gpu_resources(self) -> Sequence[str]:
        """The extended resources that count as GPUs."""
        ...


class PodsSettings(Protocol):
    """How fractional pods are recognised (``fracctl.config.PodsConfig`` fits)."""

    @property
    def fraction_annotations(self) -> Sequence[str]:
        """Annotation patterns that mark a pod fractional, beside KAI's and the agents'."""
        ...

    @property
    def reservation_namespace(self) -> str:
        """Where KAI runs its reservation pods."""
        ...


class LintOptions(Protocol):
    """Policy for ``fracctl lint`` (``fracctl.config.LintConfig`` fits)."""

    @property
    def multi_vendor(self) -> bool:
        """Whether workloads must not hard-code one vendor's GPU resource."""
        ...

    @property
    def disable(self) -> Sequence[str]:
        """Rule ids or names to skip."""
        ...

    @property
    def extended_resource_toleration(self) -> bool | None:
        """Whether the API server runs ExtendedResourceToleration (None: not known)."""
        ...


class LockSettings(Protocol):
    """The lock Lease of ``fracctl recreate`` (``fracctl.config.RecreateConfig`` fits)."""

    @property
    def lock_namespace(self) -> str:
        """The Lease's namespace."""
        ...

    @property
    def lock_name(self) -> str:
        """The Lease's name."""
        ...


class FluxSettings(Protocol):
    """The Flux Kustomization that owns the target (``fracctl.config.FluxConfig`` fits)."""

    @property
    def namespace(self) -> str:
        """The Kustomization's namespace."""
        ...

    @property
    def kustomization(self) -> str:
        """The Kustomization's name."""
        ...

    @property
    def helmrelease(self) -> str:
        """The HelmRelease of the operator's chart ("": none)."""
        ...

    @property
    def controller_namespace(self) -> str:
        """Where Flux's controllers run."""
        ...

    @property
    def leases(self) -> Sequence[str]:
        """Their leader-election Leases."""
        ...
