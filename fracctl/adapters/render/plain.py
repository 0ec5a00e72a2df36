"""Manifest files: finding and reading them, and the plain renderer that parses them all.

A folder is read recursively (``.yaml``, ``.yml``, ``.json``, outside ``.git``), in
path order; kustomization files are not manifests and are skipped.
"""

from __future__ import annotations

from pathlib import Path

from fracctl.adapters.render.documents import Document, manifests_of, parse_documents
from fracctl.errors import ExternalError

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def walk_manifests(root: Path) -> list[Path]:
    """``root`` itself, or every manifest file below it (outside ``.git``), in path order."""
    if root.is_file():
        return [root]
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in MANIFEST_SUFFIXES and ".git" not in p.parts
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def read_manifest(path: Path, name: str) -> str:
    """A manifest file's text; one-line errors name it as ``name``."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ExternalError(f"{name}: not UTF-8 text") from None
    except OSError as e:
        raise ExternalError(f"{name}: cannot read: {e.strerror}") from None


def render_plain(export: Path, rel: str) -> list[Document]:
    """Every manifest under ``rel`` (recursive, multi-document; kustomization files skipped)."""
    out: list[Document] = []
    for f in walk_manifests(export / rel if rel else export):
        if f.name in KUSTOMIZATION_FILES:
            continue
        name = f.relative_to(export).as_posix()
        out.extend(manifests_of(parse_documents(read_manifest(f, name), name)))
    return out
