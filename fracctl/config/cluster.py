"""The cluster-side sections of fracctl.yaml, each validated as it is built.

How fracctl reaches the cluster (``kube``), the object it guards (``target``, with the
:data:`NAMINGS` presets), node readiness and opt-in (``readiness``, ``labels``), how
fractional pods are recognised (``pods``), where the desired manifests live and who
syncs them (``git``, ``argocd``, ``flux``), how ``recreate`` runs (``recreate``,
``timeouts``), where KAI and the node agents live (``cluster``), lint policy (``lint``)
and fleets of clusters (``fleet``). A bad value raises
:class:`~fracctl.config.values.InvalidValue` naming its key; the loader adds where it
came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.config.values import Duration, InvalidValue, names_given
from fracctl.core.fractions.policy import product_words
from fracctl.core.gitops import backends as backend_registry
from fracctl.core.kube.podspec import DEFAULT_GPU_RESOURCES
from fracctl.core.kube.resources import ResourceRef, split_api_version, target_ref

# --- target naming presets -------------------------------------------------------------

NAMINGS: dict[str, dict[str, str]] = {
    "gpu-fractioning": {
        "group": "gpu-fractioning.kai.scheduler",
        "kind": "GpuFractioningConfig",
        "plural": "gpufractioningconfigs",
        "finalizer": "gpu-fractioning.nvidia.com/cleanup-node-conditions",
        "condition": "gpu-fractioning.nvidia.com/Ready",
    },
    "gpu-sharing": {
        "group": "gpu-sharing.kai.scheduler",
        "kind": "GpuSharingConfig",
        "plural": "gpusharingconfigs",
        "finalizer": "gpu-sharing.nvidia.com/cleanup-node-conditions",
        "condition": "gpu-sharing.nvidia.com/Ready",
    },
}


@dataclass(frozen=True)
class KubeConfig:
    """How to reach the cluster."""

    kubeconfig: str | None = None  # None: $KUBECONFIG or ~/.kube/config
    context: str | None = None
    in_cluster: bool = False


@dataclass(frozen=True)
class TargetConfig:
    """The cluster-scoped object whose immutable selector fracctl guards."""

    naming: str = "gpu-fractioning"
    group: str = ""
    version: str = "v1alpha1"
    kind: str = ""
    plural: str = ""
    name: str = "default"
    finalizer: str = ""
    selector_field: str = "spec.nodeSelector"

    def __post_init__(self) -> None:
        names_given(self, "name")
        preset = NAMINGS.get(self.naming)
        if preset is None:
            known = ", ".join(NAMINGS)
            raise InvalidValue("naming", f"must be one of {known}, got {self.naming!r}")
        for key in ("group", "kind", "plural", "finalizer"):
            if not getattr(self, key):
                object.__setattr__(self, key, preset[key])

    @property
    def api_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"

    @property
    def ref(self) -> ResourceRef:
        """The cluster-scoped resource the target lives in."""
        return target_ref(self.group, self.version, self.plural, self.kind)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether a manifest is the target object (group, kind and name)."""
        group, _ = split_api_version(str(obj.get("apiVersion", "")))
        return (
            group == self.group
            and obj.get("kind") == self.kind
            and (obj.get("metadata") or {}).get("name") == self.name
        )


@dataclass(frozen=True)
class ReadinessConfig:
    """The node condition that says a node's fraction daemons run."""

    condition: str = ""
    reason: str = "AllDaemonsReady"


@dataclass(frozen=True)
class LabelsConfig:
    """The node opt-in policy."""

    opt_in: str = "example.org/gpu-fractions=enabled"
    class_key: str = "example.org/gpu-class"
    allowed_classes: list[str] = field(default_factory=lambda: ["rtx-pro-6000", "b200"])
    denied_classes: list[str] = field(default_factory=lambda: ["h200"])
    # Set by GPU feature discovery from the hardware; checked as well as the class label.
    product_keys: list[str] = field(default_factory=lambda: ["nvidia.com/gpu.product"])
    denied_products: list[str] = field(default_factory=lambda: ["H200"])

    def __post_init__(self) -> None:
        if "=" not in self.opt_in or self.opt_in.startswith("="):
            raise InvalidValue("opt_in", f"must look like key=value, got {self.opt_in!r}")
        both = set(self.allowed_classes) & set(self.denied_classes)
        if both:
            # allowed_classes and denied_classes together: no one key is at fault
            raise InvalidValue(None, f"classes both allowed and denied: {', '.join(sorted(both))}")
        if any(not k.strip() for k in self.product_keys):
            raise InvalidValue("product_keys", "a label key cannot be empty", sep=": ")
        for pattern in self.denied_products:
            if not product_words(pattern):
                raise InvalidValue("denied_products", f"{pattern!r} names no product", sep=": ")

    @property
    def opt_in_key(self) -> str:
        """The opt-in label's key."""
        return self.opt_in.split("=", 1)[0]

    @property
    def opt_in_value(self) -> str:
        """The opt-in label's value."""
        return self.opt_in.split("=", 1)[1]


@dataclass(frozen=True)
class PodsConfig:
    """How fractional pods are recognised."""

    # Patterns added to what fracctl always recognises: KAI's annotations and the
    # agents' keys under the live and git's annotation prefix and each default.
    fraction_annotations: list[str] = field(default_factory=list)
    reservation_namespace: str = "kai-resource-reservation"
    page_size: int = 500


@dataclass(frozen=True)
class GitConfig:
    """Where the desired manifests live."""

    repo: str = "."
    path: str = "."
    revision: str = "HEAD"
    renderer: str = "auto"  # auto | plain | kustomize | helm
    namespace: str = ""  # for rendered objects that name none; "": helm_namespace, else default
    helm_release: str = ""  # default: the chart folder's name
    helm_namespace: str = ""
    helm_values: list[str] = field(default_factory=list)  # relative to the chart

    @property
    def objects_namespace(self) -> str:
        """Where a rendered namespaced object that names no namespace lands.

        ``namespace`` when given; else the release's namespace (``helm_namespace``: helm
        installs a chart's objects that name none there, as ``helm create`` scaffolds
        them); else ``default``.
        """
        return self.namespace or self.helm_namespace or "default"

    def __post_init__(self) -> None:
        if self.renderer not in ("auto", "plain", "kustomize", "helm"):
            raise InvalidValue(
                "renderer", f"must be auto, plain, kustomize or helm, got {self.renderer!r}"
            )


@dataclass(frozen=True)
class ArgoCDConfig:
    """The Argo CD server and application that own the target."""

    server: str | None = None  # else $ARGOCD_SERVER
    app: str | None = None
    token_file: str | None = None  # else $ARGOCD_AUTH_TOKEN
    insecure: bool = False
    plaintext: bool = False
    namespace: str = "argocd"  # where Argo CD runs: its Applications and ApplicationSets


@dataclass(frozen=True)
class FluxConfig:
    """The Flux Kustomization that owns the target (or HelmRelease that owns an object)."""

    kustomization: str = "gpu-fractioning"
    namespace: str = "flux-system"
    # The HelmRelease (in ``namespace``) that installs the operator's chart: with it,
    # ``recreate.backend: flux`` runs that chart's upgrade (the config is its hook). It
    # also owns the objects ``recreate KIND/NAME --backend flux`` carries when they do not
    # name theirs (helm.toolkit.fluxcd.io/name and /namespace labels).
    helmrelease: str = ""
    # Where Flux's controllers run, and the leader-election Leases that must be fresh for
    # a reconcile to be handled now (each controller's --enable-leader-election; a
    # --watch-label-selector adds a hash to the name).
    controller_namespace: str = "flux-system"
    leases: list[str] = field(
        default_factory=lambda: [
            "kustomize-controller-leader-election",
            "source-controller-leader-election",
        ]
    )
    # Who kustomize-controller applies as when the Kustomization names no
    # serviceAccountName: its own service account (or its --default-service-account).
    service_account: str = "kustomize-controller"
    # Who helm-controller upgrades as when the HelmRelease names no serviceAccountName
    # (its own service account, bound to cluster-admin by Flux's install).
    helm_service_account: str = "helm-controller"

    def __post_init__(self) -> None:
        names_given(self, "kustomization", "namespace", "controller_namespace")


@dataclass(frozen=True)
class RecreateConfig:
    """How ``fracctl recreate`` locks, recreates and records."""

    backend: str = "argocd"  # a name from fracctl.core.gitops.backends.REGISTRY
    lock_namespace: str = "default"
    lock_name: str = "fracctl-recreate"
    state_dir: str = "~/.local/state/fracctl"

    def __post_init__(self) -> None:
        names_given(self, "lock_namespace", "lock_name")
        if self.backend not in backend_registry.names():
            choices = backend_registry.choices()
            raise InvalidValue("backend", f"must be {choices}, got {self.backend!r}")


@dataclass(frozen=True)
class TimeoutsConfig:
    """Bounds for every wait."""

    request: Duration = Duration(30)
    delete: Duration = Duration(120)
    sync: Duration = Duration(300)
    ready: Duration = Duration(600)
    probe: Duration = Duration(120)
    lock_lease: Duration = Duration(60)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value <= 0:
                raise InvalidValue(f.name, f"must be a positive duration, got {value:g}s")


@dataclass(frozen=True)
class ClusterConfig:
    """Where KAI and the node agents live, for ``fracctl doctor`` and ``fracctl lint``."""

    agent_namespace: str = "gpu-fractioning"
    agent_daemonsets: list[str] = field(
        default_factory=lambda: ["gpu-fractioning-mpsd", "gpu-fractioning-fractiond"]
    )
    # The gpu-fractioning operator, in agent_namespace (upstream chart defaults): it
    # releases the config's finalizer on delete. Its leader-election Lease shows it runs
    # now; "" when leader election is off (then only the Deployment is read).
    operator_deployment: str = "gpu-fractioning"
    operator_lease: str = "gpu-fractioning.kai.scheduler"
    scheduler_namespace: str = "kai-scheduler"
    scheduler_config: str = "kai-config"  # the cluster-scoped Config (kai.scheduler/v1)
    runtime_class: str = "nvidia"
    gpu_taint: str = "nvidia.com/gpu"  # the NoSchedule taint key that keeps GPU nodes apart
    gpu_taint_required: bool = True
    gpu_resources: list[str] = field(default_factory=lambda: list(DEFAULT_GPU_RESOURCES))

    def __post_init__(self) -> None:
        names_given(
            self,
            "agent_namespace",
            "operator_deployment",
            "scheduler_namespace",
            "scheduler_config",
        )
        if not self.gpu_taint.strip():
            raise InvalidValue("gpu_taint", "cannot be empty")


@dataclass(frozen=True)
class LintConfig:
    """Policy for ``fracctl lint``."""

    multi_vendor: bool = False  # workloads must not hard-code one vendor's GPU resource
    disable: list[str] = field(default_factory=list)  # rule ids (FL003) or names to skip
    # Whether the API server runs the ExtendedResourceToleration admission plugin
    # (null: not known; FL013 warns where a pod depends on it)
    extended_resource_toleration: bool | None = None


@dataclass(frozen=True)
class FleetCluster:
    """One cluster of a fleet: its kubeconfig context and what differs there."""

    context: str
    name: str = ""  # how reports name it (default: the context)
    wave: int = 0  # recreate rolls out wave by wave; 0 is the canary
    app: str | None = None  # this cluster's Argo CD application (else argocd.app)
    path: str | None = None  # this cluster's path or overlay in git (else git.path)
    # The Secret on a Flux hub with this cluster's kubeconfig (key "value"), which its
    # Kustomizations name in spec.kubeConfig (else fracctl-fleet-<name>)
    kubeconfig_secret: str | None = None

    def __post_init__(self) -> None:
        names_given(self, "context")
        if not self.name:
            object.__setattr__(self, "name", self.context)
        if self.wave < 0:
            raise InvalidValue("wave", f"must be 0 or more, got {self.wave}")
        for key in ("app", "path", "kubeconfig_secret"):
            value = getattr(self, key)
            if value is not None and not value.strip():
                raise InvalidValue(key, "cannot be empty")


@dataclass(frozen=True)
class FleetConfig:
    """Several clusters addressed at once (drift, preflight, recreate in waves)."""

    clusters: list[FleetCluster] = field(default_factory=list)
    parallel: int = 4  # clusters checked at once; recreate runs one at a time unless told

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise InvalidValue("parallel", f"must be 1 or more, got {self.parallel}")
        seen: set[str] = set()
        for c in self.clusters:
            if c.name in seen:
                raise InvalidValue("clusters", f"{c.name!r} is listed twice", sep=": ")
            seen.add(c.name)
