"""Manifests from files, folders and standard input, for ``fracctl lint``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from fracctl.adapters.render import (
    Document,
    field_line,
    manifests_of,
    parse_documents,
    read_manifest,
    walk_manifests,
)
from fracctl.errors import ExternalError, UsageError

STDIN = "-"
STDIN_NAME = "<stdin>"


def read_inputs(paths: Sequence[str], stdin: TextIO) -> tuple[list[Document], int]:
    """Every Kubernetes object in ``paths`` (``-`` reads ``stdin``), and how many inputs.

    Folders are read recursively (``.yaml``, ``.yml``, ``.json``); documents without a
    kind and apiVersion are skipped, and ``List`` kinds are expanded.

    Raises:
        UsageError: a path does not exist, or ``-`` is given twice.
        ExternalError: a file cannot be read or is not valid YAML (file and line named).
    """
    docs: list[Document] = []
    count = 0
    if list(paths).count(STDIN) > 1:
        raise UsageError("'-' (standard input) can be given once")
    for raw in paths:
        if raw == STDIN:
            count += 1
            try:
                text = stdin.read()
            except UnicodeDecodeError:
                raise ExternalError(f"{STDIN_NAME}: not UTF-8 text") from None
            docs.extend(manifests_of(parse_documents(text, STDIN_NAME)))
            continue
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{raw}: no such file or directory")
        for f in walk_manifests(path):
            count += 1
            docs.extend(manifests_of(parse_documents(read_manifest(f, str(f)), str(f))))
    return docs, count


def line_of(doc: Document, field: str) -> int:
    """The line of ``field`` (``spec.template.spec``) in its file.

    The document's own line when the field cannot be placed (an item of a ``List``).
    """
    if not doc.text or not field:
        return doc.line
    lines = doc.text.splitlines()
    first = next(
        (i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith(("#", "---"))), 0
    )
    found = field_line(doc.text, field)
    if found is None:
        return doc.line
    return doc.line - first - 1 + found
