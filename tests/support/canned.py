"""A local server with a canned answer: what a proxy in front of the API server might send."""

from __future__ import annotations

from fracctl.adapters.kube import Kube


class CannedServer:
    """A local HTTP server that answers every GET with one canned body: what a proxy in
    front of the API server might send. Set ``content_type`` and ``body``; ``url``."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        canned = self
        self.content_type, self.body = "text/html", b"<html>login</html>"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self.send_response(200)
                self.send_header("Content-Type", canned.content_type)
                self.send_header("Content-Length", str(len(canned.body)))
                self.end_headers()
                self.wfile.write(canned.body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def kube_at(url: str, *, token: str | None = None) -> Kube:
    """A client for ``url`` without a kubeconfig (a local stand-in server)."""
    from kubernetes.client import Configuration

    cfg = Configuration()
    cfg.host = url
    if token:
        cfg.api_key = {"authorization": f"Bearer {token}"}
    return Kube(cfg, timeout=5)
