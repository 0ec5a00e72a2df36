"""The sandbox's git server (``git http-backend`` over HTTP), served in this process: what
Flux's source-controller clones from, read as git itself reads it."""

from __future__ import annotations

import http.client
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.sandbox.flux_local import gitserver


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A repository with one commit, served; the base URL and the commit."""
    repo = tmp_path / "root" / "gitops"
    repo.mkdir(parents=True)
    _git("init", "-q", "-b", "main", cwd=repo)
    (repo / "config.yaml").write_text("kind: ConfigMap\n")
    _git("add", ".", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one", cwd=repo)
    s = gitserver.server(str(tmp_path / "root"), 0)
    thread = threading.Thread(target=s.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{s.server_address[1]}", _git("rev-parse", "HEAD", cwd=repo)
    finally:
        s.shutdown()
        s.server_close()
        thread.join(timeout=10)


def test_git_clones_what_the_repository_holds(served: tuple[str, str], tmp_path: Path) -> None:
    url, commit = served
    assert _git("ls-remote", f"{url}/gitops", "refs/heads/main").split() == [
        commit, "refs/heads/main"]  # fmt: skip
    _git("clone", "-q", f"{url}/gitops", str(tmp_path / "clone"))
    assert _git("rev-parse", "HEAD", cwd=tmp_path / "clone") == commit
    assert (tmp_path / "clone" / "config.yaml").read_text() == "kind: ConfigMap\n"


def test_a_missing_repository_is_not_found(served: tuple[str, str]) -> None:
    url, _ = served
    done = subprocess.run(["git", "ls-remote", f"{url}/no-such"], capture_output=True, text=True)
    assert done.returncode != 0
    assert "not found" in done.stderr


def test_a_chunked_request_body_reaches_git_whole(served: tuple[str, str]) -> None:
    """git sends a large negotiation chunked; the server reassembles it for http-backend."""
    url, commit = served
    want = f"want {commit}\n".encode()
    lines = [b"%04x" % (len(want) + 4) + want, b"0000", b"0009done\n"]
    conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)
    try:
        conn.request(
            "POST", "/gitops/git-upload-pack", body=iter(lines), encode_chunked=True,
            headers={"Content-Type": "application/x-git-upload-pack-request"},
        )  # fmt: skip
        response = conn.getresponse()
        payload = response.read()
    finally:
        conn.close()
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/x-git-upload-pack-result"
    assert payload.startswith(b"0008NAK\n") and b"PACK" in payload


def test_a_cgi_answer_without_headers_is_a_bad_gateway() -> None:
    assert gitserver.split_cgi(b"no header block") == (502, [], b"no header block")
    assert gitserver.split_cgi(b"Status: 404 Not Found\nX-A: b\n\nbody") == (
        404, [("X-A", "b")], b"body")  # fmt: skip
