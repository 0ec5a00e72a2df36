"""Git through its command line, always with argument lists (never a shell).

Also the one place that opens a repository named by the user (``--repo`` or
``git.repo``) and resolves a revision in it, so every command reports a missing path,
a file, a folder that is not a repository, a repository without commits and an unknown
revision in the same words.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from fracctl.errors import ExternalError, UsageError
from fracctl.redact import register

_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "LC_ALL": "C",  # git's messages are matched below
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
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=str(cwd),
            env={**os.environ, **_ENV},
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as e:  # cwd missing or unreadable
        raise ExternalError(f"git {args[0]}: cannot work in {cwd}: {e.strerror}") from None
    if check and proc.returncode != 0:
        raise ExternalError(f"git {args[0]}: {message_of(proc.stderr or proc.stdout, proc)}")
    return proc


def message_of(output: str, proc: subprocess.CompletedProcess[str] | None = None) -> str:
    """The line of git's output that says what went wrong.

    git ends many errors with usage advice (``Use '--' to separate paths from
    revisions…``), so the ``fatal:``/``error:`` line is preferred over the last one.
    """
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    for line in lines:
        if line.startswith(("fatal: ", "error: ")):
            return line.split(": ", 1)[1]
    if lines:
        return lines[-1]
    return f"exit {proc.returncode}" if proc is not None else "failed"


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


# --- a repository named by the user ----------------------------------------------------


def is_remote(repo: str) -> bool:
    """Whether ``repo`` is a URL (``https://``, ``ssh://``, ``file://``, ``git@host:``)."""
    return "://" in repo or bool(re.match(r"^[\w.-]+@[\w.-]+:", repo))


def safe_url(url: str) -> str:
    """A URL without any user:password part."""
    return re.sub(r"://[^/@]+@", "://", url)


def register_url_credentials(url: str) -> None:
    """Have the password (or a token given as the user) of a URL masked in all output."""
    from urllib.parse import unquote

    found = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/@]+)@", url)
    if found:
        user, _, password = found.group(2).partition(":")
        if password:
            register(unquote(password))
        elif found.group(1).lower() in ("http", "https"):  # a token as the user name
            register(unquote(user))


def open_repo(repo: str, scratch: str) -> str:
    """A local git directory for ``repo``: the repository itself, or a bare clone of a URL.

    Raises:
        ExternalError: naming ``repo``: it does not exist, is a file, is not a git
            repository, or could not be cloned.
    """
    if is_remote(repo):
        register_url_credentials(repo)  # git's own messages may quote the URL
        dest = os.path.join(scratch, "clone.git")
        proc = git(["clone", "--quiet", "--bare", "--", repo, dest], cwd=scratch, check=False)
        if proc.returncode != 0:
            raise ExternalError(f"git clone {safe_url(repo)}: {message_of(proc.stderr, proc)}")
        return dest
    path = os.path.abspath(os.path.expanduser(repo))
    if not os.path.exists(path):
        raise ExternalError(f"git repository {repo} does not exist")
    if not os.path.isdir(path):
        raise ExternalError(f"{repo} is not a git repository: it is a file, not a directory")
    proc = git(["rev-parse", "--git-dir"], cwd=path, check=False)
    if proc.returncode != 0:
        why = message_of(proc.stderr, proc)
        if "not a git repository" in why:
            raise ExternalError(f"{repo} is not a git repository")
        # e.g. "detected dubious ownership": git's own words say what to do
        raise ExternalError(f"git repository {repo}: {why}")
    return path


def resolve_commit(gitdir: str, revision: str, repo: str) -> str:
    """The commit ``revision`` names in the repository at ``gitdir``.

    Raises:
        ExternalError: naming the repository when it has no commits at all, when
            ``revision`` is a branch without commits (a fresh ``HEAD``), or when the
            revision is unknown.
    """
    proc = git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"],
        cwd=gitdir,
        check=False,
    )
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip()
    name = safe_url(repo)
    commits = git(["rev-list", "-n", "1", "--all"], cwd=gitdir, check=False)
    if commits.returncode == 0 and not commits.stdout.strip():
        raise ExternalError(
            f"git repository {name} has no commits yet",
            hint="commit the manifests first",
        )
    if revision == "HEAD":
        branch = git(["symbolic-ref", "--quiet", "--short", "HEAD"], cwd=gitdir, check=False)
        if branch.returncode == 0 and branch.stdout.strip():
            raise ExternalError(
                f"HEAD of git repository {name} is branch {branch.stdout.strip()!r}, "
                "which has no commits yet",
                hint="commit to it, or give --revision",
            )
    raise ExternalError(f"unknown revision {revision!r} in git repository {name}")


def remote_commit(url: str, revision: str) -> str:
    """The commit a branch, a tag or ``HEAD`` names at ``url``, by ``git ls-remote``.

    Nothing is cloned; a commit given as one is returned as it is.

    Raises:
        ExternalError: naming the repository: it cannot be read, or has no such ref.
    """
    import tempfile

    if re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    register_url_credentials(url)
    ref = revision or "HEAD"
    proc = git(["ls-remote", "--", url, ref], cwd=tempfile.gettempdir(), check=False)
    if proc.returncode != 0:
        raise ExternalError(f"git ls-remote {safe_url(url)}: {message_of(proc.stderr, proc)}")
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        sha, _, name = line.partition("\t")
        found[name] = sha
    for name in (f"refs/tags/{ref}^{{}}", f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
        if name in found:
            return found[name]
    raise ExternalError(f"git repository {safe_url(url)} has no branch or tag {ref!r}")
