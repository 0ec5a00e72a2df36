"""The release library the helm engine and Flux's HelmRelease share: Helm's own records.

A release is read from its Secrets (``sh.helm.release.v1.<name>.v<N>``, helm/helm
``pkg/storage/driver/secrets.go``); a revision's hooks say whether an upgrade recreates
the target (its ``before-hook-creation`` delete policy, ``pkg/action/hooks.go``); a
revision a killed fracctl left pending is marked ``failed`` as Helm marks one itself.
"""

from __future__ import annotations

from typing import Any

from fracctl.core.gitops import helm_release
from fracctl.core.gitops.helm_release import Release
from fracctl.core.kube import resources
from fracctl.errors import Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines.helm.journal import ReleaseId

Obj = dict[str, Any]
SECRETS = resources.SECRETS


def read_release(ctx: Context, rid: ReleaseId) -> Release | None:
    """The newest revision of the release, read from Helm's own records (None: no release)."""
    name, ns = rid.name, rid.namespace
    secrets = ctx.kube.list(SECRETS, namespace=ns, label_selector=f"owner=helm,name={name}")
    return helm_release.latest(secrets).get((ns, name))


def deployed_revision(ctx: Context, rid: ReleaseId) -> Release | None:
    """The release's newest ``deployed`` revision, which Helm upgrades from."""
    name, ns = rid.name, rid.namespace
    secrets = ctx.kube.list(
        SECRETS, namespace=ns, label_selector=f"owner=helm,name={name},status=deployed"
    )
    return helm_release.latest(secrets).get((ns, name))


def release_rendering(found: Obj) -> tuple[str, list[tuple[str, str]]]:
    """A release JSON's manifest and its hooks (path, manifest), to compare renderings."""
    hooks = sorted((str(h.get("path")), str(h.get("manifest"))) for h in found.get("hooks") or ())
    return str(found.get("manifest") or ""), hooks


def target_hook(ctx: Context, rendered: Obj) -> tuple[Obj, helm_release.Hook]:
    """The target as helm's rendering makes it, and its hook record.

    Raises:
        Refused: the chart does not create the target as a hook Helm recreates.
    """
    return release_hook(ctx, helm_release.from_json(rendered), "helm's rendering of the chart")


def release_hook(ctx: Context, release: Release, rendering: str) -> tuple[Obj, helm_release.Hook]:
    """The target as a release revision's hooks create it, and its hook record.

    Raises:
        Refused: ``rendering`` (what the revision is, in words) does not create the
            target as a hook Helm recreates on the upgrade.
    """
    from fracctl.adapters.render import parse_documents

    t = ctx.config.target
    hook = release.hook_for(t.kind, t.name)
    if hook is None:
        raise Refused(
            f"{rendering} has no hook that creates {t.kind}/{t.name}: "
            "the upgrade would not recreate it",
            hint="use the backend that owns the object (recreate.backend), or fix git.path",
        )
    if not hook.recreated_on:
        raise Refused(
            f"the chart's hook {hook.path} deletes {t.kind}/{t.name} after it runs "
            f"(helm.sh/hook-delete-policy {','.join(hook.delete_policies)}): an upgrade "
            "would leave the cluster without it",
            hint="remove that delete policy from the chart in git",
        )
    docs = [d.obj for d in parse_documents(hook.manifest, hook.path)]
    return docs[0], hook


def renders_chart(ctx: Context, who: str) -> None:
    """``git.renderer`` renders git's chart with helm; a usage error naming ``who`` else."""
    if ctx.config.git.renderer not in ("helm", "auto"):
        raise UsageError(
            f"{who} the chart in git, but git.renderer is {ctx.config.git.renderer}",
            hint="set git.renderer: helm and git.path to the operator's chart",
        )


def mark_failed(ctx: Context, release: Release) -> None:
    """Mark a pending revision left by a killed fracctl ``failed``, in Helm's own record.

    Helm writes ``failed`` itself when an upgrade stops with an error
    (``pkg/action/upgrade.go`` ``failRelease``); a killed helm cannot, and its revision
    stays pending for ever. Rewriting that one field (status, and the Secret's ``status``
    label, which ``helm list`` filters on) is what Helm would have written; the next
    upgrade then starts from the last deployed revision as after any failed upgrade.
    """
    name = f"{helm_release.SECRET_PREFIX}{release.name}.v{release.version}"
    ns = release.namespace
    secret = ctx.kube.get(SECRETS, name, ns)
    body = helm_release.with_status(
        secret, helm_release.FAILED, f"Upgrade interrupted: {release.status} left by a killed "
        "fracctl; marked failed by fracctl before upgrading again"
    )  # fmt: skip
    ctx.kube.replace(SECRETS, body)
