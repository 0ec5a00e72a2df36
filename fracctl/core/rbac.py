"""The Kubernetes permissions of each fracctl role, as plain data: the one source.

``fracctl rbac print`` renders these, ``deploy/rbac`` is its output, and the tests run
each command as an identity bound to only its role: a rule a command stops needing, or a
call it starts making, shows up there first.

Roles:

- ``drift``: read the objects it checks and the target's CRD; ``create`` and ``patch``
  only for its dry-run validation (keep them to dry runs with the admission policy in
  ``deploy/components/drift``).
- ``preflight``: reads only; pods and nodes are listed.
- ``doctor``: reads only: nodes, pods, the events of pending fractional pods, the
  RuntimeClass, KAI's Config, the target, the agents' and scheduler's workloads, and
  (list on Secrets in the agents' namespace) Helm's release records.
- ``recreate``: the one target object (by name where RBAC allows it), the lock Lease in
  its namespace, an Event, and the reads of drift and preflight it runs first; for
  ``--drain``, evictions, the nodes' readiness condition (``nodes/status``), budgets,
  KAI's Config and the drain's journal (a ConfigMap beside the Lease).
- ``node-agent``: nothing. The agent talks to the MPS daemon on its node, never to the
  API server, so its pod runs without a service-account token.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.drain import drain_grants, journal_grants
from fracctl.core.resources import EVENTS_NAMESPACE
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

    def section(self, name: str) -> Any:
        """A backend's own configuration section: as configured, else its defaults."""
        from fracctl.core.backends import section

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


# --- the rules ------------------------------------------------------------------------


def _drift(p: Params) -> list[RbacRule]:
    return [
        RbacRule(
            (p.target.group,),
            (p.target.plural,),
            ("get", "patch"),
            "read the live object; patch is sent as a dry-run server-side apply only "
            "(would the API server accept git's version as an update?)",
            (p.target.name,),
        ),
        RbacRule(
            (p.target.group,),
            (p.target.plural,),
            ("create",),
            "a dry-run create only: validate git's object as a whole (RBAC cannot name an "
            "object on create)",
        ),
        RbacRule(
            ("apiextensions.k8s.io",),
            ("customresourcedefinitions",),
            ("get",),
            "read the CRD's x-kubernetes-validations rules (which fields are immutable)",
            (p.crd_name,),
        ),
    ]


def _guard_reads(p: Params) -> list[RbacRule]:
    return [
        RbacRule(
            ("",),
            ("pods",),
            ("list",),
            "find fractional pods in every namespace: one paged list, read for each pod's "
            "annotations and node",
        ),
        RbacRule(("",), ("nodes",), ("list",), "read every node's labels (a metadata-only list)"),
    ]


def _preflight(p: Params) -> list[RbacRule]:
    return [
        *_guard_reads(p),
        RbacRule(
            (p.target.group,),
            (p.target.plural,),
            ("get",),
            "read the live object's selector",
            (p.target.name,),
        ),
    ]


def _doctor(p: Params) -> tuple[list[RbacRule], dict[str, list[RbacRule]]]:
    cluster = [
        RbacRule(("",), ("nodes",), ("list",), "every node: GPU nodes, labels, taints, conditions"),
        RbacRule(
            ("",),
            ("pods",),
            ("list",),
            "unfinished pods in pages (fractional ones and those on GPU nodes are kept), "
            "and every pod of the reservation namespace",
        ),
        RbacRule(("",), ("events",), ("list",),
                 "the events of pending fractional pods, one list per namespace"),
        RbacRule(("node.k8s.io",), ("runtimeclasses",), ("get",),
                 "the RuntimeClass the fractioning config names", (p.cluster.runtime_class,)),
        RbacRule((KAI_GROUP,), ("configs",), ("get",), "KAI's scheduler Config (gpuSharingMode)",
                 (p.cluster.scheduler_config,)),
        RbacRule((p.target.group,), (p.target.plural,), ("get",), "the fractioning config itself",
                 (p.target.name,)),
        RbacRule(
            ("admissionregistration.k8s.io",),
            ("validatingadmissionpolicies", "validatingadmissionpolicybindings"),
            ("get",),
            "the guard policy and its binding (only fracctl recreate may delete the target)",
            (f"fracctl-guard-{p.target.plural}",),
        ),
    ]  # fmt: skip
    return cluster, _doctor_namespaced(p)


def _doctor_namespaced(p: Params) -> dict[str, list[RbacRule]]:
    agents = p.cluster.agent_namespace
    namespaced: dict[str, list[RbacRule]] = {
        p.recreate.lock_namespace: [
            RbacRule(("coordination.k8s.io",), ("leases",), ("get",),
                     "the lock Lease the guard policy reads as its parameter",
                     (p.recreate.lock_name,)),
        ],
    }  # fmt: skip
    namespaced.setdefault(agents, []).append(
        RbacRule(("apps",), ("daemonsets",), ("get",), "the node agents' DaemonSets",
                 tuple(p.cluster.agent_daemonsets))
    )  # fmt: skip
    for ns in dict.fromkeys((agents, p.cluster.scheduler_namespace)):
        namespaced.setdefault(ns, []).append(
            RbacRule(("apps",), ("deployments", "daemonsets"), ("list",),
                     "the workloads' images and tolerations")
        )  # fmt: skip
    namespaced[agents].append(
        RbacRule(("",), ("secrets",), ("list",),
                 "Helm's release records (sh.helm.release.v1.*), only when the live config is "
                 "a hook, to name its release; a list reads every Secret of the namespace: "
                 "bind it only where the operator's chart is installed")
    )  # fmt: skip
    return namespaced


def _recreate_cluster(p: Params) -> list[RbacRule]:
    return [
        RbacRule(
            (p.target.group,),
            (p.target.plural,),
            ("get", "list", "watch", "patch", "delete"),
            "the one target object: read it, watch it go, delete it, dry-run (and with "
            "--backend apply, server-side apply) git's version",
            (p.target.name,),
        ),
        RbacRule(
            (p.target.group,),
            (p.target.plural,),
            ("create",),
            "the dry-run create that validates git's object, and an apply that creates it "
            "(RBAC cannot name an object that does not exist yet)",
        ),
        RbacRule(
            ("apiextensions.k8s.io",),
            ("customresourcedefinitions",),
            ("get",),
            "read the CRD's immutable-field rules",
            (p.crd_name,),
        ),
        RbacRule(
            ("",),
            ("pods",),
            ("list",),
            "the fractional-pod guard (one paged list of every namespace)",
        ),
        RbacRule(
            ("",),
            ("nodes",),
            ("list", "watch"),
            "the label guards and the blast radius; watch the selected nodes become ready",
        ),
        RbacRule(
            ("",),
            ("namespaces",),
            ("get",),
            "check the lock Lease's namespace exists before creating the Lease",
            (p.recreate.lock_namespace,),
        ),
        *(RbacRule(*g) for g in drain_grants(p.cluster.scheduler_config)),
    ]


def _lock(p: Params) -> list[RbacRule]:
    return [
        RbacRule(("coordination.k8s.io",), ("leases",), ("create",),
                 "take the lock: create the Lease"),
        RbacRule(("coordination.k8s.io",), ("leases",), ("get", "update", "delete"),
                 "hold the lock: read, renew and release the Lease", (p.recreate.lock_name,)),
    ]  # fmt: skip


def _recreate_objects(p: Params) -> Rules:
    from fracctl.core.procedures.rbac import object_grants

    namespace = RbacRule(("",), ("namespaces",), ("get",),
                         "check the lock Lease's namespace exists before creating the Lease",
                         (p.recreate.lock_namespace,))  # fmt: skip
    cluster = [*(RbacRule(*g) for g in object_grants()), namespace]
    namespaced = {p.recreate.lock_namespace: _lock(p)}
    extra = backend_rules(p)  # the Kustomization Flux reconciles (suspended for a held one)
    cluster += extra.pop("", [])
    for ns, rules in extra.items():
        namespaced.setdefault(ns, []).extend(rules)
    return cluster, namespaced


def _recreate(p: Params) -> tuple[list[RbacRule], dict[str, list[RbacRule]]]:
    namespaced: dict[str, list[RbacRule]] = {}
    namespaced.setdefault(p.recreate.lock_namespace, []).extend(
        [*_lock(p), *(RbacRule(*g) for g in journal_grants(p.recreate.lock_name))]
    )
    namespaced.setdefault(p.events_namespace, []).append(
        RbacRule(("",), ("events",), ("create",), "record a Recreated Event on the target")
    )
    operator = namespaced.setdefault(p.cluster.agent_namespace, [])
    operator.append(
        RbacRule(
            ("apps",),
            ("deployments",),
            ("get",),
            "prove the operator that releases the finalizer is available before a delete",
            (p.cluster.operator_deployment,),
        )
    )
    operator.append(
        RbacRule(
            ("apps",),
            ("daemonsets",),
            ("get",),
            "prove the agents tolerate the taints of the nodes git's selector selects",
            tuple(p.cluster.agent_daemonsets),
        )
    )
    if p.cluster.operator_lease:
        operator.append(
            RbacRule(
                ("coordination.k8s.io",),
                ("leases",),
                ("get",),
                "prove the operator leads now (its leader-election Lease is fresh)",
                (p.cluster.operator_lease,),
            )
        )
    extra = backend_rules(p)
    cluster = _recreate_cluster(p) + extra.pop("", [])  # "": the backend's cluster-wide rules
    for ns, rules in extra.items():
        namespaced.setdefault(ns, []).extend(rules)
    return cluster, namespaced


def backend_rules(p: Params) -> dict[str, list[RbacRule]]:
    """The rules the chosen backend declares (``rbac``), by namespace (``""``: cluster-wide)."""
    from fracctl.core.backends import entry, load

    found = entry(p.backend)
    if found is None or not found.rbac:
        return {}
    rules: dict[str, list[RbacRule]] = load(found.rbac)(p)
    return rules


Rules = tuple[list[RbacRule], dict[str, list[RbacRule]]]  # cluster-wide, by namespace


@dataclass(frozen=True)
class RoleSpec:
    """One role: its summary line and the rules it needs for a configuration."""

    summary: str
    rules: Callable[[Params], Rules]


# The one place roles are declared: ROLES, SUMMARY, `fracctl rbac print`, deploy/rbac
# (scripts/generate-deploy-rbac.sh) and the tests all read it.
REGISTRY: dict[str, RoleSpec] = {
    "drift": RoleSpec(
        "read the checked objects and their CRD; create/patch as dry runs only",
        lambda p: (_drift(p), {}),
    ),
    "preflight": RoleSpec(
        "read pods and nodes (lists) and the target object", lambda p: (_preflight(p), {})
    ),
    "doctor": RoleSpec(
        "read nodes, pods, pod events, the RuntimeClass, KAI's Config and workloads", _doctor
    ),
    "recreate": RoleSpec(
        "the target object, the lock Lease, an Event, and the guards' reads", _recreate
    ),
    "recreate-objects": RoleSpec(
        "recreate KIND/NAME: the built-in kinds' objects, their pods, claims and "
        "ReplicaSets, access reviews, and the lock Lease",
        _recreate_objects,
    ),
    "node-agent": RoleSpec(
        "no API access at all: the agent only talks to the MPS daemon", lambda p: ([], {})
    ),
}
ROLES: tuple[str, ...] = tuple(REGISTRY)
SUMMARY = {name: spec.summary for name, spec in REGISTRY.items()}


def roles(role: str, p: Params) -> list[Role]:
    """The ClusterRole (and any namespaced Roles) of ``role``.

    Raises:
        ValueError: ``role`` is not one of :data:`ROLES`.
    """
    spec = REGISTRY.get(role)
    if spec is None:
        raise ValueError(f"unknown role {role!r} (use {', '.join(ROLES)})")
    name = role_name(role)
    cluster, namespaced = spec.rules(p)
    out = [Role(name, role, tuple(cluster))]
    out += [Role(name, role, tuple(rules), namespace=ns) for ns, rules in namespaced.items()]
    return out
