"""A repository named by --repo / git.repo that cannot be rendered says why, naming it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fracctl.adapters.git import git, init_repo
from fracctl.adapters.render import render_git
from fracctl.errors import ExitCode, ExternalError
from tests.support.helpers import run_cli

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"


def empty_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(["init", "-q", "-b", "main"], cwd=path)
    return path


def one_line(r: object) -> None:
    stderr = r.stderr  # type: ignore[attr-defined]
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert "Traceback" not in r.output  # type: ignore[attr-defined]


def test_repository_without_commits_says_so(tmp_path: Path) -> None:
    repo = empty_repo(tmp_path / "empty")
    (repo / "a.yaml").write_text(CM)  # files, but nothing committed
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "HEAD", ".")
    assert str(e.value).startswith(f"git repository {repo} has no commits yet")
    assert "unknown revision" not in str(e.value)
    # Whatever revision was asked for: there is nothing to find.
    with pytest.raises(ExternalError, match="has no commits yet"):
        render_git(str(repo), "main", ".")


def test_cli_repository_without_commits(tmp_path: Path) -> None:
    empty_repo(tmp_path / "empty")
    r = run_cli("render", "--repo", "empty")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "git repository empty has no commits yet" in r.stderr
    assert "unknown revision" not in r.stderr
    one_line(r)


def test_head_on_a_branch_without_commits_names_the_branch(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "a.yaml").write_text(CM)
    init_repo(repo, message="init")
    git(["checkout", "-q", "--orphan", "fresh"], cwd=repo)
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "HEAD", ".")
    assert "branch 'fresh', which has no commits yet" in str(e.value)
    assert render_git(str(repo), "main", ".").objects[0]["metadata"]["name"] == "a"
    with pytest.raises(ExternalError) as e:
        render_git(str(repo), "nope", ".")
    assert str(e.value) == f"unknown revision 'nope' in git repository {repo}"


def test_clone_of_an_empty_remote_says_it_has_no_commits(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    with pytest.raises(ExternalError) as e:
        render_git(f"file://{bare}", "HEAD", ".")
    assert str(e.value).startswith(f"git repository file://{bare} has no commits yet")


def test_repo_that_is_a_file_is_not_reported_missing(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a repository\n")
    with pytest.raises(ExternalError) as e:
        render_git(str(tmp_path / "afile"), "HEAD", ".")
    msg = str(e.value)
    assert str(tmp_path / "afile") in msg
    assert "is not a git repository" in msg and "not a directory" in msg
    assert "does not exist" not in msg

    r = run_cli("render", "--repo", "afile")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "afile is not a git repository: it is a file, not a directory" in r.stderr
    one_line(r)
    # From the configuration file as well.
    Path("fracctl.yaml").write_text("git:\n  repo: afile\n")
    r = run_cli("render")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "afile is not a git repository" in r.stderr


def test_missing_and_plain_folders_keep_their_messages(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    r = run_cli("render", "--repo", "plain")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "plain is not a git repository" in r.stderr
    r = run_cli("render", "--repo", "nope")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "git repository nope does not exist" in r.stderr


def test_git_errors_quote_the_fatal_line_not_the_usage_advice(tmp_path: Path) -> None:
    repo = empty_repo(tmp_path / "empty")
    with pytest.raises(ExternalError) as e:
        git(["rev-parse", "HEAD"], cwd=repo)
    assert "ambiguous argument 'HEAD'" in str(e.value)
    assert "Use '--'" not in str(e.value)
    with pytest.raises(ExternalError, match="cannot work in"):
        git(["status"], cwd=tmp_path / "missing")


@pytest.mark.parametrize("kind", ["empty", "file"])
def test_drift_and_recreate_word_it_the_same_on_a_real_cluster(
    kind: str, kubeconfig: str, tmp_path: Path
) -> None:
    if kind == "empty":
        empty_repo(tmp_path / "repo")
        needle = "git repository repo has no commits yet"
    else:
        (tmp_path / "repo").write_text("x\n")
        needle = "repo is not a git repository: it is a file, not a directory"
    r = run_cli("--kubeconfig", kubeconfig, "drift", "--repo", "repo")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert needle in r.stderr
    one_line(r)
    Path("fracctl.yaml").write_text("git:\n  repo: repo\nrecreate:\n  backend: apply\n")
    r = run_cli("--kubeconfig", kubeconfig, "recreate", "--dry-run")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert needle in r.stderr
