"""``fracctl drift`` with Argo CD: its claims next to the truth, and ``--app``.

The HTTP level is mocked with respx (the Argo CD adapter's boundary); the cluster is the
real API server. The last test runs the Argo CD stand-in, which syncs to the real API
server and reports "Succeeded" while the immutable selector stayed as it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from fracctl.adapters.argocd import ArgoCD
from fracctl.config import ArgoCDConfig
from fracctl.errors import ExitCode
from fracctl.flows.drift import SYNCED_BUT_DIFFERS
from fracctl.flows.engines.argocd.sync import sync_resource_and_wait
from tests.support.argocd_standin import ArgoCDStandIn
from tests.support.helpers import Cluster, run_cli

REPO = Path(__file__).resolve().parents[2]
CEL = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
RTX = {"example.org/gpu-class": "rtx-pro-6000"}
OPT_IN = {"example.org/gpu-fractions": "enabled"}
SERVER = "https://argocd.test"
TOKEN = "argo-T0KEN-never-printed"
GROUP = "gpu-fractioning.kai.scheduler"


def target(selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "GpuFractioningConfig",
        "metadata": {"name": "default"},
        "spec": {"nodeSelector": selector},
    }


def application(sync: str = "Synced", *, resources: list[dict[str, Any]] | None = None) -> Any:
    return {
        "metadata": {"name": "gpu-fractioning", "namespace": "argocd"},
        "spec": {"destination": {"server": "https://kubernetes.default.svc"}},
        "status": {
            "sync": {"status": sync, "revision": "3f2c1ab"},
            "health": {"status": "Healthy"},
            "operationState": {
                "phase": "Succeeded",
                "message": "successfully synced (all tasks run)",
                "finishedAt": "2026-01-01T00:00:00Z",
                "syncResult": {
                    "resources": [
                        {
                            "group": GROUP,
                            "kind": "GpuFractioningConfig",
                            "name": "default",
                            "namespace": "",
                            "status": "Synced",
                            "message": "gpufractioningconfig configured",
                        }
                    ]
                },
            },
            "resources": resources
            if resources is not None
            else [
                {
                    "group": GROUP,
                    "version": "v1alpha1",
                    "kind": "GpuFractioningConfig",
                    "name": "default",
                    "status": sync,
                    "health": {"status": "Healthy"},
                }
            ],
        },
    }


@pytest.fixture
def argocd_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGOCD_SERVER", SERVER)
    monkeypatch.setenv("ARGOCD_AUTH_TOKEN", TOKEN)


def git_config(tmp_path: Path, kubeconfig: str, *, app: str | None = "gpu-fractioning") -> str:
    repo = tmp_path / "gitops"
    shutil.copytree(REPO / "examples" / "gitops", repo)
    from fracctl.adapters.git import init_repo

    init_repo(repo, message="desired")
    f = tmp_path / "fracctl.yaml"
    text = (
        f"kube:\n  kubeconfig: {kubeconfig}\n"
        f"git:\n  repo: {repo}\n  path: gpu-fractioning/gpufractioningconfig.yaml\n"
    )
    if app:
        text += f"argocd:\n  app: {app}\n"
    f.write_text(text)
    return str(f)


def test_synced_claim_with_a_drifted_object_is_flagged_loudly(
    tmp_path: Path, cluster: Cluster, argocd_env: None
) -> None:
    cluster.target(RTX)
    config = git_config(tmp_path, cluster.kubeconfig)
    with respx.mock(base_url=SERVER) as mock:
        route = mock.get("/api/v1/applications/gpu-fractioning").respond(json=application())
        r = run_cli("-c", config, "drift")
        assert r.exit_code == ExitCode.FINDING, r.output
        assert route.calls.last.request.headers["Authorization"] == f"Bearer {TOKEN}"
        assert (
            f"!! {SYNCED_BUT_DIFFERS}: GpuFractioningConfig/default is needs-recreate" in r.stdout
        )
        assert "Argo CD gpu-fractioning: Synced, Healthy; last operation Succeeded" in r.stdout
        assert CEL in r.stdout

        r = run_cli("-c", config, "drift", "-o", "json")
        assert r.exit_code == ExitCode.FINDING, r.output
        data = r.json
        assert data["argocd"]["sync"] == "Synced"
        assert data["argocd"]["operation"]["phase"] == "Succeeded"
        assert data["objects"][0]["argocd"]["status"] == "Synced"
        assert data["objects"][0]["argocd"]["lastSync"] == "Synced"
        assert any(w.startswith(SYNCED_BUT_DIFFERS) for w in data["warnings"])

        r = run_cli("-c", config, "drift", "-o", "github")
        assert "::warning title=fracctl drift%3A Argo CD::" + SYNCED_BUT_DIFFERS in r.stdout
    assert TOKEN not in r.output


def test_no_flag_when_argocd_admits_out_of_sync_or_all_is_well(
    tmp_path: Path, cluster: Cluster, argocd_env: None
) -> None:
    cluster.target(RTX)
    config = git_config(tmp_path, cluster.kubeconfig)
    with respx.mock(base_url=SERVER) as mock:
        mock.get("/api/v1/applications/gpu-fractioning").respond(json=application("OutOfSync"))
        r = run_cli("-c", config, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["warnings"] == []
    assert r.json["argocd"]["sync"] == "OutOfSync"


def test_unreachable_argocd_exits_3(tmp_path: Path, cluster: Cluster, argocd_env: None) -> None:
    cluster.target(OPT_IN)
    config = git_config(tmp_path, cluster.kubeconfig)
    with respx.mock(base_url=SERVER) as mock:
        mock.get("/api/v1/applications/gpu-fractioning").mock(
            side_effect=httpx.ConnectError("connection refused")
        )
        r = run_cli("-c", config, "drift")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "cannot reach Argo CD" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert TOKEN not in r.output


def test_argocd_configured_without_a_token_is_a_config_error(
    tmp_path: Path, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGOCD_SERVER", SERVER)
    cluster.target(OPT_IN)
    config = git_config(tmp_path, cluster.kubeconfig)
    r = run_cli("-c", config, "drift")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "ARGOCD_AUTH_TOKEN" in r.stderr


def test_app_mode_judges_argocds_manifests_and_what_it_would_prune(
    tmp_path: Path, cluster: Cluster, argocd_env: None
) -> None:
    cluster.target(RTX)
    kube = cluster.kube
    ns = cluster.namespace("drift-app")
    cms = kube.resolve("v1", "ConfigMap")
    for name in ("kept", "orphan"):
        try:
            kube.delete(cms, name, ns)
        except Exception:  # noqa: BLE001 - left over from an earlier run, or absent
            pass
        kube.create(
            cms,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}},
        )
    app = application(
        resources=[
            {
                "group": GROUP,
                "version": "v1alpha1",
                "kind": "GpuFractioningConfig",
                "name": "default",
                "status": "Synced",
            },
            {
                "version": "v1",
                "kind": "ConfigMap",
                "namespace": ns,
                "name": "kept",
                "status": "Synced",
            },
            {
                "version": "v1",
                "kind": "ConfigMap",
                "namespace": ns,
                "name": "orphan",
                "status": "OutOfSync",
                "requiresPruning": True,
            },
        ]
    )
    app["spec"]["destination"]["namespace"] = ns
    kept = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}}
    config = tmp_path / "fracctl.yaml"
    config.write_text(f"kube:\n  kubeconfig: {cluster.kubeconfig}\n")
    try:
        with respx.mock(base_url=SERVER) as mock:
            mock.get("/api/v1/applications/gpu-fractioning").respond(json=app)
            manifests = mock.get(
                "/api/v1/applications/gpu-fractioning/manifests", params={"revision": "3f2c1ab"}
            ).respond(json={"manifests": [json.dumps(target(OPT_IN)), json.dumps(kept)]})
            r = run_cli(
                "-c",
                str(config),
                "drift",
                "--app",
                "gpu-fractioning",
                "-r",
                "3f2c1ab",
                "-o",
                "json",
            )
            assert manifests.called
        assert r.exit_code == ExitCode.FINDING, r.output
        verdicts = {o["name"]: o["verdict"] for o in r.json["objects"]}
        assert verdicts == {
            "default": "needs-recreate",
            "kept": "in-sync",
            "orphan": "missing-desired",
        }
        assert r.json["source"] == {"argocd_app": "gpu-fractioning", "revision": "3f2c1ab"}
        warnings = r.json["warnings"]
        assert warnings == [f"{SYNCED_BUT_DIFFERS}: GpuFractioningConfig/default is needs-recreate"]
    finally:
        for name in ("kept", "orphan"):
            kube.delete(cms, name, ns)


def test_app_mode_validates_argocds_manifests_and_refuses_duplicates(
    tmp_path: Path, cluster: Cluster, argocd_env: None
) -> None:
    cluster.target(RTX)
    config = tmp_path / "fracctl.yaml"
    config.write_text(f"kube:\n  kubeconfig: {cluster.kubeconfig}\n")
    no_selector = target(RTX)
    del no_selector["spec"]["nodeSelector"]
    with respx.mock(base_url=SERVER) as mock:
        mock.get("/api/v1/applications/gpu-fractioning").respond(json=application())
        route = mock.get("/api/v1/applications/gpu-fractioning/manifests")
        # Argo CD renders a GpuFractioningConfig the API server refuses: never in sync
        route.respond(json={"manifests": [json.dumps(no_selector)]})
        r = run_cli("-c", str(config), "drift", "--app", "gpu-fractioning", "-o", "json")
        assert r.exit_code == ExitCode.FINDING, r.output
        (o,) = r.json["objects"]
        assert o["verdict"] == "rejected"
        assert "spec.nodeSelector: Required value" in o["message"]
        # two manifests for one object: refused, naming both
        route.respond(json={"manifests": [json.dumps(target(RTX)), json.dumps(target(OPT_IN))]})
        r = run_cli("-c", str(config), "drift", "--app", "gpu-fractioning")
        assert r.exit_code == ExitCode.USAGE, r.output
        assert "manifest 1 of Argo CD's rendering and manifest 2 of Argo CD's rendering" in (
            r.stderr
        )


def test_app_mode_argocd_errors_exit_3(tmp_path: Path, cluster: Cluster, argocd_env: None) -> None:
    config = tmp_path / "fracctl.yaml"
    config.write_text(f"kube:\n  kubeconfig: {cluster.kubeconfig}\n")
    with respx.mock(base_url=SERVER) as mock:
        mock.get("/api/v1/applications/nope").respond(
            403, json={"error": "permission denied", "code": 7, "message": "permission denied"}
        )
        r = run_cli("-c", str(config), "drift", "--app", "nope")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "403" in r.stderr
    assert TOKEN not in r.output


def test_the_incident_end_to_end_with_the_argocd_stand_in(tmp_path: Path, cluster: Cluster) -> None:
    """Argo CD (stand-in) syncs, swallows the 422, says Succeeded/Synced; drift says no."""
    cluster.target(RTX)
    with ArgoCDStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[target(OPT_IN)], quirk="swallow-rejection"
    ) as standin:
        client = ArgoCD.from_config(
            ArgoCDConfig(server=standin.address, plaintext=True),
            {"ARGOCD_AUTH_TOKEN": standin.token},
        )
        with client:
            state = sync_resource_and_wait(
                client,
                standin.app_name,
                resource={"group": GROUP, "kind": "GpuFractioningConfig", "name": "default"},
                timeout=30,
            )
        assert state["phase"] == "Succeeded"
        config = tmp_path / "fracctl.yaml"
        config.write_text(
            f"kube:\n  kubeconfig: {cluster.kubeconfig}\n"
            f"argocd:\n  server: {standin.address}\n  plaintext: true\n"
            f"  app: {standin.app_name}\n"
        )
        token_file = tmp_path / "token"
        token_file.write_text(standin.token)
        with config.open("a") as f:
            f.write(f"  token_file: {token_file}\n")
        r = run_cli("-c", str(config), "drift", "--app", standin.app_name)
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "needs-recreate" in r.stdout
    assert CEL in r.stdout
    assert SYNCED_BUT_DIFFERS in r.stdout
    assert "last operation Succeeded" in r.stdout
    assert standin.token not in r.output


HOOK = {"helm.sh/hook": "post-install,post-upgrade", "helm.sh/hook-weight": "0"}


@pytest.mark.parametrize("rendered", [False, True], ids=["left-out", "rendered"])
def test_app_mode_names_the_chart_hook_and_never_advises_pruning_it(
    tmp_path: Path, cluster: Cluster, argocd_env: None, rendered: bool
) -> None:
    # The operator's chart through Argo CD: the live config is its PostSync hook (with
    # Argo CD's hook finalizer and tracking). Argo CD's manifests either carry it with its
    # hook annotations, or leave it out while the application lists it to prune.
    cluster.target(OPT_IN)
    ref = cluster.config.target.ref
    tracking = f"gpu-fractioning:{GROUP}/GpuFractioningConfig:/default"
    annotations = {**HOOK, "argocd.argoproj.io/tracking-id": tracking}
    cluster.kube.patch(ref, "default", {"metadata": {"annotations": annotations}})
    desired = {**target(OPT_IN), "metadata": {"name": "default", "annotations": HOOK}}
    resources = [
        {"group": GROUP, "version": "v1alpha1", "kind": "GpuFractioningConfig",
         "name": "default", "status": "OutOfSync" if not rendered else "Synced",
         "requiresPruning": not rendered},
    ]  # fmt: skip
    app = application(resources=resources)
    config = tmp_path / "fracctl.yaml"
    config.write_text(f"kube:\n  kubeconfig: {cluster.kubeconfig}\n")
    manifests = [json.dumps(desired)] if rendered else []
    with respx.mock(base_url=SERVER) as mock:
        mock.get("/api/v1/applications/gpu-fractioning").respond(json=app)
        mock.get("/api/v1/applications/gpu-fractioning/manifests").respond(
            json={"manifests": manifests}
        )
        r = run_cli("-c", str(config), "drift", "--app", "gpu-fractioning", "-o", "json")
        text = run_cli("-c", str(config), "drift", "--app", "gpu-fractioning")
    assert r.exit_code == ExitCode.FINDING, r.output
    (o,) = r.json["objects"]
    assert o["verdict"] == ("in-sync" if rendered else "hook")
    assert (
        o["hook"]["recreated_by"] == "every sync of Argo CD application gpu-fractioning (PostSync)"
    )
    assert o["hook"]["source"] == ("in the rendering" if rendered else "on the live object")
    assert r.json["warnings"] == []  # Argo CD's Synced is not called a lie for a hook
    assert text.exit_code == ExitCode.FINDING, text.output
    assert "prune" not in text.stdout.replace("do not prune", ""), text.stdout
    assert "missing-desired" not in text.stdout
    assert "every sync of Argo CD application gpu-fractioning (PostSync)" in text.stdout
