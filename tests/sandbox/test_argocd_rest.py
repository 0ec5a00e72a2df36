"""The local Argo CD's setup calls: a slow answer is a timeout a waiting caller asks again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from fracctl.errors import ExternalError, TimedOut
from fracctl.sandbox.argocd_local import applications
from fracctl.sandbox.argocd_local.processes import LocalArgoCD
from fracctl.sandbox.argocd_local.rest import api

URL = "http://127.0.0.1:43711"


@respx.mock
def test_a_read_timeout_is_a_timeout_and_a_refused_connection_an_external_error() -> None:
    respx.get(f"{URL}/slow").mock(side_effect=httpx.ReadTimeout("timed out"))
    respx.get(f"{URL}/down").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(TimedOut, match="ReadTimeout"):
        api(URL, "GET", "/slow")
    with pytest.raises(ExternalError, match="ConnectError"):
        api(URL, "GET", "/down")


def test_wait_compared_asks_again_after_a_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers: list[Any] = [TimedOut("busy"), {"status": {"sync": {"status": "OutOfSync"}}}]

    def fake(*_args: Any, **_kwargs: Any) -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(applications, "api", fake)
    monkeypatch.setattr(LocalArgoCD, "token", lambda _self, _account: "t")
    local = LocalArgoCD(str(tmp_path), kubeconfig="unused", port=43711)
    assert applications.wait_compared(local, "app")["status"]["sync"]["status"] == "OutOfSync"
    assert answers == []


def test_wait_compared_gives_up_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def slow(*_args: Any, **_kwargs: Any) -> Any:
        raise TimedOut("busy")

    monkeypatch.setattr(applications, "api", slow)
    monkeypatch.setattr(LocalArgoCD, "token", lambda _self, _account: "t")
    local = LocalArgoCD(str(tmp_path), kubeconfig="unused", port=43711)
    with pytest.raises(TimedOut, match="busy"):
        applications.wait_compared(local, "app", timeout=0.0)
