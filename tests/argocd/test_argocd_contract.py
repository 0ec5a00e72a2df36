"""The contract between tests/support/argocd_standin.py and the real Argo CD v3.2.11.

Every assertion the stand-in's answers rely on runs against both servers, so the
stand-in cannot drift from reality unnoticed. Where the real server cannot produce a
stand-in quirk, the test says so and stays stand-in only:

* ``swallow-rejection`` (an apply the API server rejected, reported ``Synced``): the
  real server reports the 422 as ``SyncFailed`` with the API server's message under
  the default, ``ServerSideApply=true`` and ``Replace=true`` options (see
  tests/argocd/test_argocd_e2e.py), so this quirk is stand-in only.
* ``stale-manifests`` (a stale repo-server cache): not reproducible on demand.
* ``skip`` ("Succeeded" and "Synced" with nothing applied): the real server does this
  with ``ignoreDifferences`` on the field and ``RespectIgnoreDifferences=true``; the
  last test holds both to the same observable outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from fracctl.adapters.argocd import ArgoCD, ArgoCDStatus
from fracctl.errors import ApiError, Forbidden, Unauthorized
from fracctl.flows.engines.argocd.sync import (
    resource_result,
    sync_resource_and_wait,
    wait_operation,
)
from tests.support.argocd_real import TARGET, RealArgoCD
from tests.support.argocd_standin import ArgoCDStandIn
from tests.support.helpers import Cluster
from tests.support.recreate_fixtures import OLD, Incident, make_incident

CEL = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
APP = "contract"
IGNORE_SELECTOR = [
    {
        "group": TARGET["group"],
        "kind": TARGET["kind"],
        "name": TARGET["name"],
        "jsonPointers": ["/spec/nodeSelector"],
    }
]


@dataclass
class Server:
    """One Argo CD (real or stand-in) serving the application ``app``."""

    kind: str
    address: str
    app: str
    token: str
    viewer: Callable[[], ArgoCD]

    def client(self, token: str | None = None) -> ArgoCD:
        return ArgoCD(self.address, token or self.token, plaintext=True)


Factory = Callable[..., Any]


@pytest.fixture(params=["standin", pytest.param("real", marks=pytest.mark.e2e)])
def server_for(
    request: pytest.FixtureRequest, cluster: Cluster, tmp_path: Path
) -> Iterator[Callable[..., Any]]:
    """``server_for(incident, quirk=None, ignore_selector=False)``: a context manager."""
    kind = str(request.param)
    stack = ExitStack()

    @contextmanager
    def make(
        incident: Incident, *, quirk: str | None = None, ignore_selector: bool = False
    ) -> Iterator[Server]:
        if kind == "standin":
            desired = incident.desired()
            s = stack.enter_context(
                ArgoCDStandIn(
                    kubeconfig=cluster.kubeconfig, manifests=desired, quirk=quirk, app_name=APP
                )
            )
            ro = stack.enter_context(
                ArgoCDStandIn(
                    kubeconfig=cluster.kubeconfig,
                    manifests=desired,
                    app_name=APP,
                    denied={"sync"},
                )
            )
            yield Server(
                kind,
                s.address,
                APP,
                s.token,
                lambda: ArgoCD(ro.address, ro.token, plaintext=True),
            )
            return
        real: RealArgoCD = request.getfixturevalue("real_argocd")
        if quirk is not None:
            pytest.fail(f"quirk {quirk!r} has no real counterpart; keep that test stand-in only")
        with real.app(
            APP,
            repo=incident.root / "gitops",
            sync_options=["RespectIgnoreDifferences=true"] if ignore_selector else None,
            ignore_differences=IGNORE_SELECTOR if ignore_selector else None,
        ):
            yield Server(kind, real.local.address, APP, real.token(), lambda: real.client("viewer"))

    try:
        yield make
    finally:
        stack.close()


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


def sync_target(server: Server, client: ArgoCD | None = None) -> dict[str, Any]:
    with client or server.client() as c:
        return sync_resource_and_wait(c, server.app, resource=TARGET, timeout=90, check=False)


# --- authentication and authorization -----------------------------------------------------


def _codes(e: ApiError) -> tuple[int, int | None]:
    """The HTTP status and the gRPC code of an Argo CD error answer."""
    assert isinstance(e.status, ArgoCDStatus)
    return e.status.code, e.status.grpc_code


def test_no_token_is_401_unauthenticated(server_for: Factory, incident: Incident) -> None:
    with server_for(incident) as server:
        resp = httpx.get(f"http://{server.address}/api/v1/applications/{server.app}")
    assert resp.status_code == 401
    assert resp.json()["code"] == 16


def test_bad_token_is_401(server_for: Factory, incident: Incident) -> None:
    with server_for(incident) as server:
        with server.client("not-a-token") as c, pytest.raises(Unauthorized) as e:
            c.get_application(server.app)
    assert _codes(e.value) == (401, 16)


def test_missing_app_is_403_permission_denied_not_404(
    server_for: Factory, incident: Incident
) -> None:
    """Argo CD does not reveal whether an application exists."""
    with server_for(incident) as server:
        with server.client() as c, pytest.raises(Forbidden) as e:
            c.get_application("no-such-app")
    assert _codes(e.value) == (403, 7)
    assert "permission denied" in e.value.message


def test_read_only_account_gets_but_cannot_sync(server_for: Factory, incident: Incident) -> None:
    with server_for(incident) as server:
        with server.viewer() as c:
            assert c.get_application(server.app)["metadata"]["name"] == server.app
            with pytest.raises(Forbidden) as e:
                c.sync(server.app, resources=[TARGET])
    assert _codes(e.value) == (403, 7)
    assert "permission denied" in e.value.message
    assert "applications, sync" in e.value.message


def test_can_i_and_the_managed_resources_the_recreate_proof_reads(
    server_for: Factory, incident: Incident
) -> None:
    """What ``recreate`` proves before a delete: the app lists the target, can-i says yes."""
    with server_for(incident) as server:
        with server.client() as c:
            app = c.get_application(server.app)
            project = app["spec"]["project"]
            assert c.can_i("applications", "sync", f"{project}/{server.app}")
            managed = app["status"].get("resources") or []
        with server.viewer() as v:
            assert not v.can_i("applications", "sync", f"{project}/{server.app}")
    assert any(
        r.get("group") == TARGET["group"]
        and r.get("kind") == TARGET["kind"]
        and r.get("name") == TARGET["name"]
        for r in managed
    ), managed


def test_post_and_delete_need_a_json_content_type(server_for: Factory, incident: Incident) -> None:
    """Even without a body: fracctl's client always sends it on POST and DELETE."""
    with server_for(incident) as server:
        auth = {"Authorization": f"Bearer {server.token}"}
        base = f"http://{server.address}/api/v1/applications/{server.app}"
        post = httpx.post(f"{base}/sync", content=b"{}", headers=auth)
        delete = httpx.delete(f"{base}/operation", headers=auth)
    for resp in (post, delete):
        assert resp.status_code == 415
        assert resp.text.strip() == "Invalid content type"


# --- the shapes fracctl's client and flows read ---------------------------------------------


def test_rejected_selector_sync_fails_with_the_api_servers_message(
    server_for: Factory, incident: Incident
) -> None:
    """No quirk: the 422 is SyncFailed, the operation Failed, the live object unchanged.

    The operation's end is seen through ``wait_operation``, which relies on Argo CD
    clearing ``operation`` together with setting the terminal phase.
    """
    uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    with server_for(incident) as server:
        state = sync_target(server)
        with server.client() as c:
            app = c.get_application(server.app)
    assert state["phase"] == "Failed"
    assert CEL in state["message"]
    (res,) = [r for r in state["syncResult"]["resources"] if r["kind"] == TARGET["kind"]]
    assert res["status"] == "SyncFailed"
    assert CEL in res["message"]
    # A cluster-scoped object: the real server reports the app's destination namespace
    # here ("default"), the stand-in none; fracctl finds the entry either way.
    assert resource_result(state, TARGET) == res
    assert {"group", "version", "kind", "name", "namespace", "status", "message"} <= set(res)
    assert "operation" not in app
    assert app["status"]["operationState"]["phase"] == "Failed"
    live = incident.cluster.live_target()
    assert live is not None and live["metadata"]["uid"] == uid
    assert live["spec"]["nodeSelector"] == OLD


def test_managed_resources_carry_states_as_json_strings(
    server_for: Factory, incident: Incident
) -> None:
    with server_for(incident) as server:
        resp = httpx.get(
            f"http://{server.address}/api/v1/applications/{server.app}/managed-resources",
            headers={"Authorization": f"Bearer {server.token}"},
        )
        with server.client() as c:
            # A real controller whose watch had not yet seen the live object at its first
            # comparison reports its liveState as null until the next one: refresh.
            deadline = time.monotonic() + 60
            while True:
                decoded = c.managed_resources(server.app, kind=TARGET["kind"])
                if decoded and decoded[0].get("liveState") or time.monotonic() > deadline:
                    break
                c.get_application(server.app, refresh="normal")
                time.sleep(0.5)
            manifests = c.manifests(server.app)
    assert resp.status_code == 200
    item = next(i for i in resp.json()["items"] if i["kind"] == TARGET["kind"])
    assert isinstance(item["liveState"], str) and isinstance(item["targetState"], str)
    (res,) = decoded
    assert res["liveState"]["spec"]["nodeSelector"] == OLD
    assert res["targetState"]["spec"]["nodeSelector"] != OLD
    assert [m["kind"] for m in manifests] == [TARGET["kind"]]


# --- "Succeeded while unapplied" ------------------------------------------------------------


def test_succeeded_and_synced_while_the_field_is_unapplied(
    server_for: Factory, incident: Incident, request: pytest.FixtureRequest
) -> None:
    """The stand-in's ``skip`` quirk; the real server through an ignored difference."""
    standin = request.node.callspec.params["server_for"] == "standin"
    with server_for(incident, quirk="skip" if standin else None, ignore_selector=True) as server:
        state = sync_target(server)
        with server.client() as c:
            app = c.get_application(server.app, refresh="hard")
    assert state["phase"] == "Succeeded"
    (res,) = [r for r in state["syncResult"]["resources"] if r["kind"] == TARGET["kind"]]
    assert res["status"] == "Synced"
    assert app["status"]["sync"]["status"] == "Synced"
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == OLD


@pytest.mark.parametrize("server_for", ["standin"], indirect=True)
def test_swallowed_rejection_is_stand_in_only(server_for: Factory, incident: Incident) -> None:
    """The real v3.2.11 reports a rejected apply as SyncFailed (the test above); only the
    stand-in can say "Synced" for it, to exercise fracctl's distrust of the sync status.
    """
    with server_for(incident, quirk="swallow-rejection") as server:
        state = sync_target(server)
    assert state["phase"] == "Succeeded"
    assert incident.cluster.live_target()["spec"]["nodeSelector"] == OLD  # type: ignore[index]


# --- the recreate's rehearsal -------------------------------------------------------------


def test_sync_windows_with_none_assigned_allow_a_manual_sync(
    server_for: Factory, incident: Incident
) -> None:
    with server_for(incident) as server, server.client() as c:
        windows = c.sync_windows(server.app)
    assert windows.get("canSync") is True, windows
    assert not windows.get("activeWindows"), windows


def test_a_dry_run_sync_of_the_live_object_is_synced_configured_and_changes_nothing(
    server_for: Factory, incident: Incident
) -> None:
    """kubectl's client-side dry run: the immutable change is not sent to the API server."""
    before = incident.cluster.live_target()
    assert before is not None
    with server_for(incident) as server, server.client() as c:
        c.sync(server.app, resources=[TARGET], dry_run=True)
        state = wait_operation(c, server.app, timeout=90)
    result = resource_result(state, TARGET)
    assert state["phase"] == "Succeeded", state
    assert state["operation"]["sync"]["dryRun"] is True, state
    assert result is not None and result["status"] == "Synced", state
    assert "configured (dry run)" in result["message"], result
    after = incident.cluster.live_target()
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["spec"]["nodeSelector"] == OLD
