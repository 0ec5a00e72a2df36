"""The Kubernetes adapter's own error paths, against small local servers."""

from __future__ import annotations

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core.kube.nodes import selector_of
from fracctl.core.kube.resources import NODES
from fracctl.errors import ExitCode, ExternalError, Unreachable
from tests.support.canned import CannedServer, kube_at


def _kube(host: str) -> Kube:
    return kube_at(host, token="sekret-token-123")


def test_a_non_json_answer_is_a_clear_error(canned_server: CannedServer) -> None:
    kube = _kube(canned_server.url)
    with pytest.raises(ExternalError, match="not JSON") as e:
        kube.get(NODES, "a")
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert "sekret-token-123" not in str(e.value)
    kube.close()


def test_an_unreachable_server_names_the_host_not_the_token() -> None:
    from fracctl.sandbox.controlplane import free_port

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
