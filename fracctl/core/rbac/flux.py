"""The ``flux`` backend's RBAC: what its recreate rehearses and does, and nothing more.

Declared in the backend's registry entry (:data:`fracctl.core.gitops.backends.REGISTRY`), read
by :func:`fracctl.core.rbac.rules.backend_rules`.
"""

from __future__ import annotations

from fracctl.core.rbac import FLUX_GROUP, FLUX_SOURCE_GROUP, Params, RbacRule


def flux_rules(p: Params) -> dict[str, list[RbacRule]]:
    """The ``flux`` backend's rules, by namespace (``""``: cluster-wide).

    Read and annotate its Kustomization, read what it depends on, prove its controllers
    lead and the identity it applies as.
    """
    rules: dict[str, list[RbacRule]] = {
        "": [
            RbacRule(
                ("authorization.k8s.io",),
                ("subjectaccessreviews",),
                ("create",),
                "prove the identity Flux applies as may create the target",
            )
        ],
        p.flux.namespace: [
            RbacRule(
                (FLUX_GROUP,),
                ("kustomizations",),
                ("get", "patch"),
                "read the Flux Kustomization and request a reconcile",
                (p.flux.kustomization,),
            ),
            RbacRule(
                (FLUX_GROUP, FLUX_SOURCE_GROUP),
                ("kustomizations", "gitrepositories"),
                ("get",),
                "prove the Kustomization's dependencies and its source are Ready (add "
                "ocirepositories or buckets for a source of that kind)",
            ),
        ],
    }
    if p.flux.helmrelease:
        rules[p.flux.namespace] += _helmrelease_rules(p)
    if p.flux.leases:
        rules.setdefault(p.flux.controller_namespace, []).append(
            RbacRule(
                ("coordination.k8s.io",),
                ("leases",),
                ("get",),
                "prove Flux's controllers lead now (their leader-election Leases are fresh)",
                tuple(p.flux.leases),
            )
        )
    return rules


def _helmrelease_rules(p: Params) -> list[RbacRule]:
    """With ``flux.helmrelease``: its HelmRelease, its chart, helm-controller's records."""
    return [
        RbacRule(
            ("helm.toolkit.fluxcd.io",),
            ("helmreleases",),
            ("get", "patch"),
            "read the operator chart's HelmRelease and request its upgrade",
            (p.flux.helmrelease,),
        ),
        RbacRule(
            (FLUX_SOURCE_GROUP,),
            ("helmcharts",),
            ("get",),
            "prove the HelmRelease's chart is Ready",
        ),
        RbacRule(
            ("",),
            ("secrets",),
            ("list",),
            "read helm-controller's release records (owner=helm; grant it in the "
            "HelmRelease's storageNamespace instead where that is another)",
        ),
    ]
