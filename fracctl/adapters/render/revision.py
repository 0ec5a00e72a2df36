"""Rendering one git revision: export it, choose the renderer, render, check, locate.

:func:`render_git` exports ``path`` of a revision into a temporary folder (removed
afterwards), renders it as plain YAML, with kustomize or with helm (``auto`` tells
which from the folder's files), and refuses two documents that declare the same object.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fracctl.adapters.git import resolve_commit, safe_url
from fracctl.adapters.render.documents import Document, Obj
from fracctl.adapters.render.export import (
    export_tree,
    local_repo,
    normalise_path,
    object_type,
    tree_names,
)
from fracctl.adapters.render.helm import render_helm
from fracctl.adapters.render.kustomize import render_kustomize
from fracctl.adapters.render.plain import KUSTOMIZATION_FILES, render_plain
from fracctl.core.drift import Location
from fracctl.core.gitops.manifests import check_unique
from fracctl.errors import ExternalError, UsageError

RENDERERS = ("auto", "plain", "kustomize", "helm")


@dataclass
class Rendered:
    """What a revision renders to."""

    objects: list[Obj]
    locations: list[Location | None]
    texts: list[str]  # each object's YAML text in git, when known ("" otherwise)
    origins: list[str]  # where each object was written, for messages
    repo: str
    revision: str
    commit: str
    path: str
    renderer: str
    warnings: list[str] = field(default_factory=list)


def detect_renderer(names: Sequence[str]) -> str:
    """``helm`` for a chart, ``kustomize`` for a kustomization, else ``plain``."""
    if "Chart.yaml" in names:
        return "helm"
    if any(n in names for n in KUSTOMIZATION_FILES):
        return "kustomize"
    return "plain"


def render_git(
    repo: str,
    revision: str,
    path: str,
    renderer: str = "auto",
    *,
    timeout: float = 120.0,
    helm_release: str = "",
    helm_namespace: str = "",
    helm_values: Sequence[str] = (),
    helm_binary: str = "helm",
    default_namespace: str = "",
    cluster_scoped: Collection[tuple[str, str]] = (),
    tree: Export | None = None,
) -> Rendered:
    """Render ``path`` of ``repo`` at ``revision`` from a temporary export.

    Args:
        repo: a local repository path or a URL.
        revision: a commit, branch or tag.
        path: repository-relative folder or file.
        renderer: ``auto``, ``plain``, ``kustomize`` or ``helm``.
        timeout: seconds each render tool may run.
        helm_release: release name for ``helm template`` (default: the chart folder).
        helm_namespace: namespace for ``helm template``.
        helm_values: values files, relative to the chart.
        helm_binary: the helm that renders (``helm.binary``: the one that upgrades).
        default_namespace: the namespace of a rendered object that names none (to
            tell whether two documents declare the same object).
        cluster_scoped: ``(group, kind)`` pairs known to be cluster-scoped.
        tree: the run's export of ``repo`` at ``revision`` (:func:`export_whole`, at the
            commit the run pinned), rendered instead of a new one.

    Returns:
        The rendered objects with their git locations.

    Raises:
        ExternalError: git, the revision, the path, YAML or a render tool failed.
        DuplicateObjects: two documents declare the same object (a usage error).
        UsageError: a needed binary is missing, or the arguments are wrong.
    """
    if renderer not in RENDERERS:
        raise UsageError(f"renderer must be one of {', '.join(RENDERERS)}, got {renderer!r}")
    rel = normalise_path(path)
    helm = _Helm(helm_release, helm_namespace, helm_values, helm_binary)
    with contextlib.ExitStack() as stack:
        tree, chosen = _tree(stack, tree, repo, revision, rel, renderer)
        docs = _render_export(chosen, tree.root, rel, timeout, helm)
    check_unique(
        [d.obj for d in docs],
        [d.origin for d in docs],
        source=f"the manifests under {rel or '.'} at {revision} (commit {tree.commit[:12]})",
        default_namespace=default_namespace,
        cluster_scoped=cluster_scoped,
    )
    return _rendered(docs, repo, revision, tree.commit, rel, chosen)


@dataclass(frozen=True)
class _Helm:
    """How ``helm template`` renders a chart (:func:`render_git`'s ``helm_*`` arguments)."""

    release: str
    namespace: str
    values: Sequence[str]
    binary: str


def _rendered(
    docs: list[Document], repo: str, revision: str, commit: str, rel: str, chosen: str
) -> Rendered:
    """The documents rendered from ``rel`` at ``commit``, with their git locations."""
    return Rendered(
        objects=[d.obj for d in docs],
        locations=[Location(d.file, d.line) if d.file else None for d in docs],
        texts=[d.text for d in docs],
        origins=[d.origin for d in docs],
        repo=repo,
        revision=revision,
        commit=commit,
        path=rel or ".",
        renderer=chosen,
    )


def _tree(
    stack: contextlib.ExitStack,
    tree: Export | None,
    repo: str,
    revision: str,
    rel: str,
    renderer: str,
) -> tuple[Export, str]:
    """The export to render (``tree``, or a scratch one removed with ``stack``); the renderer."""
    if tree is None:
        return _export(stack, repo, revision, rel, renderer)
    chosen = _choose_renderer(renderer, tree.gitdir, tree.commit, rel, revision=revision, repo=repo)
    return tree, chosen


def _export(
    stack: contextlib.ExitStack, repo: str, revision: str, rel: str, renderer: str
) -> tuple[Export, str]:
    """A scratch export of ``repo`` for one rendering, removed with ``stack``; the renderer.

    Plain YAML needs only its folder; kustomize and helm may reach outside it.
    """
    scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="fracctl-render-"))
    gitdir = local_repo(repo, scratch)
    commit = resolve_commit(gitdir, revision, repo)
    chosen = _choose_renderer(renderer, gitdir, commit, rel, revision=revision, repo=repo)
    export = Path(scratch) / "export"
    export.mkdir()
    export_tree(gitdir, commit, str(export), rel if chosen == "plain" and rel else None)
    return Export(repo, revision, commit, export, gitdir), chosen


def _choose_renderer(
    renderer: str, gitdir: str, commit: str, rel: str, *, revision: str, repo: str
) -> str:
    """The renderer for ``rel`` at ``commit``: ``renderer``, or the detected one for ``auto``.

    Raises:
        ExternalError: ``rel`` does not exist at the commit.
        UsageError: kustomize or helm is asked to render a file.
    """
    kind = object_type(gitdir, commit, rel)
    if kind is None:
        raise ExternalError(
            f"path {rel or '.'!r} does not exist at revision {revision!r} "
            f"(commit {commit[:12]}) of {safe_url(repo)}"
        )
    chosen = renderer
    if chosen == "auto":
        chosen = detect_renderer(tree_names(gitdir, commit, rel)) if kind == "tree" else "plain"
    if chosen != "plain" and kind != "tree":
        raise UsageError(f"the {chosen} renderer needs a folder, but {rel!r} is a file")
    return chosen


def _render_export(
    chosen: str, export: Path, rel: str, timeout: float, helm: _Helm
) -> list[Document]:
    """The documents the ``chosen`` renderer makes of ``rel`` in the export."""
    if chosen == "plain":
        return render_plain(export, rel)
    if chosen == "kustomize":
        return render_kustomize(export, rel, timeout)
    return render_helm(
        export,
        rel,
        timeout,
        release=helm.release,
        namespace=helm.namespace,
        values=helm.values,
        binary=helm.binary,
    )


@dataclass(frozen=True)
class Export:
    """A repository's whole tree at one commit, and the repository it was exported from."""

    repo: str
    revision: str
    commit: str
    root: Path
    gitdir: str

    def folder(self, path: str) -> Path:
        """The folder ``path`` in the export.

        A chart reaches outside its folder through ``file://`` dependencies, so the
        whole tree is there.

        Raises:
            ExternalError: ``path`` is not a folder at the commit.
        """
        rel = normalise_path(path)
        if object_type(self.gitdir, self.commit, rel) != "tree":
            raise ExternalError(
                f"path {rel or '.'!r} is not a folder at revision {self.revision!r} "
                f"(commit {self.commit[:12]}) of {safe_url(self.repo)}"
            )
        return self.root / rel if rel else self.root


@contextlib.contextmanager
def export_whole(repo: str, revision: str, pinned: str = "") -> Iterator[Export]:
    """``repo`` at ``revision`` (or the commit ``pinned``), exported whole; removed after.

    A URL is cloned once into the same scratch folder.

    Raises:
        ExternalError: git or the revision failed.
    """
    # mkdtemp, not TemporaryDirectory: a run's export may outlive a context nobody closed
    # (the context's finalizer removes it then), and TemporaryDirectory's own finalizer
    # would warn first.
    scratch = tempfile.mkdtemp(prefix="fracctl-export-")
    try:
        gitdir = local_repo(repo, scratch)
        commit = resolve_commit(gitdir, pinned or revision, repo)
        export = Path(scratch) / "export"
        export.mkdir()
        export_tree(gitdir, commit, str(export), None)
        yield Export(repo=repo, revision=revision, commit=commit, root=export, gitdir=gitdir)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
