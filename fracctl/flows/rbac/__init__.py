"""``fracctl rbac print``: the roles of :mod:`fracctl.core.rbac`, for this configuration."""

from __future__ import annotations

from fracctl.config import Config
from fracctl.core import rbac
from fracctl.core.rbac import render as rbac_yaml
from fracctl.flows.context import Context


def params(config: Config, *, backend: str | None = None) -> rbac.Params:
    """The role parameters: the configuration's sections, and the backend chosen."""
    c = config
    chosen = backend or c.recreate.backend
    from fracctl.core.gitops.helm_release import release_of

    return rbac.Params(
        c.target,
        c.cluster,
        c.recreate,
        c.flux,
        chosen,
        sections=c.backends,
        helm_release=(
            release_of(c.git.helm_release, c.git.path),
            c.git.helm_namespace or "default",
        ),
        argocd_namespace=c.argocd.namespace,
    )


def roles(ctx: Context, *, role: str, backend: str | None = None) -> tuple[list[rbac.Role], str]:
    """The role's ClusterRole and Roles, and the same as commented YAML."""
    p = params(ctx.config, backend=backend)
    found = rbac.roles(role, p)
    return found, rbac_yaml.to_yaml(role, found, p)
