"""The Argo CD client, call by call and error by error, against respx."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from fracctl.adapters.argocd import (
    ArgoCD,
    ArgoCDStatus,
    OperationInProgress,
    SyncFailed,
    UnexpectedAnswer,
    error_for,
    read_token,
    server_url,
)
from fracctl.config import ArgoCDConfig
from fracctl.core.clock import following
from fracctl.errors import (
    ApiError,
    ConfigError,
    ExitCode,
    ExternalError,
    Forbidden,
    FracctlError,
    NotFound,
    ServerError,
    TimedOut,
    Unauthorized,
    Unreachable,
    UsageError,
)
from fracctl.flows.engines.argocd.sync import (
    check_operation,
    resource_result,
    sync_resource_and_wait,
    wait_operation,
)
from tests.support.helpers import FakeClock

SERVER = "https://argocd.example.org"
TOKEN = "TOKEN-d2b1f0c4-do-not-leak"
APP = "/api/v1/applications/gpu"
RESOURCE = {
    "group": "gpu-fractioning.kai.scheduler",
    "kind": "GpuFractioningConfig",
    "name": "default",
    "namespace": "",
}


def client(**kwargs: Any) -> ArgoCD:
    return ArgoCD(SERVER, TOKEN, **kwargs)


def grpc(code: int, message: str) -> dict[str, Any]:
    return {"error": message, "code": code, "message": message, "details": []}


def app_with(phase: str | None, *, operation: bool = False, **state: Any) -> dict[str, Any]:
    app: dict[str, Any] = {"metadata": {"name": "gpu"}, "status": {}}
    if phase is not None:
        app["status"]["operationState"] = {"phase": phase, **state}
    if operation:
        app["operation"] = {"sync": {}, "initiatedBy": {"username": "admin"}}
    return app


def succeeded(status: str = "Synced", message: str = "configured") -> dict[str, Any]:
    return app_with(
        "Succeeded",
        message="successfully synced (all tasks run)",
        syncResult={
            "resources": [{**RESOURCE, "version": "v1alpha1", "status": status, "message": message}]
        },
    )


def leak_free(*texts: object) -> None:
    for text in texts:
        assert TOKEN not in str(text)


# --- construction ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "plaintext", "url"),
    [
        ("argocd.example.org", False, "https://argocd.example.org"),
        ("argocd.example.org:8443", False, "https://argocd.example.org:8443"),
        ("argocd.example.org:8080", True, "http://argocd.example.org:8080"),
        ("https://argocd.example.org/argocd/", False, "https://argocd.example.org/argocd"),
        ("http://127.0.0.1:8080", False, "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080", True, "http://127.0.0.1:8080"),
    ],
)
def test_server_url_accepts_host_port_and_urls(server: str, plaintext: bool, url: str) -> None:
    assert server_url(server, plaintext=plaintext) == url


@pytest.mark.parametrize(
    ("server", "plaintext", "needle"),
    [
        ("", False, "empty"),
        ("ftp://argocd.example.org", False, "not a host"),
        ("https://argocd.example.org", True, "plaintext"),
        ("https://user:pw@argocd.example.org", False, "credentials"),
    ],
)
def test_server_url_refuses_bad_values(server: str, plaintext: bool, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        server_url(server, plaintext=plaintext)


def test_from_config_takes_server_from_config_before_env() -> None:
    env = {"ARGOCD_SERVER": "other.example.org", "ARGOCD_AUTH_TOKEN": TOKEN}
    c = ArgoCD.from_config(ArgoCDConfig(server="argocd.example.org"), env)
    assert c.url == "https://argocd.example.org"
    c.close()


def test_from_config_falls_back_to_argocd_server_env() -> None:
    env = {"ARGOCD_SERVER": "argocd.example.org:8080", "ARGOCD_AUTH_TOKEN": TOKEN}
    c = ArgoCD.from_config(ArgoCDConfig(plaintext=True), env)
    assert c.url == "http://argocd.example.org:8080"
    c.close()


def test_from_config_without_server_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ARGOCD_SERVER") as e:
        ArgoCD.from_config(ArgoCDConfig(), {"ARGOCD_AUTH_TOKEN": TOKEN})
    assert e.value.exit_code == ExitCode.USAGE


def test_token_from_env() -> None:
    assert read_token(ArgoCDConfig(), {"ARGOCD_AUTH_TOKEN": f" {TOKEN}\n"}) == TOKEN


def test_token_file_wins_over_env(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text(TOKEN + "\n")
    env = {"ARGOCD_AUTH_TOKEN": "from-env"}
    assert read_token(ArgoCDConfig(token_file=str(f)), env) == TOKEN


def test_no_token_anywhere_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ARGOCD_AUTH_TOKEN"):
        read_token(ArgoCDConfig(), {})


def test_unreadable_token_file_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match="cannot read") as e:
        read_token(ArgoCDConfig(token_file=str(missing)), {})
    assert str(missing) in str(e.value)


def test_empty_token_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text("\n")
    with pytest.raises(ConfigError, match="empty"):
        read_token(ArgoCDConfig(token_file=str(f)), {})


def test_multi_line_token_file_is_refused_without_echoing_it(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text(f"{TOKEN}\nsecond line\n")
    with pytest.raises(ConfigError, match="one line") as e:
        read_token(ArgoCDConfig(token_file=str(f)), {})
    leak_free(e.value)


def test_empty_token_is_refused() -> None:
    with pytest.raises(ConfigError):
        ArgoCD(SERVER, "")


def test_repr_has_no_token() -> None:
    c = client()
    assert "argocd.example.org" in repr(c)
    leak_free(repr(c), vars(c))
    c.close()


def test_tls_verification_is_on_unless_insecure() -> None:
    with client() as secure, client(insecure=True) as insecure:
        assert secure.insecure is False
        assert insecure.insecure is True


def test_an_injected_transport_is_used() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"metadata": {"name": "gpu"}})

    env = {"ARGOCD_SERVER": "https://argocd.example.org/argocd", "ARGOCD_AUTH_TOKEN": TOKEN}
    with ArgoCD.from_config(ArgoCDConfig(), env, transport=httpx.MockTransport(answer)) as c:
        c.get_application("gpu")
    assert str(seen[0].url) == "https://argocd.example.org/argocd/api/v1/applications/gpu"


# --- calls ----------------------------------------------------------------------------


@respx.mock
def test_get_application_sends_the_bearer_token() -> None:
    route = respx.get(f"{SERVER}{APP}").respond(200, json={"metadata": {"name": "gpu"}})
    with client() as c:
        assert c.get_application("gpu") == {"metadata": {"name": "gpu"}}
    request = route.calls.last.request
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert "refresh" not in request.url.params


@pytest.mark.parametrize("refresh", ["normal", "hard"])
@respx.mock
def test_get_application_with_refresh(refresh: str) -> None:
    route = respx.get(f"{SERVER}{APP}", params={"refresh": refresh}).respond(200, json={})
    with client() as c:
        c.get_application("gpu", refresh=refresh)
    assert route.called


def test_get_application_refuses_an_unknown_refresh() -> None:
    with client() as c, pytest.raises(UsageError, match="normal or hard"):
        c.get_application("gpu", refresh="soft")


@respx.mock
def test_namespaced_application_uses_app_namespace() -> None:
    route = respx.get(f"{SERVER}{APP}", params={"appNamespace": "team-a"}).respond(200, json={})
    with client() as c:
        c.get_application("team-a/gpu")
    assert route.called


@pytest.mark.parametrize("name", ["", "a/b/c", "/gpu", "gpu/"])
def test_bad_application_names_are_usage_errors(name: str) -> None:
    with client() as c, pytest.raises(UsageError):
        c.get_application(name)


@respx.mock
def test_managed_resources_decode_json_states() -> None:
    live = {"spec": {"nodeSelector": {"a": "1"}}}
    target = {"spec": {"nodeSelector": {"b": "1"}}}
    route = respx.get(f"{SERVER}{APP}/managed-resources").respond(
        200,
        json={
            "items": [
                {**RESOURCE, "liveState": json.dumps(live), "targetState": json.dumps(target)},
                {
                    **RESOURCE,
                    "name": "gone",
                    "liveState": "null",
                    "targetState": json.dumps(target),
                },
            ]
        },
    )
    with client() as c:
        items = c.managed_resources("gpu", kind="GpuFractioningConfig")
    assert items[0]["liveState"] == live
    assert items[0]["targetState"] == target
    assert items[1]["liveState"] is None
    assert route.calls.last.request.url.params["kind"] == "GpuFractioningConfig"


@respx.mock
def test_managed_resources_with_garbage_state_is_an_error() -> None:
    respx.get(f"{SERVER}{APP}/managed-resources").respond(
        200, json={"items": [{**RESOURCE, "liveState": "{not json"}]}
    )
    with client() as c, pytest.raises(UnexpectedAnswer, match="undecodable"):
        c.managed_resources("gpu")


@respx.mock
def test_managed_resources_with_a_non_object_state_is_an_error() -> None:
    respx.get(f"{SERVER}{APP}/managed-resources").respond(
        200, json={"items": [{**RESOURCE, "liveState": "[1, 2]"}]}
    )
    with client() as c, pytest.raises(UnexpectedAnswer, match="not an object"):
        c.managed_resources("gpu")


@respx.mock
def test_manifests_are_decoded_and_revision_passed() -> None:
    m = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    route = respx.get(f"{SERVER}{APP}/manifests", params={"revision": "abc123"}).respond(
        200, json={"manifests": [json.dumps(m)], "revision": "abc123"}
    )
    with client() as c:
        assert c.manifests("gpu", revision="abc123") == [m]
    assert route.called


@respx.mock
def test_manifests_without_revision_send_none() -> None:
    route = respx.get(f"{SERVER}{APP}/manifests").respond(200, json={})
    with client() as c:
        assert c.manifests("gpu") == []
    assert "revision" not in route.calls.last.request.url.params


@respx.mock
def test_sync_sends_the_documented_body() -> None:
    route = respx.post(f"{SERVER}{APP}/sync").respond(200, json=app_with(None, operation=True))
    with client() as c:
        c.sync(
            "gpu",
            resources=[RESOURCE],
            revision="abc123",
            prune=True,
            dry_run=True,
            sync_options=["ServerSideApply=true"],
        )
    body = json.loads(route.calls.last.request.content)
    assert body == {
        "prune": True,
        "dryRun": True,
        "revision": "abc123",
        "resources": [RESOURCE],
        "syncOptions": {"items": ["ServerSideApply=true"]},
    }


@respx.mock
def test_sync_of_the_whole_app_sends_no_resources() -> None:
    route = respx.post(f"{SERVER}{APP}/sync").respond(200, json={})
    with client() as c:
        c.sync("team-a/gpu", resources=None)
    body = json.loads(route.calls.last.request.content)
    assert body == {"prune": False, "dryRun": False, "appNamespace": "team-a"}


def test_sync_resource_needs_kind_and_name() -> None:
    with client() as c, pytest.raises(UsageError, match="kind and name"):
        c.sync("gpu", resources=[{"group": "x"}])


@respx.mock
def test_terminate_operation() -> None:
    route = respx.delete(f"{SERVER}{APP}/operation").respond(200, json={})
    with client() as c:
        assert c.terminate_operation("gpu") is True
    assert route.called


@respx.mock
def test_terminate_without_an_operation_is_false() -> None:
    respx.delete(f"{SERVER}{APP}/operation").respond(
        400, json=grpc(3, "Unable to terminate operation. No operation is in progress")
    )
    with client() as c:
        assert c.terminate_operation("gpu") is False


@respx.mock
def test_terminate_other_errors_propagate() -> None:
    respx.delete(f"{SERVER}{APP}/operation").respond(403, json=grpc(7, "permission denied"))
    with client() as c, pytest.raises(Forbidden):
        c.terminate_operation("gpu")


# --- waiting --------------------------------------------------------------------------


@respx.mock
def test_wait_operation_polls_to_the_end_with_backoff() -> None:
    respx.get(f"{SERVER}{APP}").mock(
        side_effect=[
            httpx.Response(200, json=app_with(None, operation=True)),  # not picked up yet
            httpx.Response(200, json=app_with("Running", operation=True)),
            httpx.Response(200, json=app_with("Running", operation=True)),
            httpx.Response(200, json=succeeded()),
        ]
    )
    clock = FakeClock()
    with client() as c:
        state = wait_operation(c, "gpu", timeout=60, clock=clock)
    assert state["phase"] == "Succeeded"
    assert state["syncResult"]["resources"][0]["status"] == "Synced"
    assert clock.sleeps == [0.25, 0.4, pytest.approx(0.64)]


@respx.mock
def test_a_recreate_follows_the_operation_at_short_delays() -> None:
    """The delays the recreate passes: the verdict is read at most 0.5 s after it came."""
    respx.post(f"{SERVER}{APP}/sync").respond(200, json=app_with(None, operation=True))
    respx.get(f"{SERVER}{APP}").mock(
        side_effect=[httpx.Response(200, json=app_with("Running", operation=True))] * 8
        + [httpx.Response(200, json=succeeded())]
    )
    clock = FakeClock()
    with client() as c:
        state = sync_resource_and_wait(
            c, "gpu", resource=RESOURCE, timeout=30, clock=clock, backoff=following()
        )
    assert state["phase"] == "Succeeded"
    assert clock.sleeps[:3] == [0.1, pytest.approx(0.15), pytest.approx(0.225)]
    assert len(clock.sleeps) == 8 and max(clock.sleeps) == 0.5


@respx.mock
def test_wait_operation_does_not_take_an_old_result_while_an_operation_is_pending() -> None:
    respx.get(f"{SERVER}{APP}").mock(
        side_effect=[
            httpx.Response(200, json=app_with("Succeeded", operation=True)),
            httpx.Response(200, json=app_with("Failed", message="boom")),
        ]
    )
    with client() as c:
        state = wait_operation(c, "gpu", timeout=60, clock=FakeClock())
    assert state["phase"] == "Failed"


@respx.mock
def test_wait_operation_times_out_with_the_last_phase() -> None:
    respx.get(f"{SERVER}{APP}").respond(
        200, json=app_with("Running", operation=True, message="waiting for healthy state")
    )
    clock = FakeClock()
    with client() as c, pytest.raises(TimedOut) as e:
        wait_operation(c, "gpu", timeout=10, clock=clock)
    assert "still Running after 10s" in str(e.value)
    assert "waiting for healthy state" in str(e.value)
    assert "terminate-op" in str(e.value)
    assert e.value.exit_code == ExitCode.TIMEOUT
    assert clock.t == pytest.approx(10)
    assert max(clock.sleeps) <= 5.0


@respx.mock
def test_sync_resource_and_wait_returns_the_final_state() -> None:
    sync = respx.post(f"{SERVER}{APP}/sync").respond(200, json=app_with(None, operation=True))
    respx.get(f"{SERVER}{APP}").respond(200, json=succeeded())
    notes: list[str] = []
    with client() as c:
        state = sync_resource_and_wait(
            c, "gpu", resource=RESOURCE, timeout=30, clock=FakeClock(), notify=notes.append
        )
    assert state["phase"] == "Succeeded"
    assert json.loads(sync.calls.last.request.content)["resources"] == [RESOURCE]
    assert notes == [
        "Argo CD: syncing GpuFractioningConfig.gpu-fractioning.kai.scheduler default in gpu"
    ]


@respx.mock
def test_sync_resource_and_wait_waits_out_another_operation() -> None:
    busy = httpx.Response(400, json=grpc(9, "another operation is already in progress"))
    sync = respx.post(f"{SERVER}{APP}/sync").mock(
        side_effect=[busy, busy, httpx.Response(200, json=app_with(None, operation=True))]
    )
    respx.get(f"{SERVER}{APP}").respond(200, json=succeeded())
    clock = FakeClock()
    notes: list[str] = []
    with client() as c:
        state = sync_resource_and_wait(
            c, "gpu", resource=RESOURCE, timeout=30, clock=clock, notify=notes.append
        )
    assert state["phase"] == "Succeeded"
    assert sync.call_count == 3
    assert "another operation runs on gpu" in notes[0]
    assert len(notes) == 2  # told once, then the sync


@respx.mock
def test_sync_resource_and_wait_reports_a_lasting_operation() -> None:
    respx.post(f"{SERVER}{APP}/sync").respond(
        400, json=grpc(9, "another operation is already in progress")
    )
    running = app_with("Running", operation=True, startedAt="2026-01-01T00:00:00Z")
    running["operation"]["initiatedBy"] = {"automated": True}
    respx.get(f"{SERVER}{APP}").respond(200, json=running)
    clock = FakeClock()
    with client() as c, pytest.raises(OperationInProgress) as e:
        sync_resource_and_wait(
            c, "gpu", resource=RESOURCE, timeout=30, busy_timeout=20, clock=clock
        )
    text = str(e.value)
    assert "still in progress after waiting 20s" in text
    assert "Running, started 2026-01-01T00:00:00Z, by automated sync" in text
    assert "terminate-op gpu" in text
    assert clock.t == pytest.approx(20)
    assert e.value.exit_code == ExitCode.EXTERNAL


@respx.mock
def test_lasting_operation_report_survives_a_failing_read() -> None:
    respx.post(f"{SERVER}{APP}/sync").respond(
        400, json=grpc(9, "another operation is already in progress")
    )
    respx.get(f"{SERVER}{APP}").respond(503, text="unavailable")
    with client() as c, pytest.raises(OperationInProgress, match="after waiting 5s"):
        sync_resource_and_wait(c, "gpu", resource=RESOURCE, timeout=5, clock=FakeClock())


@respx.mock
def test_sync_resource_and_wait_raises_on_a_failed_resource() -> None:
    respx.post(f"{SERVER}{APP}/sync").respond(200, json={})
    failed = app_with(
        "Failed",
        message="one or more objects failed to apply",
        syncResult={
            "resources": [
                {**RESOURCE, "status": "SyncFailed", "message": "nodeSelector is immutable"}
            ]
        },
    )
    respx.get(f"{SERVER}{APP}").respond(200, json=failed)
    with client() as c, pytest.raises(SyncFailed) as e:
        sync_resource_and_wait(c, "gpu", resource=RESOURCE, timeout=30, clock=FakeClock())
    assert "ended Failed: nodeSelector is immutable" in str(e.value)
    assert e.value.operation_state["phase"] == "Failed"


@respx.mock
def test_sync_resource_and_wait_without_check_returns_a_failed_state() -> None:
    respx.post(f"{SERVER}{APP}/sync").respond(200, json={})
    respx.get(f"{SERVER}{APP}").respond(200, json=app_with("Error", message="rpc error"))
    with client() as c:
        state = sync_resource_and_wait(
            c, "gpu", resource=RESOURCE, timeout=30, clock=FakeClock(), check=False
        )
    assert state["phase"] == "Error"


@respx.mock
def test_sync_resource_and_wait_does_not_retry_other_errors() -> None:
    sync = respx.post(f"{SERVER}{APP}/sync").respond(
        400, json=grpc(9, "application is being deleted")
    )
    with client() as c, pytest.raises(ApiError, match="being deleted") as e:
        sync_resource_and_wait(c, "gpu", resource=RESOURCE, timeout=30, clock=FakeClock())
    assert not isinstance(e.value, OperationInProgress)
    assert sync.call_count == 1


def test_resource_result_and_check_operation() -> None:
    state = succeeded()["status"]["operationState"]
    assert resource_result(state, RESOURCE)["status"] == "Synced"  # type: ignore[index]
    assert resource_result(state, {**RESOURCE, "name": "other"}) is None
    check_operation("gpu", state, RESOURCE)
    check_operation("gpu", state, {**RESOURCE, "name": "skipped"})  # absent is not an error
    bad = succeeded(status="SyncFailed", message="denied")["status"]["operationState"]
    with pytest.raises(SyncFailed, match="ended Succeeded: denied"):
        check_operation("gpu", bad, RESOURCE)


# --- error mapping --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "cls", "needles"),
    [
        (
            401,
            grpc(16, "invalid session: token has expired"),
            Unauthorized,
            ["expired", "ARGOCD_AUTH_TOKEN"],
        ),
        (
            403,
            grpc(7, "permission denied: applications, sync, default/gpu"),
            Forbidden,
            ["RBAC", "applications, sync"],
        ),
        (
            404,
            grpc(5, 'applications.argoproj.io "gpu" not found'),
            NotFound,
            ["not found", "argocd.app"],
        ),
        (
            500,
            grpc(2, "rpc error: repo-server down"),
            ServerError,
            ["server error (500)", "repo-server"],
        ),
        (503, None, ServerError, ["server error (503)"]),
        (
            400,
            grpc(9, "another operation is already in progress"),
            OperationInProgress,
            ["already in progress"],
        ),
        (
            400,
            grpc(3, "invalid revision"),
            ApiError,
            ["refused application gpu (400)", "invalid revision"],
        ),
    ],
)
@respx.mock
def test_error_mapping(
    status: int, body: dict[str, Any] | None, cls: type[ApiError], needles: list[str]
) -> None:
    if body is None:
        respx.get(f"{SERVER}{APP}").respond(status, text="<html>Service Unavailable</html>")
    else:
        respx.get(f"{SERVER}{APP}").respond(status, json=body)
    with client() as c, pytest.raises(cls) as e:
        c.get_application("gpu")
    assert type(e.value) is cls
    assert isinstance(e.value.status, ArgoCDStatus)
    assert e.value.status.code == status
    assert e.value.status.server == SERVER
    assert e.value.exit_code == ExitCode.EXTERNAL
    for needle in needles:
        assert needle in str(e.value)


def test_error_for_is_a_pure_mapping_on_codes_too() -> None:
    assert isinstance(error_for(400, json.dumps(grpc(16, "x"))), Unauthorized)
    assert isinstance(error_for(400, json.dumps(grpc(7, "x"))), Forbidden)
    assert isinstance(error_for(400, json.dumps(grpc(5, "x"))), NotFound)
    assert error_for(418, "").message.endswith("no message")
    bool_code = error_for(400, json.dumps({"code": True, "error": "e"})).status
    assert isinstance(bool_code, ArgoCDStatus) and bool_code.grpc_code is None


def test_error_bodies_are_truncated() -> None:
    e = error_for(500, "x" * 5000, app="gpu")
    assert len(str(e)) < 600
    assert "…" in str(e)


@respx.mock
def test_non_json_answer_is_reported() -> None:
    respx.get(f"{SERVER}{APP}").respond(200, text="<!doctype html><title>Argo CD</title>")
    with client() as c, pytest.raises(UnexpectedAnswer, match="not JSON") as e:
        c.get_application("gpu")
    assert "API server" in str(e.value)


@respx.mock
def test_empty_answer_is_an_empty_dict() -> None:
    respx.delete(f"{SERVER}{APP}/operation").respond(200)
    with client() as c:
        assert c.request("DELETE", f"{APP}/operation") == {}


@pytest.mark.parametrize(
    ("exc", "needle"),
    [
        (httpx.ConnectError("[Errno 111] Connection refused"), "Connection refused"),
        (
            httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
            "insecure",
        ),
        (httpx.ConnectError("[SSL: WRONG_VERSION_NUMBER] wrong version number"), "plaintext"),
        (httpx.ReadTimeout("timed out"), "did not answer"),
    ],
)
@respx.mock
def test_transport_errors_are_unreachable(exc: Exception, needle: str) -> None:
    respx.get(f"{SERVER}{APP}").mock(side_effect=exc)
    with client() as c, pytest.raises(Unreachable) as e:
        c.get_application("gpu")
    assert needle in str(e.value)
    assert e.value.exit_code == ExitCode.EXTERNAL


def test_errors_are_fracctl_errors_not_library_errors() -> None:
    for cls in (
        ApiError,
        Unauthorized,
        Forbidden,
        NotFound,
        ServerError,
        OperationInProgress,
        UnexpectedAnswer,
        SyncFailed,
    ):
        assert issubclass(cls, ExternalError)
        assert issubclass(cls, FracctlError)
        assert not issubclass(cls, httpx.HTTPError)


# --- the token never leaks ------------------------------------------------------------


@respx.mock
def test_the_token_never_appears_in_errors(capsys: pytest.CaptureFixture[str]) -> None:
    echo = grpc(16, f"invalid token {TOKEN}")
    respx.get(f"{SERVER}{APP}").respond(401, json=echo)
    respx.get(f"{SERVER}{APP}/managed-resources").respond(500, text=f"panic: {TOKEN}")
    respx.get(f"{SERVER}{APP}/manifests").mock(side_effect=httpx.ConnectError(f"bad {TOKEN}"))
    respx.post(f"{SERVER}{APP}/sync").respond(
        400, json=grpc(9, f"another operation is already in progress {TOKEN}")
    )
    respx.delete(f"{SERVER}{APP}/operation").respond(403, json=grpc(7, TOKEN))
    seen: list[BaseException] = []
    with client() as c:
        calls = [
            lambda: c.get_application("gpu"),
            lambda: c.managed_resources("gpu"),
            lambda: c.manifests("gpu"),
            lambda: c.sync("gpu", resources=[RESOURCE]),
            lambda: c.terminate_operation("gpu"),
            lambda: sync_resource_and_wait(
                c, "gpu", resource=RESOURCE, timeout=1, clock=FakeClock(), notify=print
            ),
        ]
        for call in calls:
            with pytest.raises(FracctlError) as e:
                call()
            seen.append(e.value)
        leak_free(repr(c))
    for err in seen:
        leak_free(str(err), repr(err), err.args, getattr(err, "hint", ""))
        assert "***" in str(err) or isinstance(err, OperationInProgress) or "panic" in str(err)
    out = capsys.readouterr()
    leak_free(out.out, out.err)


@respx.mock
def test_the_token_never_appears_in_a_timeout() -> None:
    respx.get(f"{SERVER}{APP}").respond(
        200, json=app_with("Running", operation=True, message=f"using {TOKEN}")
    )
    with client() as c, pytest.raises(TimedOut) as e:
        wait_operation(c, "gpu", timeout=1, clock=FakeClock())
    leak_free(str(e.value))


# --- the token is checked at load, from every source ------------------------------------

BAD_TOKENS = {
    "line-break": f"{TOKEN}\nsecond-line",
    "carriage-return": f"{TOKEN}\rx",
    "space": f"{TOKEN} more",
    "tab": f"{TOKEN}\tmore",
    "control-character": f"{TOKEN}\x1bmore",
    "non-ascii": f"{TOKEN}é",
    "quote": f'{TOKEN}"',
    "equals-inside": f"{TOKEN}=x",
}


def refused_without_echo(e: BaseException) -> None:
    text = str(e)
    assert isinstance(e, ConfigError) and e.exit_code == ExitCode.USAGE
    assert "\n" not in text and "\r" not in text
    assert "one line" in text and "not shown" in text
    for i in range(len(TOKEN) - 8):
        assert TOKEN[i : i + 8] not in text, text


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
def test_a_bad_token_from_the_environment_is_refused_unquoted(kind: str) -> None:
    with pytest.raises(ConfigError) as e:
        read_token(ArgoCDConfig(), {"ARGOCD_AUTH_TOKEN": BAD_TOKENS[kind]})
    refused_without_echo(e.value)
    assert "ARGOCD_AUTH_TOKEN" in str(e.value)


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
def test_a_bad_token_from_a_file_is_refused_unquoted(kind: str, tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text(BAD_TOKENS[kind] + "\n")
    with pytest.raises(ConfigError) as e:
        read_token(ArgoCDConfig(token_file=str(f)), {})
    refused_without_echo(e.value)
    assert str(f) in str(e.value)


@pytest.mark.parametrize("kind", list(BAD_TOKENS))
def test_a_bad_token_from_anywhere_else_is_refused_unquoted(kind: str) -> None:
    with pytest.raises(ConfigError) as e:
        ArgoCD(SERVER, BAD_TOKENS[kind])
    refused_without_echo(e.value)


@pytest.mark.parametrize("source", ["env", "token_file"])
def test_cli_refuses_a_token_with_a_line_break_in_one_line(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.helpers import run_cli

    bad = BAD_TOKENS["line-break"]
    monkeypatch.setenv("ARGOCD_SERVER", SERVER)
    if source == "env":
        monkeypatch.setenv("ARGOCD_AUTH_TOKEN", bad)
    else:
        f = tmp_path / "token"
        f.write_text(bad)
        monkeypatch.setenv("FRACCTL_ARGOCD_TOKEN_FILE", str(f))
    for debug in ((), ("--debug",)):
        with respx.mock:  # nothing may be sent
            r = run_cli(*debug, "render", "--from-argocd", "gpu")
        assert r.exit_code == ExitCode.USAGE, r.output
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error: ")
        assert "one line" in r.stderr
        leak_free(r.output, bad.split("\n")[1])
        for i in range(len(TOKEN) - 8):
            assert TOKEN[i : i + 8] not in r.output


def test_a_token_file_with_a_trailing_newline_is_fine(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text(f"\n{TOKEN}\r\n")
    assert read_token(ArgoCDConfig(token_file=str(f)), {}) == TOKEN


# --- a server that echoes the token ---------------------------------------------------


def _echo_forms() -> dict[str, Any]:
    from tests.redact.test_redact import FORMS

    return FORMS


@pytest.mark.parametrize("form", list(_echo_forms()))
@respx.mock
def test_a_token_echoed_in_any_form_stays_out_of_errors(form: str) -> None:
    from tests.redact.test_redact import leaked, needles

    echo = _echo_forms()[form](TOKEN)
    respx.get(f"{SERVER}{APP}").respond(401, json=grpc(16, f"invalid session {echo}"))
    respx.post(f"{SERVER}{APP}/sync").respond(500, text=f"proxy error: {echo}")
    with client() as c:
        for call in (lambda: c.get_application("gpu"), lambda: c.sync("gpu", resources=None)):
            with pytest.raises(ApiError) as e:
                call()
            text = f"{e.value} {e.value.args}"
            assert "***" in text, text
            assert not leaked(text, *needles(form, TOKEN)), text


@respx.mock
def test_a_token_echoed_past_the_truncation_point_is_masked_not_cut() -> None:
    # The body is truncated for the message; masking first, or half a token would remain.
    body = "x" * 280 + TOKEN
    respx.get(f"{SERVER}{APP}").respond(500, text=body)
    with client() as c, pytest.raises(ServerError) as e:
        c.get_application("gpu")
    assert "***" in str(e.value)
    leak_free(str(e.value), TOKEN[:8])


@respx.mock
def test_a_transport_error_quoting_the_header_is_masked() -> None:
    header = ("Bearer " + TOKEN).encode()
    respx.get(f"{SERVER}{APP}").mock(
        side_effect=httpx.LocalProtocolError(f"Illegal header value {header!r}")
    )
    with client() as c, pytest.raises(Unreachable) as e:
        c.get_application("gpu")
    assert "Illegal header value b'Bearer ***'" in str(e.value)


# --- answers of the wrong shape -------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "part"),
    [
        ([], "the answer is a list, expected an object"),
        ("Succeeded", "the answer is a string"),
        (42, "the answer is a number"),
        ({"status": "x"}, "`status` is a string, expected an object"),
        ({"status": {"operationState": []}}, "`status.operationState` is a list"),
        ({"status": {"operationState": {"phase": ["Running"]}}}, "`status.operationState.phase`"),
        ({"status": {"operationState": {"phase": True}}}, "is a boolean, expected a string"),
        (
            {
                "status": {
                    "operationState": {"phase": "Succeeded", "syncResult": {"resources": [1]}}
                }
            },
            "`status.operationState.syncResult.resources[0]` is a number",
        ),
        ({"status": {"resources": [{"kind": 5}]}}, "`status.resources[0].kind` is a number"),
        ({"status": {"resources": [{}, {"health": "x"}]}}, "`status.resources[1].health`"),
        ({"status": {"sync": "Synced"}}, "`status.sync` is a string"),
        ({"operation": "sync"}, "`operation` is a string"),
        ({"spec": {"destination": []}}, "`spec.destination` is a list"),
    ],
)
@respx.mock
def test_a_misshapen_application_is_a_clear_error(answer: Any, part: str) -> None:
    respx.get(f"{SERVER}{APP}").respond(200, json=answer)
    calls = [
        lambda c: c.get_application("gpu"),
        lambda c: wait_operation(c, "gpu", timeout=1, clock=FakeClock()),
    ]
    with client() as c:
        for call in calls:
            with pytest.raises(UnexpectedAnswer) as e:
                call(c)
            assert "unexpected answer to GET application gpu" in str(e.value)
            assert part in str(e.value)
            assert e.value.exit_code == ExitCode.EXTERNAL


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"status": None},
        {"status": {"operationState": None, "resources": None}},
        {"status": {"operationState": {"phase": None, "syncResult": None}}},
    ],
)
@respx.mock
def test_absent_and_null_parts_are_fine(answer: Any) -> None:
    respx.get(f"{SERVER}{APP}").respond(200, json=answer)
    with client() as c:
        assert c.get_application("gpu") == answer


@pytest.mark.parametrize(
    ("sub", "answer", "part"),
    [
        ("managed-resources", [], "the answer is a list"),
        ("managed-resources", {"items": {}}, "`items` is an object, expected a list"),
        ("managed-resources", {"items": ["x"]}, "`items[0]` is a string"),
        ("managed-resources", {"items": [{"name": 3}]}, "`items[0].name` is a number"),
        ("manifests", "x", "the answer is a string"),
        ("manifests", {"manifests": "abc"}, "`manifests` is a string"),
        ("manifests", {"manifests": [5]}, "is a number, expected a string or an object"),
    ],
)
@respx.mock
def test_misshapen_resources_and_manifests_are_clear_errors(
    sub: str, answer: Any, part: str
) -> None:
    respx.get(f"{SERVER}{APP}/{sub}").respond(200, json=answer)
    with client() as c, pytest.raises(UnexpectedAnswer) as e:
        c.managed_resources("gpu") if sub == "managed-resources" else c.manifests("gpu")
    assert part in str(e.value)


@respx.mock
def test_a_misshapen_sync_answer_is_a_clear_error() -> None:
    respx.post(f"{SERVER}{APP}/sync").respond(200, json=["queued"])
    with (
        client() as c,
        pytest.raises(UnexpectedAnswer, match="POST sync of gpu: the answer is a list"),
    ):
        sync_resource_and_wait(c, "gpu", resource=RESOURCE, timeout=1, clock=FakeClock())


@pytest.mark.parametrize(
    ("args", "route", "answer"),
    [
        (("drift", "--app", "gpu"), APP, {"status": "x"}),
        (("render", "--from-argocd", "gpu"), f"{APP}/manifests", []),
    ],
)
def test_cli_reports_a_misshapen_answer_the_same_under_debug(
    args: tuple[str, ...], route: str, answer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.helpers import run_cli

    monkeypatch.setenv("ARGOCD_SERVER", SERVER)
    monkeypatch.setenv("ARGOCD_AUTH_TOKEN", TOKEN)
    seen = []
    for debug in ((), ("--debug",)):
        with respx.mock:
            respx.get(f"{SERVER}{route}").respond(200, json=answer)
            r = run_cli(*debug, *args)
        assert r.exit_code == ExitCode.EXTERNAL, r.output
        assert r.stderr.startswith("Error: Argo CD sent an unexpected answer"), r.stderr
        assert "Traceback" not in r.output and "AttributeError" not in r.output
        seen.append(r.stderr)
    assert seen[0] == seen[1]
