"""Argo CD's error answers are the generic fracctl errors, with Argo CD's details attached."""

from __future__ import annotations

import json

import pytest

from fracctl import errors
from fracctl.adapters.argocd import (
    ArgoCDStatus,
    OperationInProgress,
    SyncFailed,
    UnexpectedAnswer,
    error_for,
)
from fracctl.errors import ExitCode, NotFound

URL = "https://argocd.test"


def _grpc(code: int, message: str) -> str:
    return json.dumps({"code": code, "message": message, "error": message})


def _subclasses(cls: type[errors.FracctlError]) -> list[type[errors.FracctlError]]:
    """Every subclass of ``cls``, at any depth."""
    out: list[type[errors.FracctlError]] = []
    for child in cls.__subclasses__():
        out += [child, *_subclasses(child)]
    return out


def test_except_not_found_catches_an_argocd_404() -> None:
    with pytest.raises(NotFound) as e:
        raise error_for(404, _grpc(5, 'applications.argoproj.io "gpu" not found'), app="gpu")
    assert type(e.value) is NotFound
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert str(e.value) == (
        'Argo CD application gpu not found (404): applications.argoproj.io "gpu" not found '
        "(check argocd.app and the server; apps outside Argo CD's namespace are named "
        "namespace/name)"
    )
    status = e.value.status
    assert isinstance(status, ArgoCDStatus)
    assert (status.code, status.grpc_code) == (404, 5)
    assert status.reason == "NotFound"
    assert status.message == 'applications.argoproj.io "gpu" not found'


@pytest.mark.parametrize(
    ("status", "cls", "reason", "text"),
    [
        (
            401,
            errors.Unauthorized,
            "Unauthorized",
            f"Argo CD at {URL} rejected the token (401): x (the token may have expired or "
            "been revoked; put a fresh one in ARGOCD_AUTH_TOKEN or argocd.token_file)",
        ),
        (
            403,
            errors.Forbidden,
            "Forbidden",
            "Argo CD denied access to application gpu (403): x (the token's account needs "
            "RBAC permission 'applications, get' and 'applications, sync' on the app's "
            "project; Argo CD also answers 403 for an application that does not exist)",
        ),
        (
            404,
            errors.NotFound,
            "NotFound",
            "Argo CD application gpu not found (404): x (check argocd.app and the server; "
            "apps outside Argo CD's namespace are named namespace/name)",
        ),
        (
            500,
            errors.ServerError,
            "InternalError",
            "Argo CD server error (500) on application gpu: x (retry later; if it "
            "persists, read the argocd-server and repo-server logs)",
        ),
    ],
)
def test_each_argocd_answer_is_the_generic_error_of_its_status(
    status: int, cls: type[errors.ApiError], reason: str, text: str
) -> None:
    e = error_for(status, _grpc(2, "x"), app="gpu", url=URL)
    assert type(e) is cls
    assert isinstance(e.status, ArgoCDStatus)
    assert e.status.code == status and e.status.reason == reason
    assert (e.status.grpc_code, e.status.server, e.status.message) == (2, URL, "x")
    assert e.message.startswith("Argo CD ") and "API server:" not in e.message
    assert str(e) == text
    assert e.exit_code == ExitCode.EXTERNAL


def test_another_status_is_a_plain_api_error() -> None:
    e = error_for(400, _grpc(3, "invalid revision"), app="gpu", url=URL)
    assert type(e) is errors.ApiError
    assert isinstance(e.status, ArgoCDStatus)
    assert (e.status.code, e.status.grpc_code, e.status.reason) == (400, 3, "")
    assert str(e) == "Argo CD refused application gpu (400): invalid revision"
    assert e.exit_code == ExitCode.EXTERNAL


def test_operation_in_progress_is_an_api_error_with_its_hint() -> None:
    e = error_for(400, _grpc(9, "another operation is already in progress"), app="gpu")
    assert type(e) is OperationInProgress and isinstance(e, errors.ApiError)
    assert isinstance(e.status, ArgoCDStatus)
    assert (e.status.code, e.status.grpc_code) == (400, 9)
    assert str(e) == (
        "Argo CD application gpu: another operation is already in progress "
        "(wait for the running operation to end, or terminate it)"
    )
    assert e.args == (e.message,)
    assert e.exit_code == ExitCode.EXTERNAL


def test_a_kubernetes_5xx_is_a_server_error_too() -> None:
    e = errors.api_error_for(errors.ApiStatus(503, "ServiceUnavailable", "etcd down"))
    assert type(e) is errors.ServerError
    assert str(e) == "API server: 503 ServiceUnavailable: etcd down"


def test_unexpected_answers_and_sync_failures_are_not_api_errors() -> None:
    e = UnexpectedAnswer("GET x: the answer is not JSON (text/html)", hint="h", http_status=200)
    assert (str(e), e.http_status, e.exit_code) == (
        "GET x: the answer is not JSON (text/html) (h)",
        200,
        ExitCode.EXTERNAL,
    )
    assert not isinstance(e, errors.ApiError)
    failed = SyncFailed("ended Failed", operation_state={"phase": "Failed"})
    assert failed.exit_code == ExitCode.EXTERNAL
    assert str(failed) == "ended Failed"
    assert not isinstance(failed, errors.ApiError)


def test_no_error_class_has_two_bases() -> None:
    classes = _subclasses(errors.FracctlError)
    assert errors.ServerError in classes and UnexpectedAnswer in classes
    assert OperationInProgress in classes
    for cls in classes:
        assert len(cls.__bases__) == 1, f"{cls.__module__}.{cls.__qualname__}"
