"""Kubeconfig credentials never reach output: tokens, passwords, client keys, in any form."""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fracctl import redact as r
from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import NODES
from fracctl.errors import ApiError, ConfigError, ExitCode, Unauthorized
from tests.redact.test_redact import FORMS, leaked, needles

KUBE_TOKEN = "kube-token.Zm9vYmFy/c2VjcmV0+dG9rZW4_aGVyZQ-xyz="
PASSWORD = 'pa55:w0rd with spaces & "quotes"'
KEY_LINES = [base64.b64encode(bytes([i + 7]) * 48).decode() for i in range(4)]
KEY = "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END EC PRIVATE KEY-----\n"


@pytest.fixture(autouse=True)
def registry() -> Iterator[None]:
    r.forget_all()
    yield
    r.forget_all()


class Echo:
    """An HTTP server answering every request with 401, quoting its Authorization header."""

    def __init__(self, form: str = "raw") -> None:
        self.form = form
        self.seen: list[str] = []
        echo = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                auth = self.headers.get("Authorization") or ""
                echo.seen.append(auth)
                token = auth.partition(" ")[2]
                status = {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": f"token rejected: {FORMS[echo.form](token)}",
                    "reason": "Unauthorized",
                    "code": 401,
                }
                data = json.dumps(status).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def echo_server() -> Iterator[Echo]:
    server = Echo()
    yield server
    server.stop()


@pytest.fixture
def echo(echo_server: Echo) -> Echo:
    echo_server.form = "raw"
    echo_server.seen.clear()
    return echo_server


def kubeconfig(tmp_path: Path, server: str, user: dict[str, Any]) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_token_with_a_line_break_is_refused_without_quoting_it(
    tmp_path: Path, echo: Echo
) -> None:
    bad = f"{KUBE_TOKEN}\nsecond-line"
    kube = Kube.connect(kubeconfig=kubeconfig(tmp_path, echo.url, {"token": bad}))
    with pytest.raises(ConfigError) as e:
        kube.get(NODES, "n1")
    text = str(e.value)
    assert e.value.exit_code == ExitCode.USAGE
    assert "more than one line" in text and "\n" not in text
    assert not leaked(text, KUBE_TOKEN, "second-line", window=6)
    assert echo.seen == []  # nothing was sent


def test_a_token_file_ending_with_a_newline_works_like_kubectl(tmp_path: Path, echo: Echo) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(KUBE_TOKEN + "\n")
    kube = Kube.connect(kubeconfig=kubeconfig(tmp_path, echo.url, {"tokenFile": str(token_file)}))
    with pytest.raises(Unauthorized):
        kube.get(NODES, "n1")
    assert echo.seen == [f"Bearer {KUBE_TOKEN}"]


@pytest.mark.parametrize("form", list(FORMS))
def test_a_token_echoed_by_the_server_in_any_form_is_masked(
    tmp_path: Path, echo: Echo, form: str
) -> None:
    echo.form = form
    kube = Kube.connect(kubeconfig=kubeconfig(tmp_path, echo.url, {"token": KUBE_TOKEN}))
    with pytest.raises(ApiError) as e:
        kube.get(NODES, "n1")
    text = str(e.value)
    assert "token rejected: " in text and r.MASK in text
    assert not leaked(text, *needles(form, KUBE_TOKEN)), text


def test_a_password_is_registered_and_masked(tmp_path: Path, echo: Echo) -> None:
    kube = Kube.connect(
        kubeconfig=kubeconfig(tmp_path, echo.url, {"username": "admin", "password": PASSWORD})
    )
    with pytest.raises(Unauthorized) as e:
        kube.get(NODES, "n1")
    basic = echo.seen[0].partition(" ")[2]
    assert base64.b64decode(basic).decode() == f"admin:{PASSWORD}"
    assert r.redact(f"pw {PASSWORD}!") == "pw ***!"
    assert not leaked(str(e.value), basic, PASSWORD)


def test_the_client_key_is_registered_and_masked(tmp_path: Path) -> None:
    data = base64.b64encode(KEY.encode()).decode()
    Kube.connect(
        kubeconfig=kubeconfig(
            tmp_path,
            "https://127.0.0.1:1",
            {
                "client-certificate-data": base64.b64encode(b"cert").decode(),
                "client-key-data": data,
            },
        )
    )
    for text in (KEY, json.dumps({"key": KEY}), f"client-key-data: {data}", KEY_LINES[2]):
        out = r.redact(text)
        assert r.MASK in out
        assert not leaked(out, *KEY_LINES, data[4:]), out


def test_an_exec_plugin_token_is_registered(tmp_path: Path, echo: Echo) -> None:
    plugin = tmp_path / "plugin"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": KUBE_TOKEN},
    }
    plugin.write_text(f"#!/bin/sh\necho '{json.dumps(credential)}'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }
    kube = Kube.connect(
        kubeconfig=kubeconfig(tmp_path, echo.url, exec_user),
        env={"PATH": os.environ.get("PATH", "")},
    )
    with pytest.raises(Unauthorized) as e:
        kube.get(NODES, "n1")
    assert echo.seen == [f"Bearer {KUBE_TOKEN}"]
    assert r.redact(KUBE_TOKEN) == r.MASK
    assert "token rejected: invalid token ***" in str(e.value)
