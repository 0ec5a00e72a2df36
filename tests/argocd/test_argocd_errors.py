"""The Argo CD errors are also the generic fracctl errors, with their exit codes unchanged."""

from __future__ import annotations

import json

import pytest

from fracctl import errors
from fracctl.adapters.argocd import (
    ApplicationNotFound,
    ArgoCDError,
    ArgoCDForbidden,
    ArgoCDServerError,
    ArgoCDUnauthorized,
    OperationInProgress,
    SyncFailed,
    error_for,
)
from fracctl.errors import ExitCode, NotFound


def _grpc(code: int, message: str) -> str:
    return json.dumps({"code": code, "message": message, "error": message})


def test_except_not_found_catches_an_argocd_404() -> None:
    with pytest.raises(NotFound) as e:
        raise error_for(404, _grpc(5, 'applications.argoproj.io "gpu" not found'), app="gpu")
    assert type(e.value) is ApplicationNotFound
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert str(e.value) == (
        'Argo CD application gpu not found (404): applications.argoproj.io "gpu" not found '
        "(check argocd.app and the server; apps outside Argo CD's namespace are named "
        "namespace/name)"
    )
    # The HTTP status is still the number, and reads as the generic handlers' ApiStatus.
    assert e.value.status == 404 and e.value.code == 5
    assert e.value.status.code == 404
    assert e.value.status.reason == "NotFound"
    assert e.value.status.message == e.value.message
    assert json.dumps({"status": e.value.status}) == '{"status": 404}'


@pytest.mark.parametrize(
    ("status", "cls", "generic"),
    [
        (401, ArgoCDUnauthorized, errors.Unauthorized),
        (403, ArgoCDForbidden, errors.Forbidden),
        (404, ApplicationNotFound, errors.NotFound),
    ],
)
def test_each_argocd_error_is_its_generic_counterpart(
    status: int, cls: type[ArgoCDError], generic: type[errors.ApiError]
) -> None:
    e = error_for(status, _grpc(0, "x"), app="gpu", url="https://argocd.test")
    assert type(e) is cls
    assert isinstance(e, generic) and isinstance(e, errors.ApiError)
    assert isinstance(e, ArgoCDError) and isinstance(e, errors.ExternalError)
    assert e.status == status
    assert isinstance(e.status, errors.ApiStatus) and e.status.code == status
    assert e.exit_code == ExitCode.EXTERNAL
    assert e.message.startswith("Argo CD ") and "API server:" not in e.message


@pytest.mark.parametrize(
    "cls",
    [
        ArgoCDError,
        ArgoCDUnauthorized,
        ArgoCDForbidden,
        ApplicationNotFound,
        ArgoCDServerError,
        OperationInProgress,
    ],
)
def test_exit_codes_and_messages_are_unchanged(cls: type[ArgoCDError]) -> None:
    e = cls("Argo CD said no", status=400, code=9, hint="do y")
    assert e.exit_code == ExitCode.EXTERNAL
    assert str(e) == "Argo CD said no (do y)"
    assert e.args == ("Argo CD said no",)
    assert (e.status, e.code) == (400, 9)


def test_sync_failed_keeps_its_exit_code() -> None:
    e = SyncFailed("ended Failed", operation_state={"phase": "Failed"})
    assert e.exit_code == ExitCode.EXTERNAL
    assert str(e) == "ended Failed"
    assert not isinstance(e, errors.ApiError)


def test_other_argocd_errors_are_not_generic_api_errors() -> None:
    for e in (
        error_for(500, "boom"),
        error_for(400, _grpc(9, "another operation is already in progress")),
    ):
        assert not isinstance(e, errors.ApiError)
