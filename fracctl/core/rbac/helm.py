"""The ``helm`` backend's RBAC: what its rehearsal and the chart's upgrade need of fracctl.

Declared in the backend's registry entry (:data:`fracctl.core.gitops.backends.REGISTRY`), read
by :func:`fracctl.core.rbac.rules.backend_rules`. helm runs as fracctl's own identity, so the
role also needs what the chart's upgrade writes: the release's records (Secrets, helm/helm
``pkg/storage/driver/secrets.go``: get, list, create, update, and delete past
``--history-max``) and, not listed here, the chart's own objects (its Deployment,
ServiceAccount, ConfigMap…), which only the chart knows: grant them as the chart's
installation guide says.
"""

from __future__ import annotations

from fracctl.core.rbac import Params, RbacRule


def helm_rules(p: Params) -> dict[str, list[RbacRule]]:
    """The ``helm`` backend's rules, by namespace: the release's records."""
    name, namespace = p.helm_release
    return {
        namespace: [
            RbacRule(
                ("",),
                ("secrets",),
                ("get", "list", "create", "update", "patch", "delete"),
                f"read the records of Helm release {name} (sh.helm.release.v1.*), mark a "
                "revision a killed run left pending failed, and let helm write the "
                "upgrade's (Secrets' names are only known once written)",
            )
        ]
    }
