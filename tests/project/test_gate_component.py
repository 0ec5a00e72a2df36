"""deploy/components/argocd-gate and its examples: generated RBAC, the hooks as Argo CD
reads them, the plain-YAML example equal to the component's build, and every object
accepted by the real API server (dry run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fracctl.config import Config
from fracctl.core import rbac
from fracctl.errors import Conflict, ExitCode
from fracctl.flows.rbac import params
from tests.project.test_deploy import assert_options_exist, dump_all, kustomize_argv, load_all
from tests.support.helpers import Cluster, ensure_namespace, run_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "argocd"
HOOK = "argocd.argoproj.io/hook"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def built() -> list[Obj]:
    proc = subprocess.run([*kustomize_argv(), str(EXAMPLE / "gate")], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return load_all(proc.stdout)


def annotations(obj: Obj) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def test_the_generated_files_are_current() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "generate-gate-component.py"),
                           "--check"], capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_each_hook_runs_as_its_own_account_bound_to_exactly_its_role(built: list[Obj]) -> None:
    p = params(Config())
    pods = {o["metadata"]["name"]: o for o in built if o["kind"] == "Pod"}
    assert {n: annotations(o)[HOOK] for n, o in pods.items()} == {
        "fracctl-gate-pre-sync": "PreSync",
        "fracctl-gate-post-sync": "PostSync",
    }
    for role in ("gate-pre-sync", "gate-post-sync"):
        account = f"fracctl-{role}"
        assert pods[account]["spec"]["serviceAccountName"] == account
        shipped = {(o["kind"], o["metadata"].get("namespace", "")): o["rules"]
                   for o in built if o["kind"] in ("Role", "ClusterRole")
                   and o["metadata"]["name"] == account}  # fmt: skip
        assert shipped == {(r.kind, r.namespace): r.to_dict()["rules"] for r in rbac.roles(role, p)}
        bound = {(o["kind"], o["metadata"].get("namespace", "")): o for o in built
                 if o["kind"].endswith("Binding") and o["metadata"]["name"] == account}  # fmt: skip
        assert {k[1] for k in bound} == {k[1] for k in shipped}
        for binding in bound.values():
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": account, "namespace": "fracctl"}
            ]
        container = pods[account]["spec"]["containers"][0]
        assert container["args"][:2] == ["gate", role.removeprefix("gate-")]
        assert_options_exist(container["args"])


#: gitops-engine's kindOrder (pkg/sync/sync_tasks.go): within one phase and wave, Argo CD
#: creates kind by kind in this order (sync_context.go runTasks), the first of them the
#: destination namespace that CreateNamespace=true adds as a PreSync task of wave 0.
KIND_ORDER = ["Namespace", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding",
              "Role", "RoleBinding", "Pod"]  # fmt: skip


def test_what_the_hooks_need_is_made_before_them(built: list[Obj]) -> None:
    for obj in built:
        if obj["kind"] == "GpuFractioningConfig":
            assert not annotations(obj)
            continue
        # One wave (0): the kinds' order puts each hook's needs before it.
        assert "argocd.argoproj.io/sync-wave" not in annotations(obj), obj["metadata"]
        if obj["kind"] != "Pod":
            assert annotations(obj)[HOOK] == "PreSync", obj["metadata"]
        assert obj["kind"] in KIND_ORDER, obj["kind"]
    # No Namespace among them: a hook Namespace is deleted whenever a sync fails
    # (HookFailed) or before the next (BeforeHookCreation), under the hooks in it.
    assert not [o for o in built if o["kind"] == "Namespace"]


def test_the_applicationset_makes_the_hooks_namespace(built: list[Obj]) -> None:
    import yaml

    appset = yaml.safe_load((EXAMPLE / "gate-applicationset.yaml").read_text())
    spec = appset["spec"]["template"]["spec"]
    assert "CreateNamespace=true" in spec["syncPolicy"]["syncOptions"]
    hooks = [o for o in built if o["kind"] in ("Pod", "ServiceAccount", "ConfigMap")]
    assert {o["metadata"]["namespace"] for o in hooks} == {spec["destination"]["namespace"]}


def test_the_hooks_read_the_revisions_own_manifest(built: list[Obj]) -> None:
    (cm,) = [o for o in built if o["kind"] == "ConfigMap"]
    text = (EXAMPLE / "gate" / "gpufractioningconfig.yaml").read_text()
    assert cm["data"] == {"gpufractioningconfig.yaml": text}
    pod = next(o for o in built if o["kind"] == "Pod")
    (volume,) = [v for v in pod["spec"]["volumes"] if v["name"] == "desired"]
    assert volume["configMap"]["name"] == cm["metadata"]["name"]


def test_the_plain_yaml_example_is_the_components_build(built: list[Obj]) -> None:
    plain = load_all((EXAMPLE / "gate-hooks.yaml").read_text())
    assert plain == [o for o in built if o["kind"] != "GpuFractioningConfig"]


def test_the_build_passes_fracctl_lint(built: list[Obj], tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(dump_all(built))
    r = run_cli("lint", str(path))
    assert r.exit_code == ExitCode.OK, r.output


def test_every_object_passes_a_server_side_dry_run(cluster: Cluster, built: list[Obj]) -> None:
    kube = cluster.kube
    for name in sorted({o["metadata"].get("namespace") for o in built} - {None}) + ["fracctl"]:
        ensure_namespace(kube, name)
    for obj in built:
        try:
            kube.create(kube.resolve(obj["apiVersion"], obj["kind"]), obj, dry_run=True)
        except Conflict as e:
            assert e.status.reason == "AlreadyExists", e
