"""The kustomize renderer: ``kustomize build`` (or ``kubectl kustomize``) of a folder.

The YAML under the folder is parsed first, so that a syntax error names its file and
line; each rendered object is then traced, by kind and name, to the document in the
export that most likely declared it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fracctl.adapters.render.documents import Document, manifests_of, parse_documents
from fracctl.adapters.render.plain import KUSTOMIZATION_FILES, read_manifest, walk_manifests
from fracctl.adapters.render.tool import run_tool
from fracctl.errors import ExternalError, UsageError


def _check_yaml_under(export: Path, rel: str) -> None:
    """Parse every YAML file under ``rel`` so a syntax error is named with file and line."""
    for f in walk_manifests(export / rel if rel else export):
        name = f.relative_to(export).as_posix()
        parse_documents(read_manifest(f, name), name)


def _index_sources(export: Path) -> dict[tuple[str, str, str], Document]:
    """``(kind, namespace, name)`` -> the document in the export that declares it."""
    index: dict[tuple[str, str, str], Document] = {}
    for f in walk_manifests(export)[:5000]:
        if f.name in KUSTOMIZATION_FILES or f.stat().st_size > 2_000_000:
            continue
        name = f.relative_to(export).as_posix()
        try:
            docs = manifests_of(parse_documents(read_manifest(f, name), name))
        except ExternalError:
            continue
        for d in docs:
            meta = d.obj.get("metadata") or {}
            if not isinstance(meta, dict):
                continue
            key = (str(d.obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))
            index.setdefault(key, d)
    return index


def render_kustomize(export: Path, rel: str, timeout: float) -> list[Document]:
    """``kustomize build`` (or ``kubectl kustomize``) of ``rel``."""
    _check_yaml_under(export, rel)
    target = str(export / rel) if rel else str(export)
    if shutil.which("kustomize"):
        argv = ["kustomize", "build", target]
    elif shutil.which("kubectl"):
        argv = ["kubectl", "kustomize", target]
    else:
        raise UsageError(
            f"{rel or '.'} is a kustomization: rendering it needs kustomize, "
            "but neither 'kustomize' nor 'kubectl' is on PATH"
        )
    text = run_tool(argv, export, f"{argv[0]} build of {rel or '.'}", timeout)
    docs = manifests_of(parse_documents(text, f"{argv[0]} output", stream=True))
    index = _index_sources(export)
    out: list[Document] = []
    for d in docs:
        meta = d.obj.get("metadata") or {}
        kind, name = str(d.obj.get("kind")), str(meta.get("name"))
        src = index.get((kind, str(meta.get("namespace") or ""), name)) or index.get(
            (kind, "", name)
        )
        # The source file is a best guess (by kind and name); the origin stays the
        # document's position in the output, which is exact.
        out.append(
            Document(d.obj, src.file, src.line, src.text, d.origin)
            if src
            else Document(d.obj, "", 0, "", d.origin)
        )
    return out
