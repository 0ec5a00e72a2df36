"""deploy/: the RBAC is `fracctl rbac print`'s output, and every overlay is valid.

Each overlay is built with kustomize (``kustomize``, else ``kubectl kustomize``) and every
object it holds passes a server-side dry-run create on the real API server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from fracctl.config import Config, MPSConfig
from fracctl.core import rbac
from fracctl.errors import Conflict, ExitCode
from fracctl.flows.rbac import params
from fracctl.sandbox.argocd_local import locate_kustomize
from tests.support.helpers import Cluster, ensure_namespace, run_cli

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
OVERLAYS = ("argocd-hook", "drift-cronjob", "node-agent")
Obj = dict[str, Any]


def load_all(text: str) -> list[Obj]:
    return [doc for doc in YAML(typ="safe").load_all(text) if doc]


def kustomize_argv() -> list[str]:
    folder = locate_kustomize()
    if folder is not None:
        return [str(folder / "kustomize"), "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if os.environ.get("CI") == "true":
        pytest.fail("neither kustomize nor kubectl is available (make argocd builds kustomize)")
    pytest.skip("neither kustomize nor kubectl is available (make argocd builds kustomize)")


def build(overlay: str) -> list[Obj]:
    proc = subprocess.run(
        [*kustomize_argv(), str(DEPLOY / "overlays" / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return load_all(proc.stdout)


def by_kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]


# --- the RBAC files are generated -----------------------------------------------------


@pytest.mark.parametrize("role", rbac.ROLES)
def test_deploy_rbac_is_the_output_of_rbac_print(role: str) -> None:
    r = run_cli("rbac", "print", "--role", role)
    assert r.exit_code == ExitCode.OK, r.output
    committed = (DEPLOY / "rbac" / f"{role}.yaml").read_text()
    assert committed == r.stdout, (
        f"deploy/rbac/{role}.yaml differs from `fracctl rbac print --role {role}`: "
        "run scripts/generate-deploy-rbac.sh"
    )


def test_every_role_file_is_listed_in_the_kustomization() -> None:
    (doc,) = load_all((DEPLOY / "rbac" / "kustomization.yaml").read_text())
    # doctor's Roles live in the agents' and KAI's namespaces: applied on its own.
    assert doc["resources"] == [f"{role}.yaml" for role in rbac.ROLES if role != "doctor"]


def test_the_example_hook_grants_what_the_drift_role_grants() -> None:
    docs = load_all((REPO / "examples" / "argocd" / "drift-postsync.yaml").read_text())
    (role,) = by_kind(docs, "ClusterRole")
    assert role["rules"] == rbac.roles("drift", params(Config()))[0].to_dict()["rules"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_overlay_ships_the_generated_roles(overlay: str) -> None:
    objs = build(overlay)
    roles = by_kind(objs, "ClusterRole") + by_kind(objs, "Role")
    shipped = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["rules"]
               for o in roles}  # fmt: skip
    expected = {(r.kind, r.namespace, r.name): r.to_dict()["rules"]
                for role in rbac.ROLES if role != "doctor"
                for r in rbac.roles(role, params(Config()))}  # fmt: skip
    assert shipped == expected


# --- what each overlay runs -----------------------------------------------------------


def assert_options_exist(args: list[str]) -> None:
    words = [a for a in args if not a.startswith("-")]
    r = run_cli(*words, "--help")
    assert r.exit_code == ExitCode.OK, r.output
    for token in args:
        if token.startswith("-"):
            assert token.split("=")[0] in r.stdout, token


def drift_pod(objs: list[Obj], kind: str) -> Obj:
    (workload,) = by_kind(objs, kind)
    spec = workload["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if kind == "CronJob" else spec["template"]
    return template["spec"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("overlay", "kind"), [("argocd-hook", "Job"), ("drift-cronjob", "CronJob")]
)
def test_drift_runs_as_the_dry_run_only_service_account(overlay: str, kind: str) -> None:
    objs = build(overlay)
    pod = drift_pod(objs, kind)
    assert pod["serviceAccountName"] == "fracctl-drift"
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["image"] == "fracctl:0.1.0"
    assert container["args"][0] == "drift"
    assert_options_exist(container["args"])
    env = {e["name"]: e for e in container["env"]}
    assert env["FRACCTL_KUBE_IN_CLUSTER"]["value"] == "true"
    (sa,) = by_kind(objs, "ServiceAccount")
    (binding,) = by_kind(objs, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == "fracctl-drift"
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "fracctl-drift",
            "namespace": sa["metadata"]["namespace"],
        }
    ]
    (policy,) = by_kind(objs, "ValidatingAdmissionPolicy")
    user = f"system:serviceaccount:{sa['metadata']['namespace']}:fracctl-drift"
    assert f'== "{user}"' in policy["spec"]["matchConditions"][0]["expression"]
    if kind == "Job":
        (job,) = by_kind(objs, "Job")
        assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PostSync"
        assert "secretKeyRef" in env["ARGOCD_AUTH_TOKEN"]["valueFrom"]
    else:
        assert env["FRACCTL_GIT_REPO"]["value"] and env["FRACCTL_GIT_PATH"]["value"]


def test_the_node_agent_daemonset() -> None:
    objs = build("node-agent")
    (ds,) = by_kind(objs, "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    (gfc,) = load_all(
        (REPO / "examples" / "gitops" / "gpu-fractioning" / "gpufractioningconfig.yaml").read_text()
    )
    assert pod["nodeSelector"] == gfc["spec"]["nodeSelector"]
    assert pod["hostIPC"] is True
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["priorityClassName"] == "system-node-critical"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    # No token: the node agent's role has no rules because it makes no API call.
    assert pod["automountServiceAccountToken"] is False
    assert rbac.roles("node-agent", params(Config()))[0].rules == ()
    assert ds["spec"]["updateStrategy"]["type"] == "OnDelete"
    mps = MPSConfig()
    assert pod["terminationGracePeriodSeconds"] > float(mps.graceful_stop)
    (container,) = pod["containers"]
    assert container["args"] == ["node", "mps", "install", "--foreground"]
    assert_options_exist(container["args"])
    probe = container["readinessProbe"]["exec"]["command"]
    assert probe == ["fracctl", "node", "mps", "status"]
    assert container["resources"]["requests"]
    host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in container["env"]}
    for key, folder in (("PIPE", mps.pipe_dir), ("LOG", mps.log_dir)):
        assert env[f"FRACCTL_MPS_{key}_DIR"] == folder
        assert folder in host.values()
        assert any(mounts[n] == folder for n, p in host.items() if p == folder)


# --- every object passes a server-side dry run ----------------------------------------


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_passes_a_server_side_dry_run(cluster: Cluster, overlay: str) -> None:
    kube = cluster.kube
    objs = build(overlay)
    # Its own namespaces and those an install already has (the operator's, Flux's).
    names = {ns["metadata"]["name"] for ns in by_kind(objs, "Namespace")}
    for name in sorted(names | {o["metadata"].get("namespace") for o in objs} - {None}):
        ensure_namespace(kube, name)
    for obj in objs:
        ref = kube.resolve(obj["apiVersion"], obj["kind"])
        try:
            kube.create(ref, obj, dry_run=True)
        except Conflict as e:
            assert e.status.reason == "AlreadyExists", e  # validated, then found


def test_the_doctor_role_passes_a_server_side_dry_run(cluster: Cluster) -> None:
    kube = cluster.kube
    objs = load_all((DEPLOY / "rbac" / "doctor.yaml").read_text())
    for name in sorted({o["metadata"]["namespace"] for o in objs if "namespace" in o["metadata"]}):
        ensure_namespace(kube, name)
    for obj in objs:
        kube.create(kube.resolve(obj["apiVersion"], obj["kind"]), obj, dry_run=True)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_passes_fracctl_lint(overlay: str, tmp_path: Path) -> None:
    built = tmp_path / f"{overlay}.yaml"
    built.write_text(dump_all(build(overlay)))
    r = run_cli("lint", str(built))
    assert r.exit_code == ExitCode.OK, r.output
    assert "0 error(s), 0 warning(s)" in r.stdout


def dump_all(objs: list[Obj]) -> str:
    import io

    out = io.StringIO()
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    yaml.dump_all(objs, out)
    return out.getvalue()
