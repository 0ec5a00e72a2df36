"""``fracctl rbac print``: the roles of :mod:`fracctl.core.rbac`, for this configuration."""

from __future__ import annotations

from fracctl.core import rbac
from fracctl.flows.context import Context


def params(ctx: Context, *, backend: str | None = None) -> rbac.Params:
    """The role parameters from the configuration: the target, the lock, the backend."""
    c = ctx.config
    t = c.target
    return rbac.Params(
        target_group=t.group,
        target_plural=t.plural,
        target_kind=t.kind,
        target_name=t.name,
        lock_namespace=c.recreate.lock_namespace,
        lock_name=c.recreate.lock_name,
        backend=backend or c.recreate.backend,
        flux_namespace=c.flux.namespace,
        flux_kustomization=c.flux.kustomization,
        agent_namespace=c.cluster.agent_namespace,
        agent_daemonsets=tuple(c.cluster.agent_daemonsets),
        operator_deployment=c.cluster.operator_deployment,
        operator_lease=c.cluster.operator_lease,
        scheduler_namespace=c.cluster.scheduler_namespace,
        scheduler_config=c.cluster.scheduler_config,
        runtime_class=c.cluster.runtime_class,
    )


def roles(ctx: Context, *, role: str, backend: str | None = None) -> tuple[list[rbac.Role], str]:
    """The role's ClusterRole and Roles, and the same as commented YAML."""
    p = params(ctx, backend=backend)
    found = rbac.roles(role, p)
    return found, rbac.to_yaml(role, found, p)
