"""``fracctl render``: what git (or Argo CD) wants, as plain objects."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fracctl.flows.context import Context

if TYPE_CHECKING:
    from fracctl.adapters.render.revision import Export
    from fracctl.core.drift import Location

Obj = dict[str, Any]

# Kinds every cluster serves cluster-scoped: a namespace written on them means nothing.
CLUSTER_SCOPED_BUILTINS = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("storage.k8s.io", "StorageClass"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("node.k8s.io", "RuntimeClass"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    }
)


@dataclass
class Desired:
    """Rendered objects, where each was written, and where they came from."""

    objects: list[Obj]
    locations: list[Location | None] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    source: dict[str, Any] = field(default_factory=dict)

    def location_of(self, index: int) -> Location | None:
        """The git location of object ``index``, if known."""
        return self.locations[index] if index < len(self.locations) else None

    def text_of(self, index: int) -> str:
        """The YAML text of object ``index`` in git, if known."""
        return self.texts[index] if index < len(self.texts) else ""


def render(
    ctx: Context,
    *,
    repo: str | None = None,
    revision: str | None = None,
    path: str | None = None,
    renderer: str | None = None,
) -> Desired:
    """Render a git revision (defaults from the ``git`` section of the configuration).

    Raises:
        ExternalError: git, the revision, the path, YAML or a render tool failed.
        DuplicateObjects: two documents declare the same object (a usage error).
        UsageError: a needed binary is missing.
    """
    from fracctl.adapters.render.export import normalise_path

    g = ctx.config.git
    source, rev = repo_of(ctx, repo), revision or g.revision
    folder, how = (path if path is not None else g.path), renderer or g.renderer
    tree = ctx.tree(source, rev)  # the run's one export of that commit
    key = (source, tree.commit, normalise_path(folder), how)
    if key not in ctx.renders:  # each rendering once per run
        ctx.renders[key] = _render(ctx, tree, folder, how)
    done: Desired = copy.deepcopy(ctx.renders[key])  # each caller gets its own copy
    done.source["revision"] = rev
    return done


def _render(ctx: Context, tree: Export, path: str, renderer: str) -> Desired:
    """``render_git`` of ``tree`` with the configuration's helm and namespace settings."""
    from fracctl.adapters.render import render_git

    g = ctx.config.git
    out = render_git(
        tree.repo,
        tree.revision,
        path,
        renderer,
        timeout=max(30.0, float(ctx.config.timeouts.request) * 4),
        helm_release=g.helm_release,
        helm_namespace=g.helm_namespace,
        helm_values=g.helm_values,
        helm_binary=ctx.expand(ctx.config.section("helm").binary),
        default_namespace=g.objects_namespace,
        cluster_scoped=cluster_scoped(ctx),
        tree=tree,
    )
    return Desired(
        objects=out.objects,
        locations=out.locations,
        texts=out.texts,
        source={
            "repo": _display_repo(out.repo),
            "revision": out.revision,
            "commit": out.commit,
            "path": out.path,
            "renderer": out.renderer,
        },
    )


def render_desired(
    ctx: Context,
    *,
    repo: str | None = None,
    revision: str | None = None,
    path: str | None = None,
    renderer: str | None = None,
) -> list[Obj]:
    """The desired objects of a git revision (defaults from ``ctx.config.git``)."""
    return render(ctx, repo=repo, revision=revision, path=path, renderer=renderer).objects


def render_from_argocd(ctx: Context, *, app: str, revision: str | None = None) -> Desired:
    """The manifests Argo CD renders for ``app`` (at ``revision``, else its target)."""
    manifests = ctx.argocd.manifests(app, revision=revision)
    objects = [o for o in manifests if isinstance(o, dict)]
    check_argocd_unique(ctx, objects, app=app)
    return Desired(
        objects=objects,
        locations=[None] * len(objects),
        texts=[""] * len(objects),
        source={"argocd_app": app, "revision": revision or ""},
    )


def cluster_scoped(ctx: Context) -> set[tuple[str, str]]:
    """``(group, kind)`` pairs known to be cluster-scoped without asking the server."""
    t = ctx.config.target
    return {(t.group, t.kind), *CLUSTER_SCOPED_BUILTINS}


def check_argocd_unique(
    ctx: Context, objects: Sequence[Obj], *, app: str, default_namespace: str = ""
) -> None:
    """Raise when Argo CD's rendering of ``app`` holds two documents for one object.

    Argo CD itself only warns (``RepeatedResourceWarning``) and applies one of them.
    """
    from fracctl.core.gitops.manifests import check_unique

    check_unique(
        objects,
        [f"manifest {i + 1} of Argo CD's rendering" for i in range(len(objects))],
        source=f"the manifests of Argo CD application {app}",
        default_namespace=default_namespace,
        cluster_scoped=cluster_scoped(ctx),
    )


def select(
    objects: Sequence[Obj], *, kind: str | None = None, name: str | None = None
) -> list[int]:
    """Indexes of the objects matching ``kind`` (case-insensitive) and ``name``."""
    out = []
    for i, obj in enumerate(objects):
        if kind and str(obj.get("kind", "")).lower() != kind.lower():
            continue
        if name and str((obj.get("metadata") or {}).get("name", "")) != name:
            continue
        out.append(i)
    return out


def to_yaml(objects: Sequence[Obj]) -> str:
    """Objects as a multi-document YAML stream."""
    from fracctl.adapters.render import dump_yaml

    return dump_yaml(objects)


def repo_of(ctx: Context, repo: str | None = None) -> str:
    """The repository git's source names (``git.repo`` unless ``repo``), a path expanded."""
    named = repo or ctx.config.git.repo
    return named if _is_url(named) else ctx.expand(named)


def _is_url(repo: str) -> bool:
    from fracctl.adapters.render import is_remote

    return is_remote(repo)


def _display_repo(repo: str) -> str:
    import re

    return re.sub(r"://[^/@]+@", "://", repo)
