"""YAML documents: parsing manifests with their lines, writing them, finding a field's line.

A stream is cut into single documents first, so that every object keeps the line it
starts at and its own text; ``List`` kinds are expanded into their items.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fracctl.errors import ExternalError

_DOC_START = re.compile(r"^---(\s|$)")
_DOC_END = re.compile(r"^\.\.\.(\s|$)")

Obj = dict[str, Any]


@dataclass
class Document:
    """One YAML document of a file, with where it starts."""

    obj: Obj
    file: str
    line: int
    text: str = ""
    origin: str = ""  # where it was written, for messages: "a.yaml:3", "document 2 of …"

    def __post_init__(self) -> None:
        if not self.origin:
            self.origin = f"{self.file}:{self.line}" if self.file else ""


def _yaml_error(name: str, offset: int, e: Exception) -> ExternalError:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    line = f":{offset + mark.line + 1}" if mark is not None else ""
    problem = getattr(e, "problem", None) or str(e).strip().splitlines()[0]
    return ExternalError(f"{name}{line}: not valid YAML: {problem}")


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """Split a YAML stream into single documents: ``(first line index, text)``."""
    lines = text.splitlines(keepends=True)
    start = 0
    buf: list[str] = []
    for i, line in enumerate(lines):
        if _DOC_START.match(line) and any(b.strip() and not b.startswith("#") for b in buf):
            yield start, "".join(buf)
            start, buf = i, []
        elif _DOC_END.match(line):
            yield start, "".join(buf)
            start, buf = i + 1, []
            continue
        buf.append(line)
    if buf:
        yield start, "".join(buf)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "isoformat"):  # YAML timestamps: Kubernetes keeps them as strings
        return value.isoformat()
    return str(value)


def _loader() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_documents(text: str, name: str, *, stream: bool = False) -> list[Document]:
    """Every non-empty document of a YAML (or JSON) stream.

    YAML 1.1 rules (libyaml when available), as kubectl reads manifests: ``yes`` and
    ``on`` are booleans there too.

    Args:
        text: the YAML stream.
        name: the file it came from, or what produced it (``kustomize output``).
        stream: ``text`` is a render tool's output: each document's origin names its
            position in that output rather than a file.

    Raises:
        ExternalError: the text is not valid YAML; the message names file and line.
    """
    import yaml

    loader = _loader()
    docs: list[Document] = []
    for offset, chunk in _chunks(text):
        if not chunk.strip():
            continue
        try:
            data = yaml.load(chunk, Loader=loader)  # noqa: S506 - a safe loader
        except yaml.YAMLError as e:
            raise _yaml_error(name, offset, e) from None
        if data is None:
            continue
        first = next(
            (
                i
                for i, ln in enumerate(chunk.splitlines())
                if ln.strip() and not ln.startswith(("#", "---"))
            ),
            0,
        )
        line = offset + first + 1
        origin = f"document {len(docs) + 1} of the {name} (line {line})" if stream else ""
        docs.append(Document(_plain(data), name, line, chunk, origin))
    return docs


def manifests_of(docs: Sequence[Document]) -> list[Document]:
    """Kubernetes objects among the documents (``List`` kinds expanded)."""
    out: list[Document] = []
    for d in docs:
        obj = d.obj
        if not isinstance(obj, dict) or not obj.get("kind") or not obj.get("apiVersion"):
            continue
        if str(obj["kind"]).endswith("List") and isinstance(obj.get("items"), list):
            out.extend(
                Document(i, d.file, d.line, "", f"{d.origin}, item {n + 1} of the {obj['kind']}")
                for n, i in enumerate(obj["items"])
                if isinstance(i, dict)
            )
            continue
        out.append(d)
    return out


def dump_yaml(objects: Sequence[Obj]) -> str:
    """Objects as a multi-document YAML stream (keys in their given order)."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return str(
        yaml.dump_all(
            list(objects),
            Dumper=dumper,
            sort_keys=False,
            default_flow_style=False,
            allow_unicode=True,
            explicit_start=len(objects) > 1,
        )
    )


def _lc(node: Any) -> Any:
    """The line/column record ruamel keeps on a loaded mapping or sequence."""
    return node.lc


def field_line(text: str, path: str) -> int | None:
    """The 1-based line of ``path`` (``spec.nodeSelector``) inside one document's text."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        root: Any = YAML(typ="rt").load(text)
    except YAMLError:
        return None
    node: Any = root
    line: int | None = None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            idx = int(part[1:-1])
            if not isinstance(node, list) or idx >= len(node):
                break
            try:
                line = int(_lc(node).item(idx)[0]) + 1
            except (AttributeError, KeyError, TypeError):
                break
            node = node[idx]
            continue
        if not isinstance(node, dict) or part not in node:
            break
        try:
            line = int(_lc(node).key(part)[0]) + 1
        except (AttributeError, KeyError, TypeError):
            break
        node = node[part]
    return line
