"""The rules of each role, built from the configuration (:class:`~.model.Params`)."""

from __future__ import annotations

from fracctl.core.drain import drain_grants, journal_grants
from fracctl.core.rbac.model import (
    KAI_GROUP,
    Params,
    RbacRule,
    Rules,
)


def drift_rules(p: Params) -> list[RbacRule]:
    """drift: read the checked objects and their CRD; create and patch as dry runs only."""
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


def preflight_rules(p: Params) -> list[RbacRule]:
    """preflight: the guards' reads (pods and nodes listed) and the target object."""
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


def doctor_rules(p: Params) -> tuple[list[RbacRule], dict[str, list[RbacRule]]]:
    """doctor: reads only, cluster-wide and in the lock's, agents' and scheduler's namespaces."""
    cluster = [
        RbacRule(("",), ("nodes",), ("list",), "every node: GPU nodes, labels, taints, conditions"),
        RbacRule(
            ("",),
            ("pods",),
            ("list",),
            "unfinished pods in pages (fractional ones and those on GPU nodes are kept), "
            "and every pod of the reservation namespace",
        ),
        RbacRule(
            ("",),
            ("events",),
            ("list",),
            "the events of pending fractional pods, one list per namespace",
        ),
        RbacRule(
            ("node.k8s.io",),
            ("runtimeclasses",),
            ("get",),
            "the RuntimeClass the fractioning config names",
            (p.cluster.runtime_class,),
        ),
        RbacRule(
            (KAI_GROUP,),
            ("configs",),
            ("get",),
            "KAI's scheduler Config (gpuSharingMode)",
            (p.cluster.scheduler_config,),
        ),
        RbacRule(
            (p.target.group,),
            (p.target.plural,),
            ("get",),
            "the fractioning config itself",
            (p.target.name,),
        ),
        RbacRule(
            ("admissionregistration.k8s.io",),
            ("validatingadmissionpolicies", "validatingadmissionpolicybindings"),
            ("get",),
            "the guard policy and its binding (only fracctl recreate may delete the target)",
            (f"fracctl-guard-{p.target.plural}",),
        ),
    ]
    return cluster, _doctor_namespaced(p)


def _doctor_namespaced(p: Params) -> dict[str, list[RbacRule]]:
    agents = p.cluster.agent_namespace
    namespaced: dict[str, list[RbacRule]] = {
        p.recreate.lock_namespace: [
            RbacRule(
                ("coordination.k8s.io",),
                ("leases",),
                ("get",),
                "the lock Lease the guard policy reads as its parameter",
                (p.recreate.lock_name,),
            ),
        ],
    }
    namespaced.setdefault(agents, []).append(
        RbacRule(
            ("apps",),
            ("daemonsets",),
            ("get",),
            "the node agents' DaemonSets",
            tuple(p.cluster.agent_daemonsets),
        )
    )
    for ns in dict.fromkeys((agents, p.cluster.scheduler_namespace)):
        namespaced.setdefault(ns, []).append(
            RbacRule(
                ("apps",),
                ("deployments", "daemonsets"),
                ("list",),
                "the workloads' images and tolerations",
            )
        )
    namespaced[agents].append(
        RbacRule(
            ("",),
            ("secrets",),
            ("list",),
            "Helm's release records (sh.helm.release.v1.*), only when the live config is "
            "a hook, to name its release; a list reads every Secret of the namespace: "
            "bind it only where the operator's chart is installed",
        )
    )
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
            ("node.k8s.io",),
            ("runtimeclasses",),
            ("get",),
            "prove the RuntimeClass a changed spec.runtimeClassName names exists (any name)",
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


def rollout_rule() -> RbacRule:
    """In the agents' namespace: wait until their DaemonSets rolled out after a change."""
    why = (
        "wait until the agents' DaemonSets rolled out (every pod updated and ready) after a "
        "change of the config"
    )
    return RbacRule(("apps",), ("daemonsets",), ("list", "watch"), why)


def lock_rules(p: Params) -> list[RbacRule]:
    """The lock Lease: take it, renew it, give it up."""
    return [
        RbacRule(
            ("coordination.k8s.io",), ("leases",), ("create",), "take the lock: create the Lease"
        ),
        RbacRule(
            ("coordination.k8s.io",),
            ("leases",),
            ("get", "update", "delete"),
            "hold the lock: read, renew and release the Lease",
            (p.recreate.lock_name,),
        ),
    ]


def recreate_objects_rules(p: Params) -> Rules:
    """Recreate KIND/NAME: the built-in kinds' objects and what their procedures touch."""
    from fracctl.core.procedures.rbac import object_grants

    namespace = RbacRule(
        ("",),
        ("namespaces",),
        ("get",),
        "check the lock Lease's namespace exists before creating the Lease",
        (p.recreate.lock_namespace,),
    )
    cluster = [*(RbacRule(*g) for g in object_grants()), namespace]
    namespaced = {p.recreate.lock_namespace: lock_rules(p)}
    extra = backend_rules(p)  # the Kustomization Flux reconciles (suspended for a held one)
    cluster += extra.pop("", [])
    for ns, rules in extra.items():
        namespaced.setdefault(ns, []).extend(rules)
    return cluster, namespaced


def recreate_rules(p: Params) -> tuple[list[RbacRule], dict[str, list[RbacRule]]]:
    """recreate: the target, the lock Lease, an Event, the guards' reads, the backend's."""
    namespaced: dict[str, list[RbacRule]] = {}
    namespaced.setdefault(p.recreate.lock_namespace, []).extend(
        [*lock_rules(p), *(RbacRule(*g) for g in journal_grants(p.recreate.lock_name))]
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
    operator.append(rollout_rule())
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
    from fracctl.core.gitops.backends import entry, load

    found = entry(p.backend)
    if found is None or not found.rbac:
        return {}
    rules: dict[str, list[RbacRule]] = load(found.rbac)(p)
    return rules
