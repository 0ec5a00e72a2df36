"""Render the desired manifests of a git revision without touching any working tree.

The revision is exported with ``git archive`` into a temporary folder (removed
afterwards), then rendered as plain YAML, with kustomize (a ``kustomize`` binary, else
``kubectl kustomize``) or with ``helm template``. Every object keeps the file and line
it came from where that can be known, so CI annotations can point at it.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from fracctl.adapters.git import is_remote as is_remote
from fracctl.adapters.git import open_repo, resolve_commit, safe_url
from fracctl.core.drift import Location
from fracctl.core.manifests import check_unique
from fracctl.errors import ExternalError, UsageError

RENDERERS = ("auto", "plain", "kustomize", "helm")
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
_DOC_START = re.compile(r"^---(\s|$)")
_DOC_END = re.compile(r"^\.\.\.(\s|$)")
_HELM_SOURCE = re.compile(r"^# Source: (\S+)")

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


# --- YAML --------------------------------------------------------------------------------


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


# --- git ---------------------------------------------------------------------------------


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("git") is None:
        raise UsageError("rendering from git needs git: no 'git' on PATH")
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **_GIT_ENV},
        capture_output=True,
        check=False,
    )


def _last_line(raw: bytes) -> str:
    lines = [ln for ln in raw.decode(errors="replace").strip().splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


# Opening the repository and resolving the revision belong to the git adapter, so every
# command words a missing path, a file, an empty repository or a bad revision alike.
_local_repo = open_repo
_safe_url = safe_url


def _object_type(gitdir: str, commit: str, path: str) -> str | None:
    spec = f"{commit}:{path}" if path else f"{commit}:"
    proc = _git(["cat-file", "-t", spec], gitdir)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def _tree_names(gitdir: str, commit: str, path: str) -> list[str]:
    spec = f"{commit}:{path}" if path else f"{commit}:"
    proc = _git(["ls-tree", "--name-only", spec], gitdir)
    return proc.stdout.decode().splitlines() if proc.returncode == 0 else []


def _export(gitdir: str, commit: str, dest: str, pathspec: str | None) -> None:
    args = ["archive", "--format=tar", commit]
    if pathspec:
        args += ["--", pathspec]
    proc = _git(args, gitdir)
    if proc.returncode != 0:
        raise ExternalError(f"git archive {commit[:12]}: {_last_line(proc.stderr)}")
    try:
        with tarfile.open(fileobj=io.BytesIO(proc.stdout), mode="r:") as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, filter="data")
            else:  # pragma: no cover - Python without extraction filters
                for member in tar.getmembers():
                    target = os.path.realpath(os.path.join(dest, member.name))
                    if not target.startswith(os.path.realpath(dest) + os.sep):
                        raise ExternalError(f"git archive: unsafe path {member.name!r}")
                tar.extractall(dest)  # noqa: S202 - every member checked above
    except tarfile.TarError as e:
        raise ExternalError(f"git archive {commit[:12]}: cannot unpack: {e}") from None


def normalise_path(path: str) -> str:
    """A repository-relative path without ``./`` or trailing ``/`` (``""`` is the root)."""
    p = PurePosixPath(path.strip() or ".")
    if p.is_absolute() or ".." in p.parts:
        raise UsageError(f"git path {path!r} must be relative to the repository root")
    text = str(p)
    return "" if text == "." else text


def detect_renderer(names: Sequence[str]) -> str:
    """``helm`` for a chart, ``kustomize`` for a kustomization, else ``plain``."""
    if "Chart.yaml" in names:
        return "helm"
    if any(n in names for n in KUSTOMIZATION_FILES):
        return "kustomize"
    return "plain"


# --- renderers ---------------------------------------------------------------------------


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


def _run_tool(argv: list[str], cwd: Path, what: str, timeout: float) -> str:
    try:
        proc = subprocess.run(
            argv,
            cwd=str(cwd),
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            env={**os.environ, "HELM_NO_PLUGINS": "1"},
        )
    except subprocess.TimeoutExpired:
        raise ExternalError(f"{what} did not finish in {timeout:.0f}s") from None
    except OSError as e:
        raise ExternalError(f"{what}: cannot run {argv[0]}: {e.strerror}") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        detail = "; ".join(lines[-3:]) if lines else f"exit {proc.returncode}"
        raise ExternalError(f"{what} failed: {detail[:800]}")
    return proc.stdout


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
    text = _run_tool(argv, export, f"{argv[0]} build of {rel or '.'}", timeout)
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


def render_helm(
    export: Path,
    rel: str,
    timeout: float,
    *,
    release: str = "",
    namespace: str = "",
    values: Sequence[str] = (),
) -> list[Document]:
    """``helm template`` of the chart at ``rel``."""
    helm = shutil.which("helm")
    if helm is None:
        raise UsageError(
            f"{rel or '.'} is a Helm chart: rendering it needs helm, but 'helm' is not on PATH"
        )
    chart = export / rel if rel else export
    argv = [helm, "template", release or chart.name or "release", str(chart)]
    if namespace:
        argv += ["--namespace", namespace]
    for v in values:
        vf = chart / v
        if not vf.is_file():
            raise ExternalError(
                f"helm values file {(Path(rel) / v).as_posix()} not in the revision"
            )
        argv += ["--values", str(vf)]
    text = _run_tool(argv, export, f"helm template of {rel or '.'}", timeout)
    out: list[Document] = []
    for doc in parse_documents(text, "helm output", stream=True):
        m = next(filter(None, (_HELM_SOURCE.match(ln) for ln in doc.text.splitlines())), None)
        file = ""
        if m:
            # "# Source: <chart>/templates/x.yaml": make it repository-relative.
            inner = m.group(1).split("/", 1)[1] if "/" in m.group(1) else m.group(1)
            file = (PurePosixPath(rel) / inner).as_posix() if rel else inner
        origin = f"{doc.origin}, from {file}" if file else doc.origin
        for d in manifests_of([Document(doc.obj, file, 1 if file else 0, "", origin)]):
            out.append(d)
    return out


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
    default_namespace: str = "",
    cluster_scoped: Collection[tuple[str, str]] = (),
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
        default_namespace: the namespace of a rendered object that names none (to
            tell whether two documents declare the same object).
        cluster_scoped: ``(group, kind)`` pairs known to be cluster-scoped.

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
    with tempfile.TemporaryDirectory(prefix="fracctl-render-") as scratch:
        gitdir = _local_repo(repo, scratch)
        commit = resolve_commit(gitdir, revision, repo)
        kind = _object_type(gitdir, commit, rel)
        if kind is None:
            raise ExternalError(
                f"path {rel or '.'!r} does not exist at revision {revision!r} "
                f"(commit {commit[:12]}) of {_safe_url(repo)}"
            )
        chosen = renderer
        if chosen == "auto":
            chosen = (
                detect_renderer(_tree_names(gitdir, commit, rel)) if kind == "tree" else "plain"
            )
        if chosen != "plain" and kind != "tree":
            raise UsageError(f"the {chosen} renderer needs a folder, but {rel!r} is a file")
        export = Path(scratch) / "export"
        export.mkdir()
        # Plain YAML needs only its folder; kustomize and helm may reach outside it.
        _export(gitdir, commit, str(export), rel if chosen == "plain" and rel else None)
        if chosen == "plain":
            docs = render_plain(export, rel)
        elif chosen == "kustomize":
            docs = render_kustomize(export, rel, timeout)
        else:
            docs = render_helm(
                export,
                rel,
                timeout,
                release=helm_release,
                namespace=helm_namespace,
                values=helm_values,
            )
    check_unique(
        [d.obj for d in docs],
        [d.origin for d in docs],
        source=f"the manifests under {rel or '.'} at {revision} (commit {commit[:12]})",
        default_namespace=default_namespace,
        cluster_scoped=cluster_scoped,
    )
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
