"""``fracctl fleet status``: where an ApplicationSet's progressive sync stands, read-only.

Read from the Kubernetes API of the cluster Argo CD runs in (its ApplicationSet and
Applications); :mod:`fracctl.core.appset` says what they mean.
"""

from __future__ import annotations

from fracctl.core.appset import Rollout, rollout, source_of
from fracctl.core.appset_order import SHA
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import ExternalError, UsageError
from fracctl.flows.context import Context

APPSETS = ResourceRef("argoproj.io", "v1alpha1", "applicationsets", "ApplicationSet", True)
APPLICATIONS = ResourceRef("argoproj.io", "v1alpha1", "applications", "Application", True)


def status(ctx: Context, *, appset: str, namespace: str, revision: str | None = None) -> Rollout:
    """The rollout of ApplicationSet ``namespace/appset`` and of each Application it made.

    Judged against git's revision: ``revision``, else the commit the template's source
    names now (``git ls-remote``, with the caller's own git credentials); when neither
    can be had, the rollout says why and is never done.

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
    from fracctl.adapters.git import remote_commit

    url, ref = source_of(found)
    want = revision or ref
    if SHA.match(want):
        return rollout(found, owned, want)
    if not url:
        return rollout(
            found,
            owned,
            unknown="the template's source is a template expression "
            "or several sources: give --revision with a commit",
        )
    try:
        return rollout(found, owned, remote_commit(url, want))
    except ExternalError as e:
        return rollout(found, owned, unknown=f"{e.message}: give --revision with a commit")
