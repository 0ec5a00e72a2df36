"""``fracctl fleet status``: where an ApplicationSet's progressive sync stands, read-only.

Read from the Kubernetes API of the cluster Argo CD runs in (its ApplicationSet and
Applications); :mod:`fracctl.core.appset` says what they mean.
"""

from __future__ import annotations

from fracctl.core.appset import Rollout, rollout
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import UsageError
from fracctl.flows.context import Context

APPSETS = ResourceRef("argoproj.io", "v1alpha1", "applicationsets", "ApplicationSet", True)
APPLICATIONS = ResourceRef("argoproj.io", "v1alpha1", "applications", "Application", True)


def status(ctx: Context, *, appset: str, namespace: str) -> Rollout:
    """The rollout of ApplicationSet ``namespace/appset`` and of each Application it made.

    Raises:
        UsageError: there is no such ApplicationSet (in this cluster and namespace).
    """
    found = ctx.kube.get_or_none(APPSETS, appset, namespace)
    if found is None:
        raise UsageError(
            f"no ApplicationSet {namespace}/{appset} in this cluster",
            hint="point --kubeconfig/--context at the cluster Argo CD runs in, and "
            "--namespace at its namespace",
        )
    uid = found["metadata"]["uid"]
    owned = [
        app
        for app in ctx.kube.list(APPLICATIONS, namespace=namespace)
        if any(o.get("uid") == uid for o in app["metadata"].get("ownerReferences") or [])
    ]
    return rollout(found, owned)
