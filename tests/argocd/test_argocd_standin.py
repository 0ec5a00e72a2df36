"""The Argo CD client against the Argo CD stand-in, which applies to the real API server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fracctl.adapters.argocd import ArgoCD, ArgoCDStatus, OperationInProgress, SyncFailed
from fracctl.config import ArgoCDConfig
from fracctl.errors import Forbidden, ServerError, Unauthorized, Unreachable
from fracctl.flows.engines.argocd.sync import (
    resource_result,
    sync_resource_and_wait,
    wait_operation,
)
from fracctl.sandbox.controlplane import ControlPlane
from tests.support.argocd_standin import TRACKING_ANNOTATION, ArgoCDStandIn
from tests.support.helpers import Cluster, FakeClock

OLD = {"example.org/gpu-class": "rtx-pro-6000"}
NEW = {"example.org/gpu-fractions": "enabled"}
TOKEN = "standin-TOKEN-7f3e9a-never-print"


def manifest(cluster: Cluster, selector: dict[str, str]) -> dict[str, Any]:
    t = cluster.config.target
    return {
        "apiVersion": t.api_version,
        "kind": t.kind,
        "metadata": {"name": t.name},
        "spec": {"nodeSelector": selector},
    }


def target_resource(cluster: Cluster) -> dict[str, str]:
    t = cluster.config.target
    return {"group": t.group, "kind": t.kind, "name": t.name, "namespace": ""}


def selector(cluster: Cluster) -> dict[str, str] | None:
    live = cluster.live_target()
    return None if live is None else live["spec"]["nodeSelector"]


@pytest.fixture
def standin(cluster: Cluster) -> Iterator[ArgoCDStandIn]:
    with ArgoCDStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], token=TOKEN
    ) as s:
        yield s


def connect(s: ArgoCDStandIn, **kwargs: Any) -> ArgoCD:
    return ArgoCD.from_config(
        ArgoCDConfig(server=s.address, plaintext=True), {"ARGOCD_AUTH_TOKEN": s.token}, **kwargs
    )


def test_sync_applies_to_the_api_server(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    notes: list[str] = []
    with connect(standin) as argocd:
        state = sync_resource_and_wait(
            argocd,
            standin.app_name,
            resource=target_resource(cluster),
            timeout=30,
            notify=notes.append,
        )
        app = argocd.get_application(standin.app_name)
    assert state["phase"] == "Succeeded"
    result = resource_result(state, target_resource(cluster))
    assert result is not None
    assert result["status"] == "Synced"
    assert "serverside-applied" in result["message"]
    live = cluster.live_target()
    assert live is not None
    assert live["spec"]["nodeSelector"] == NEW
    assert TRACKING_ANNOTATION in live["metadata"]["annotations"]
    assert app["status"]["sync"]["status"] == "Synced"
    assert "operation" not in app
    assert standin.sync_requests[0]["resources"] == [target_resource(cluster)]
    assert notes


def test_immutable_change_fails_honestly(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    cluster.target(OLD)
    with connect(standin) as argocd, pytest.raises(SyncFailed) as e:
        sync_resource_and_wait(
            argocd, standin.app_name, resource=target_resource(cluster), timeout=30
        )
    assert "nodeSelector is immutable" in str(e.value)
    assert e.value.operation_state["phase"] == "Failed"
    assert "one or more objects failed to apply" in e.value.operation_state["message"]
    assert selector(cluster) == OLD


def test_quirk_says_succeeded_while_the_live_object_keeps_the_old_value(
    cluster: Cluster,
) -> None:
    cluster.target(OLD)
    with (
        ArgoCDStandIn(
            kubeconfig=cluster.kubeconfig,
            manifests=[manifest(cluster, NEW)],
            quirk="swallow-rejection",
        ) as s,
        connect(s) as argocd,
    ):
        state = sync_resource_and_wait(
            argocd, s.app_name, resource=target_resource(cluster), timeout=30
        )
        app = argocd.get_application(s.app_name, refresh="hard")
    assert state["phase"] == "Succeeded"
    assert resource_result(state, target_resource(cluster))["status"] == "Synced"  # type: ignore[index]
    assert app["status"]["sync"]["status"] == "Synced"
    assert selector(cluster) == OLD  # what Argo CD said is not what the cluster has


def test_quirk_skip_reports_synced_without_applying(cluster: Cluster) -> None:
    with (
        ArgoCDStandIn(
            kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], quirk="skip"
        ) as s,
        connect(s) as argocd,
    ):
        state = sync_resource_and_wait(
            argocd, s.app_name, resource=target_resource(cluster), timeout=30
        )
    assert state["phase"] == "Succeeded"
    assert resource_result(state, target_resource(cluster))["status"] == "Synced"  # type: ignore[index]
    assert cluster.live_target() is None


def test_quirk_stale_manifests_recreates_the_old_object(cluster: Cluster) -> None:
    with (
        ArgoCDStandIn(
            kubeconfig=cluster.kubeconfig,
            manifests=[manifest(cluster, OLD)],
            quirk="stale-manifests",
            quirk_syncs=1,
        ) as s,
        connect(s) as argocd,
    ):
        new_revision = s.set_manifests([manifest(cluster, NEW)])
        first = sync_resource_and_wait(
            argocd, s.app_name, resource=target_resource(cluster), timeout=30
        )
        assert first["phase"] == "Succeeded"
        assert first["syncResult"]["revision"] == new_revision
        assert selector(cluster) == OLD
        cluster.wipe_target()
        second = sync_resource_and_wait(
            argocd, s.app_name, resource=target_resource(cluster), timeout=30
        )
    assert second["phase"] == "Succeeded"
    assert selector(cluster) == NEW  # the quirk was limited to one sync


def test_another_operation_is_waited_out(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    standin.begin_foreign_operation(release_after_rejections=2)
    notes: list[str] = []
    with connect(standin) as argocd:
        state = sync_resource_and_wait(
            argocd,
            standin.app_name,
            resource=target_resource(cluster),
            timeout=30,
            clock=FakeClock(),
            notify=notes.append,
        )
    assert standin.busy_rejections == 2
    assert state["phase"] == "Succeeded"
    assert state["operation"]["initiatedBy"] == {"username": "admin"}
    assert "another operation runs" in notes[0]
    assert selector(cluster) == NEW


def test_another_operation_that_lasts_is_reported(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    standin.begin_foreign_operation()
    clock = FakeClock()
    with connect(standin) as argocd, pytest.raises(OperationInProgress) as e:
        sync_resource_and_wait(
            argocd,
            standin.app_name,
            resource=target_resource(cluster),
            timeout=30,
            busy_timeout=10,
            clock=clock,
        )
    assert "still in progress after waiting 10s" in str(e.value)
    assert "by automated sync" in str(e.value)
    assert isinstance(e.value.status, ArgoCDStatus)
    assert e.value.status.grpc_code == 9
    assert e.value.status.code == 400
    assert standin.busy_rejections >= 2
    assert cluster.live_target() is None
    standin.end_foreign_operation()


def test_terminate_a_running_sync(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    standin.gate.clear()  # hold the sync before it applies anything
    with connect(standin) as argocd:
        argocd.sync(standin.app_name, resources=[target_resource(cluster)])
        assert argocd.terminate_operation(standin.app_name) is True
        standin.gate.set()
        state = wait_operation(argocd, standin.app_name, timeout=30)
        assert argocd.terminate_operation(standin.app_name) is False
    assert state["phase"] == "Failed"
    assert state["message"] == "Operation terminated"
    assert cluster.live_target() is None


def test_a_sync_runs_in_the_background(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    standin.gate.clear()  # the controller picks the operation up, then waits here
    with connect(standin) as argocd:
        accepted = argocd.sync(standin.app_name, resources=[target_resource(cluster)])
        assert "operation" in accepted
        assert "operationState" not in accepted["status"]  # cleared when the sync is set
        for _ in range(200):  # bounded: the worker starts within a few polls
            app = argocd.get_application(standin.app_name)
            if "operationState" in app["status"]:
                break
            time.sleep(0.02)
        assert app["status"]["operationState"]["phase"] == "Running"
        assert "operation" in app
        standin.gate.set()
        state = wait_operation(argocd, standin.app_name, timeout=30)
    assert state["phase"] == "Succeeded"
    assert selector(cluster) == NEW


def test_terminate_a_foreign_operation(standin: ArgoCDStandIn) -> None:
    standin.begin_foreign_operation()
    with connect(standin) as argocd:
        assert argocd.terminate_operation(standin.app_name) is True
        state = wait_operation(argocd, standin.app_name, timeout=5)
    assert state["phase"] == "Failed"


def test_dry_run_sync_changes_nothing(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    with connect(standin) as argocd:
        argocd.sync(
            standin.app_name,
            resources=[target_resource(cluster)],
            dry_run=True,
            prune=True,
            sync_options=["ServerSideApply=true"],
        )
        state = wait_operation(argocd, standin.app_name, timeout=30)
    assert state["phase"] == "Succeeded"
    assert state["syncResult"]["resources"][0]["message"].endswith("(dry run)")
    assert state["operation"]["sync"]["syncOptions"] == ["ServerSideApply=true"]
    assert state["operation"]["sync"]["prune"] is True
    assert cluster.live_target() is None


def test_unknown_revision_ends_in_error(cluster: Cluster, standin: ArgoCDStandIn) -> None:
    with connect(standin) as argocd, pytest.raises(SyncFailed, match="ended Error"):
        sync_resource_and_wait(
            argocd,
            standin.app_name,
            resource=target_resource(cluster),
            revision="deadbeef",
            timeout=30,
        )


def test_reads_application_managed_resources_and_manifests(
    cluster: Cluster, standin: ArgoCDStandIn
) -> None:
    cluster.target(OLD)
    with connect(standin) as argocd:
        app = argocd.get_application(standin.app_name, refresh="normal")
        items = argocd.managed_resources(standin.app_name, kind=cluster.config.target.kind)
        rendered = argocd.manifests(standin.app_name)
        at_revision = argocd.manifests(standin.app_name, revision=standin.revision())
        with pytest.raises(ServerError, match="unable to resolve"):
            argocd.manifests(standin.app_name, revision="0000000")
    assert standin.refreshes == ["normal"]
    assert app["status"]["sync"]["status"] == "OutOfSync"
    assert items[0]["liveState"]["spec"]["nodeSelector"] == OLD
    assert items[0]["targetState"]["spec"]["nodeSelector"] == NEW
    assert rendered == at_revision == [manifest(cluster, NEW)]


def test_manifests_from_a_directory(cluster: Cluster, tmp_path: Path) -> None:
    gitops = tmp_path / "gitops"
    gitops.mkdir()
    (gitops / "config.yaml").write_text(json.dumps(manifest(cluster, NEW)))
    with ArgoCDStandIn(kubeconfig=cluster.kubeconfig, manifests=gitops) as s, connect(s) as argocd:
        sync_resource_and_wait(argocd, s.app_name, resource=target_resource(cluster), timeout=30)
    assert selector(cluster) == NEW


def test_wrong_token_is_401_and_never_echoed(standin: ArgoCDStandIn) -> None:
    wrong = "WRONG-token-5a1c-never-print"
    with (
        ArgoCD(standin.address, wrong, plaintext=True) as argocd,
        pytest.raises(Unauthorized) as e,
    ):
        argocd.get_application(standin.app_name)
    assert "token signature is invalid" in str(e.value)
    assert "ARGOCD_AUTH_TOKEN" in str(e.value)
    for secret in (wrong, standin.token):
        assert secret not in str(e.value)
        assert secret not in repr(e.value)


def test_missing_token_is_401(standin: ArgoCDStandIn) -> None:
    r = httpx.get(f"{standin.url}/api/v1/applications/{standin.app_name}")
    assert r.status_code == 401
    assert r.json() == {
        "error": "no session information",
        "code": 16,
        "message": "no session information",
        "details": [],
    }


def test_session_hands_out_the_token(standin: ArgoCDStandIn) -> None:
    ok = httpx.post(
        f"{standin.url}/api/v1/session",
        json={"username": standin.username, "password": standin.password},
    )
    bad = httpx.post(
        f"{standin.url}/api/v1/session", json={"username": "admin", "password": "guess"}
    )
    assert ok.json() == {"token": standin.token}
    assert bad.status_code == 401
    assert bad.json()["code"] == 16


def test_rbac_denial_is_403_with_advice(cluster: Cluster) -> None:
    with (
        ArgoCDStandIn(
            kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], denied={"sync"}
        ) as s,
        connect(s) as argocd,
    ):
        argocd.get_application(s.app_name)  # reading is allowed
        with pytest.raises(Forbidden) as e:
            sync_resource_and_wait(argocd, s.app_name, resource=target_resource(cluster), timeout=5)
    assert "applications, sync" in str(e.value)
    assert "RBAC" in str(e.value)
    assert cluster.live_target() is None


def test_unknown_application_is_403_as_in_argo_cd(standin: ArgoCDStandIn) -> None:
    with connect(standin) as argocd, pytest.raises(Forbidden, match="does not exist"):
        argocd.get_application("no-such-app")


def test_server_error_is_mapped(standin: ArgoCDStandIn) -> None:
    standin.fail_next(503, 14, "connection to the repo-server is unavailable")
    with connect(standin) as argocd:
        with pytest.raises(ServerError, match="repo-server"):
            argocd.get_application(standin.app_name)
        assert argocd.get_application(standin.app_name)["metadata"]["name"] == standin.app_name


def test_closed_port_is_unreachable(standin: ArgoCDStandIn) -> None:
    address = standin.address
    standin.stop()
    with (
        ArgoCD(address, TOKEN, plaintext=True) as argocd,
        pytest.raises(Unreachable, match="cannot reach Argo CD"),
    ):
        argocd.get_application("gpu-fractioning")


def test_tls_is_verified_unless_insecure(
    cluster: Cluster, control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    certs = Path(control_plane.state_dir) / "certs"
    tls = (str(certs / "apiserver.crt"), str(certs / "apiserver.key"))
    with ArgoCDStandIn(kubeconfig=cluster.kubeconfig, manifests=[], token=TOKEN, tls=tls) as s:
        with ArgoCD(s.address, TOKEN) as argocd, pytest.raises(Unreachable) as e:
            argocd.get_application(s.app_name)
        assert "not trusted" in str(e.value)
        with ArgoCD(s.address, TOKEN, insecure=True) as argocd:
            assert argocd.get_application(s.app_name)["metadata"]["name"] == s.app_name
        monkeypatch.setenv("SSL_CERT_FILE", tls[0])
        with ArgoCD(s.address, TOKEN) as argocd:
            assert argocd.get_application(s.app_name)["metadata"]["name"] == s.app_name
        with ArgoCD(s.address, TOKEN, plaintext=True) as argocd, pytest.raises(Unreachable):
            argocd.get_application(s.app_name)
