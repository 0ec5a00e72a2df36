"""Exporting a git revision: its object types, its tree, and ``git archive`` into a folder.

Only ``git`` itself is run, with prompts off, so no working tree is touched; the export
is unpacked with tar's data filter (no path may leave the folder).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import PurePosixPath

from fracctl.adapters.git import open_repo
from fracctl.errors import ExternalError, UsageError

_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}


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
local_repo = open_repo


def object_type(gitdir: str, commit: str, path: str) -> str | None:
    """What ``path`` is at ``commit`` (``tree``, ``blob``), or None when it is not there."""
    spec = f"{commit}:{path}" if path else f"{commit}:"
    proc = _git(["cat-file", "-t", spec], gitdir)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def tree_names(gitdir: str, commit: str, path: str) -> list[str]:
    """The names in the folder ``path`` at ``commit`` (none when it is not a folder)."""
    spec = f"{commit}:{path}" if path else f"{commit}:"
    proc = _git(["ls-tree", "--name-only", spec], gitdir)
    return proc.stdout.decode().splitlines() if proc.returncode == 0 else []


def export_tree(gitdir: str, commit: str, dest: str, pathspec: str | None) -> None:
    """Unpack the tree of ``commit`` (below ``pathspec``) into ``dest`` (``git archive``)."""
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
