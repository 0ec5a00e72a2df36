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

from collections.abc import Callable
from dataclasses import dataclass

from fracctl.core.rbac.gate import fleet_status_rules, post_sync_rules, pre_sync_rules
from fracctl.core.rbac.model import (
    API_VERSION,
    FLUX_GROUP,
    FLUX_SOURCE_GROUP,
    KAI_GROUP,
    Params,
    RbacRule,
    Role,
    Rules,
    labels,
    role_name,
)
from fracctl.core.rbac.rules import (
    doctor_rules,
    drift_rules,
    preflight_rules,
    recreate_objects_rules,
    recreate_rules,
)

__all__ = [
    "API_VERSION",
    "FLUX_GROUP",
    "FLUX_SOURCE_GROUP",
    "KAI_GROUP",
    "REGISTRY",
    "ROLES",
    "SUMMARY",
    "Params",
    "RbacRule",
    "Role",
    "RoleSpec",
    "labels",
    "role_name",
    "roles",
]


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
        lambda p: (drift_rules(p), {}),
    ),
    "preflight": RoleSpec(
        "read pods and nodes (lists) and the target object", lambda p: (preflight_rules(p), {})
    ),
    "doctor": RoleSpec(
        "read nodes, pods, pod events, the RuntimeClass, KAI's Config and workloads", doctor_rules
    ),
    "recreate": RoleSpec(
        "the target object, the lock Lease, an Event, and the guards' reads", recreate_rules
    ),
    "recreate-objects": RoleSpec(
        "recreate KIND/NAME: the built-in kinds' objects, their pods, claims and "
        "ReplicaSets, access reviews, and the lock Lease",
        recreate_objects_rules,
    ),
    "gate-pre-sync": RoleSpec(
        "the PreSync hook: recreate's first half (no backend: the sync creates the object) "
        "and a backup ConfigMap",
        pre_sync_rules,
    ),
    "gate-post-sync": RoleSpec(
        "the PostSync hook: read the object, watch the nodes, end the drain, release the lock",
        post_sync_rules,
    ),
    "fleet-status": RoleSpec(
        "read an ApplicationSet and its Applications where Argo CD runs", fleet_status_rules
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
