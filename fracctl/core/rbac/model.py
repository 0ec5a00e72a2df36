"""The model of fracctl's roles: parameters, rules, roles, their names and labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.kube.resources import EVENTS_NAMESPACE
from fracctl.core.settings import ClusterSettings, FluxSettings, LockSettings, TargetSettings

API_VERSION = "rbac.authorization.k8s.io/v1"
FLUX_GROUP = "kustomize.toolkit.fluxcd.io"
FLUX_SOURCE_GROUP = "source.toolkit.fluxcd.io"
KAI_GROUP = "kai.scheduler"  # KAI's cluster-scoped Config (configs.kai.scheduler/v1)


@dataclass(frozen=True)
class Params:
    """What the rules depend on: the configuration's sections, taken whole."""

    target: TargetSettings
    cluster: ClusterSettings
    recreate: LockSettings
    flux: FluxSettings
    backend: str  # the recreate backend: a flag's choice, else the configuration's
    events_namespace: str = EVENTS_NAMESPACE
    sections: Mapping[str, Any] = field(default_factory=dict, hash=False)  # backends' own
    helm_release: tuple[str, str] = ("release", "default")  # git's release: name, namespace
    argocd_namespace: str = "argocd"  # where Argo CD runs (fleet status reads it)

    def section(self, name: str) -> Any:
        """A backend's own configuration section: as configured, else its defaults."""
        from fracctl.core.gitops.backends import section

        return section(self.sections, name)

    @property
    def crd_name(self) -> str:
        """The target's CustomResourceDefinition, ``plural.group``."""
        return f"{self.target.plural}.{self.target.group}"


@dataclass(frozen=True)
class RbacRule:
    """One RBAC policy rule, with the reason it is granted."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    resource_names: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The rule as the RBAC API spells it."""
        out: dict[str, Any] = {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
        }
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        out["verbs"] = list(self.verbs)
        return out


@dataclass(frozen=True)
class Role:
    """A ClusterRole (``namespace`` empty) or a Role in ``namespace``."""

    name: str
    component: str
    rules: tuple[RbacRule, ...]
    namespace: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def kind(self) -> str:
        """``ClusterRole`` or ``Role``."""
        return "Role" if self.namespace else "ClusterRole"

    def to_dict(self) -> dict[str, Any]:
        """The object as the API server takes it."""
        meta: dict[str, Any] = {"name": self.name}
        if self.namespace:
            meta["namespace"] = self.namespace
        meta["labels"] = labels(self.component)
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "metadata": meta,
            "rules": [r.to_dict() for r in self.rules],
        }


def labels(component: str) -> dict[str, str]:
    """The recommended labels of every object fracctl ships."""
    return {"app.kubernetes.io/name": "fracctl", "app.kubernetes.io/component": component}


def role_name(role: str) -> str:
    """``fracctl-<role>``: the name of the role's ClusterRole and Roles."""
    return f"fracctl-{role}"


Rules = tuple[list[RbacRule], dict[str, list[RbacRule]]]  # cluster-wide, by namespace
