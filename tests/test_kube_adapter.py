"""The Kubernetes adapter's own error paths, against small local servers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core.nodes import selector_of
from fracctl.core.resources import NODES
from fracctl.errors import ExitCode, ExternalError, Unreachable


class _Html(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        body = b"<html>login</html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def html_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _kube(host: str) -> Kube:
    from kubernetes.client import Configuration

    cfg = Configuration()
    cfg.host = host
    cfg.api_key = {"authorization": "Bearer sekret-token-123"}
    return Kube(cfg, timeout=5)


def test_a_non_json_answer_is_a_clear_error(html_server: str) -> None:
    kube = _kube(html_server)
    with pytest.raises(ExternalError, match="not JSON") as e:
        kube.get(NODES, "a")
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert "sekret-token-123" not in str(e.value)
    kube.close()


def test_an_unreachable_server_names_the_host_not_the_token() -> None:
    from fracctl.adapters.controlplane import free_port

    kube = _kube(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(Unreachable, match="cannot reach the API server at http://127.0.0.1") as e:
        kube.list(NODES)
    assert "sekret-token-123" not in str(e.value)
    kube.close()


def test_selector_of_reads_the_configured_field() -> None:
    obj = {"spec": {"nodeSelector": {"a": "b"}, "placement": {"nodes": {"c": "d"}}}}
    assert selector_of(obj, "spec.nodeSelector") == {"a": "b"}
    assert selector_of(obj, "spec.placement.nodes") == {"c": "d"}
    assert selector_of(obj, "spec.missing") == {}
    assert selector_of(None, "spec.nodeSelector") is None
