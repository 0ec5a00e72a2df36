"""``fracctl render``: the desired manifests of a git revision (or of an Argo CD app)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from fracctl.cli import _app
from fracctl.errors import UsageError

if TYPE_CHECKING:
    from fracctl.flows.context import Context

REPO_HELP = "Git repository: a path or a URL (default git.repo)."
REVISION_HELP = "Commit, branch or tag (default git.revision)."
PATH_HELP = "Folder or file inside the repository (default git.path)."
RENDERER_HELP = "How to render (default git.renderer)."
# The renderers of fracctl.adapters.render.RENDERERS (a test keeps the two in step).
Renderer = Literal["auto", "plain", "kustomize", "helm"]
ManifestFormat = Literal["yaml", "json"]


# The git source options, shared by render and drift.
RepoOption = Annotated[str | None, typer.Option(help=REPO_HELP, show_default=False)]
RevisionOption = Annotated[
    str | None,
    typer.Option(
        "--revision", "-r", help=REVISION_HELP, show_default=False, callback=_app.not_blank
    ),
]
PathOption = Annotated[str | None, typer.Option(help=PATH_HELP, show_default=False)]
RendererOption = Annotated[
    Renderer | None,
    typer.Option(help=RENDERER_HELP, show_default=False, parser=_app.one_of(Renderer)),
]

#: The flags of git's source, each with the configuration key it sets.
SOURCE_KEYS = {"repo": "git.repo", "revision": "git.revision", "path": "git.path",
               "renderer": "git.renderer"}  # fmt: skip


def source_overrides(**given: str | None) -> dict[str, Any]:
    """The git source flags as overrides for :func:`fracctl.cli._app.context`.

    Every command that renders git (render, drift, preflight, recreate) takes the same
    four flags; one that passes them on as configuration reads git where ``render`` does.
    """
    return {SOURCE_KEYS[k].replace(".", "__"): v for k, v in given.items() if k in SOURCE_KEYS}


def source_flags(**given: str | None) -> tuple[str, ...]:
    """The git source flags as typed (``("--path", "shop")``), to repeat in a printed command."""
    words: list[str] = []
    for name, value in given.items():
        if name in SOURCE_KEYS and value is not None:
            words += [f"--{name}", value]
    return tuple(words)


def source_context(ctx: typer.Context, **given: str | None) -> Context:
    """The context of a command that renders git, its source flags applied and remembered."""
    c = _app.context(ctx, **source_overrides(**given))
    c.source_flags = source_flags(**given)
    return c


FromArgocdOption = Annotated[
    str | None,
    typer.Option(
        "--from-argocd",
        metavar="APP",
        help="Ask Argo CD for APP's rendered manifests instead of rendering git.",
        show_default=False,
        callback=_app.not_blank,
    ),
]
KindOption = Annotated[
    str | None,
    typer.Option(help="Only objects of this kind.", show_default=False, callback=_app.not_blank),
]
NameOption = Annotated[
    str | None,
    typer.Option(help="Only objects of this name.", show_default=False, callback=_app.not_blank),
]
OutputOption = Annotated[
    ManifestFormat,
    typer.Option("-o", "--output", help=_app.OUTPUT_HELP, parser=_app.one_of(ManifestFormat)),
]


def command(
    ctx: typer.Context,
    repo: RepoOption = None,
    revision: RevisionOption = None,
    path: PathOption = None,
    renderer: RendererOption = None,
    from_argocd: FromArgocdOption = None,
    kind: KindOption = None,
    name: NameOption = None,
    output: OutputOption = "yaml",
) -> None:
    """Render the desired manifests of a git revision, without touching any checkout.

    The revision is exported to a temporary folder and rendered there: plain YAML
    (every .yaml/.yml/.json below the path, multi-document), a kustomization (with
    kustomize or kubectl), or a Helm chart (with helm). With --from-argocd the
    manifests come from Argo CD's own rendering of the application.

    Two documents for one object (same group, kind, namespace and name) are refused,
    naming both files and lines (for kustomize and helm, their positions in the output).

    Exits 0 on success, 2 for bad options, a missing render tool or two documents for
    one object, 3 when git, the revision, the path, the YAML or Argo CD cannot be read.

    Examples:
        fracctl render
        fracctl render --revision origin/main --path clusters/prod/gpu-fractioning
        fracctl render --kind GpuFractioningConfig -o json
        fracctl render --from-argocd gpu-fractioning --revision 3f2c1ab
    """
    from fracctl.flows import render as flow

    if from_argocd and (repo is not None or path is not None or renderer is not None):
        raise UsageError(
            "--from-argocd takes the manifests from Argo CD: drop --repo/--path/--renderer"
        )
    c = _app.context(ctx)
    if from_argocd:
        desired = flow.render_from_argocd(c, app=from_argocd, revision=revision)
    else:
        desired = flow.render(c, repo=repo, revision=revision, path=path, renderer=renderer)
    objects = [desired.objects[i] for i in flow.select(desired.objects, kind=kind, name=name)]
    if output == "json":
        _app.emit_json({"apiVersion": "v1", "kind": "List", "items": objects})
    else:
        sys.stdout.write(flow.to_yaml(objects))
    if not objects:
        c.warn("no objects rendered" + (" matched the selection" if kind or name else ""))


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("render")(command)
