from __future__ import annotations

import pytest

from fracctl import errors
from fracctl.errors import ApiStatus, ExitCode


def test_root_is_not_a_library_error() -> None:
    import httpx
    from kubernetes.client.exceptions import ApiException

    assert not issubclass(errors.FracctlError, (ApiException, httpx.HTTPError))
    assert errors.FracctlError.__mro__[1] is Exception


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (errors.Refused, ExitCode.FINDING),
        (errors.UsageError, ExitCode.USAGE),
        (errors.ConfigError, ExitCode.USAGE),
        (errors.ExternalError, ExitCode.EXTERNAL),
        (errors.Unreachable, ExitCode.EXTERNAL),
        (errors.TimedOut, ExitCode.TIMEOUT),
        (errors.Unsafe, ExitCode.LOCKED),
    ],
)
def test_exit_codes(cls: type[errors.FracctlError], code: ExitCode) -> None:
    assert cls("x").exit_code == code


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (401, errors.Unauthorized),
        (403, errors.Forbidden),
        (404, errors.NotFound),
        (409, errors.Conflict),
        (422, errors.Invalid),
        (400, errors.ApiError),
        (500, errors.ServerError),
        (503, errors.ServerError),
    ],
)
def test_api_error_mapping(status: int, cls: type[errors.ApiError]) -> None:
    e = errors.api_error_for(ApiStatus(status, "Reason", "msg"))
    assert type(e) is cls
    assert e.exit_code == ExitCode.EXTERNAL
    assert "msg" in str(e)


def test_hint_is_appended() -> None:
    assert str(errors.Refused("found x", hint="do y")) == "found x (do y)"


def test_exit_code_values_match_the_design() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 5, 130]


def test_context_added_to_an_error_keeps_its_class_exit_code_and_hint() -> None:
    e = errors.TimedOut("not every node is ready after 20s", hint="check the agents")
    e.add_context("GpuFractioningConfig/default was deleted; restore it: fracctl recreate")
    assert type(e) is errors.TimedOut and e.exit_code == ExitCode.TIMEOUT
    assert e.message == (
        "not every node is ready after 20s. GpuFractioningConfig/default was deleted; "
        "restore it: fracctl recreate"
    )
    assert str(e).endswith("(check the agents)") and e.args == (e.message,)
