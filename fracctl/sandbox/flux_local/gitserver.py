"""A git server over HTTP on loopback: ``git http-backend`` behind a small HTTP server.

Flux's source-controller clones only http(s) or ssh URLs, so the sandbox and the e2e
tests serve their git repositories this way. Every repository below ``root`` is served
read-only at ``http://127.0.0.1:<port>/<path relative to root>``. Run as its own
process (``python -m fracctl.sandbox.flux_local.gitserver ROOT PORT``) so it can outlive
the command that started it, like the other sandbox processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def backend_env(
    root: str, method: str, path: str, query: str, headers: dict[str, str]
) -> dict[str, str]:
    """The CGI environment of one request to ``git http-backend``."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_PROJECT_ROOT": root,
        "GIT_HTTP_EXPORT_ALL": "1",
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_TYPE": headers.get("content-type", ""),
        "REMOTE_ADDR": "127.0.0.1",
        # Repositories belong to whoever made them; the server may run as another user.
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
    }
    if "git-protocol" in headers:
        env["GIT_PROTOCOL"] = headers["git-protocol"]
    return env


def split_cgi(output: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """A CGI response: its status, its headers and its body."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        head, found, body = output.partition(sep)
        if found:
            break
    else:
        return 502, [], output
    status, headers = 200, []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        elif name:
            headers.append((name.strip(), value.strip()))
    return status, headers, body


class _Handler(BaseHTTPRequestHandler):
    root = "/"

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self._serve()

    def do_POST(self) -> None:  # noqa: N802
        self._serve()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        body = self._body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        env = backend_env(self.root, self.command, path, query, headers)
        env["CONTENT_LENGTH"] = str(len(body))
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        status, out_headers, payload = split_cgi(done.stdout)
        self.send_response(status)
        for name, value in out_headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def server(root: str, port: int) -> ThreadingHTTPServer:
    """The server of every repository below ``root`` on ``127.0.0.1:port`` (0: any port)."""
    handler = type("Handler", (_Handler,), {"root": os.path.abspath(root)})
    return ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve(root: str, port: int) -> None:
    """Serve every repository below ``root`` on ``127.0.0.1:port`` until killed."""
    with server(root, port) as s:
        s.serve_forever()


if __name__ == "__main__":  # pragma: no cover - run as a process by the sandbox
    serve(sys.argv[1], int(sys.argv[2]))
