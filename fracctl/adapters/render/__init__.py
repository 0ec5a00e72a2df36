"""Render the desired manifests of a git revision without touching any working tree.

The revision is exported with ``git archive`` into a temporary folder (removed
afterwards), then rendered as plain YAML, with kustomize (a ``kustomize`` binary, else
``kubectl kustomize``) or with ``helm template``. Every object keeps the file and line
it came from where that can be known, so CI annotations can point at it. One module per
concern: :mod:`.documents` (YAML), :mod:`.export` (git), :mod:`.plain`,
:mod:`.kustomize` and :mod:`.helm` (the renderers, :mod:`.tool` running the latter two)
and :mod:`.revision` (:func:`render_git`, which joins them).
"""

from fracctl.adapters.git import is_remote
from fracctl.adapters.render.documents import (
    Document,
    Obj,
    dump_yaml,
    field_line,
    manifests_of,
    parse_documents,
)
from fracctl.adapters.render.export import normalise_path
from fracctl.adapters.render.helm import render_helm
from fracctl.adapters.render.kustomize import render_kustomize
from fracctl.adapters.render.plain import (
    KUSTOMIZATION_FILES,
    MANIFEST_SUFFIXES,
    read_manifest,
    render_plain,
    walk_manifests,
)
from fracctl.adapters.render.revision import RENDERERS, Rendered, detect_renderer, render_git

__all__ = [
    "KUSTOMIZATION_FILES",
    "MANIFEST_SUFFIXES",
    "RENDERERS",
    "Document",
    "Obj",
    "Rendered",
    "detect_renderer",
    "dump_yaml",
    "field_line",
    "is_remote",
    "manifests_of",
    "normalise_path",
    "parse_documents",
    "read_manifest",
    "render_git",
    "render_helm",
    "render_kustomize",
    "render_plain",
    "walk_manifests",
]
