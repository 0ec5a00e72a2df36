"""Git through its command line, always with argument lists (never a shell)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from fracctl.errors import ExternalError, UsageError

_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_AUTHOR_NAME": "fracctl",
    "GIT_AUTHOR_EMAIL": "fracctl@localhost",
    "GIT_COMMITTER_NAME": "fracctl",
    "GIT_COMMITTER_EMAIL": "fracctl@localhost",
}


def git(
    args: list[str], *, cwd: str | Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``git ARGS`` in ``cwd``; a failure becomes an ExternalError with git's message."""
    if shutil.which("git") is None:
        raise UsageError("git is not installed")
    proc = subprocess.run(
        ["git", *args],
        cwd=str(cwd),
        env={**os.environ, **_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    if check and proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip().splitlines()
        raise ExternalError(
            f"git {args[0]}: {message[-1] if message else f'exit {proc.returncode}'}"
        )
    return proc


def init_repo(path: Path, *, message: str) -> str:
    """Make ``path`` a git repository with everything in it committed; return the commit."""
    git(["init", "-q", "-b", "main"], cwd=path)
    git(["add", "-A"], cwd=path)
    git(["commit", "-q", "-m", message], cwd=path)
    return git(["rev-parse", "HEAD"], cwd=path).stdout.strip()


def commit_all(path: Path, *, message: str) -> str:
    """Commit every change in the repository at ``path``; return the commit."""
    git(["add", "-A"], cwd=path)
    git(["commit", "-q", "--allow-empty", "-m", message], cwd=path)
    return git(["rev-parse", "HEAD"], cwd=path).stdout.strip()
