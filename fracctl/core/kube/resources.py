"""Plain descriptions of API resources and the paths that address them."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from fracctl.errors import UsageError


@dataclass(frozen=True)
class ResourceRef:
    """One API resource type: where it lives and how it is named."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``group/version`` (or ``v1`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """The request path for a collection (``name=None``), an object, or a subresource.

        Raises:
            UsageError: ``name`` is given but cannot name an object: an empty name must
                never turn a call on one object into a call on the whole collection
                (a DELETE there deletes every object), nor a ``/`` reach a subresource.
        """
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            if not name.strip() or name in (".", "..") or "/" in name or "%" in name:
                raise UsageError(f"{name!r} cannot name a {self.kind}")
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


NODES = ResourceRef("", "v1", "nodes", "Node", namespaced=False)
PODS = ResourceRef("", "v1", "pods", "Pod", namespaced=True)
NAMESPACES = ResourceRef("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = ResourceRef("", "v1", "events", "Event", namespaced=True)
LEASES = ResourceRef("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
POLICIES = ResourceRef(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicies",
    "ValidatingAdmissionPolicy",
    False,
)
BINDINGS = ResourceRef(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    False,
)
DEPLOYMENTS = ResourceRef("apps", "v1", "deployments", "Deployment", namespaced=True)
DAEMONSETS = ResourceRef("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
CONFIGMAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", namespaced=True)
SECRETS = ResourceRef("", "v1", "secrets", "Secret", namespaced=True)
HELMRELEASES = ResourceRef("helm.toolkit.fluxcd.io", "v2", "helmreleases", "HelmRelease", True)
HELMCHARTS = ResourceRef("source.toolkit.fluxcd.io", "v1", "helmcharts", "HelmChart", True)
PVCS = ResourceRef("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True)
STORAGE_CLASSES = ResourceRef("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
SERVICES = ResourceRef("", "v1", "services", "Service", namespaced=True)
REPLICASETS = ResourceRef("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
PDBS = ResourceRef("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", namespaced=True)
CRDS = ResourceRef(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` -> ``("apps", "v1")``; ``v1`` -> ``("", "v1")``."""
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


def target_ref(group: str, version: str, plural: str, kind: str) -> ResourceRef:
    """The cluster-scoped fractioning config resource."""
    return ResourceRef(group, version, plural, kind, namespaced=False)


# Events about a cluster-scoped object (the fractioning config) are recorded here.
EVENTS_NAMESPACE = "default"


@dataclass(frozen=True)
class ServedResource:
    """One resource type the API server serves, with the names kubectl takes for it."""

    group: str
    kind: str
    plural: str
    singular: str = ""
    short_names: tuple[str, ...] = ()

    def names(self) -> set[str]:
        """Every lower-case name that resolves to it: plural, singular, short names, kind."""
        return {n.lower() for n in (self.plural, self.singular, self.kind, *self.short_names) if n}


def kinds_named(word: str, served: list[ServedResource]) -> list[tuple[str, str]]:
    """The ``(group, kind)`` pairs ``word`` names, as kubectl resolves a resource argument.

    kubectl takes ``RESOURCE``, ``RESOURCE.GROUP`` or ``RESOURCE.VERSION.GROUP``
    (k8s.io/apimachinery ``pkg/runtime/schema/group_version.go``, ``ParseResourceArg``),
    where RESOURCE is a plural, a singular or a short name from discovery (client-go
    ``restmapper/shortcut.go`` expands short names; ``pkg/api/meta/restmapper.go`` matches
    names lower-cased). The kind itself is taken too, as kubectl does (its singular is
    the kind lower-cased). ``word`` is compared case-insensitively.
    """
    word = word.lower()
    found: list[tuple[str, str]] = []
    for r in served:
        names = r.names()
        group = r.group.lower()
        head, _, rest = word.partition(".")
        hit = (
            word in names
            or (rest and head in names and rest == group)
            or (rest.count(".") >= 1 and head in names and rest.split(".", 1)[1] == group)
        )
        if hit and (r.group, r.kind) not in found:
            found.append((r.group, r.kind))
    return found
