"""deploy/components/flux-gate and examples/flux/gate: the gate's two halves as Jobs that
Flux's wait judges, each as its own identity, re-run by a change of the config (its hash
in the Job's template), the plain-YAML example equal to the builds, and every object
accepted by the real API server (dry run)."""

from __future__ import annotations

import shutil
import subprocess
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
EXAMPLE = REPO / "examples" / "flux"
COMPONENT = REPO / "deploy" / "components" / "flux-gate"
HALVES = {"pre": "gate-pre-sync", "post": "gate-post-sync"}
Obj = dict[str, Any]


def build(folder: Path) -> list[Obj]:
    """``kustomize build`` as Flux runs it: files of a sibling folder allowed."""
    argv = [*kustomize_argv(), "--load-restrictor", "LoadRestrictionsNone", str(folder)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return load_all(proc.stdout)


@pytest.fixture(scope="module")
def halves() -> dict[str, list[Obj]]:
    return {half: build(EXAMPLE / "gate" / half) for half in HALVES}


def one(objs: list[Obj], kind: str) -> Obj:
    (found,) = [o for o in objs if o["kind"] == kind]
    return found


def key(obj: Obj) -> tuple[str, str, str]:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


@pytest.mark.parametrize("half", HALVES)
def test_each_job_runs_as_its_own_account_bound_to_exactly_its_role(
    halves: dict[str, list[Obj]], half: str
) -> None:
    built, role = halves[half], HALVES[half]
    account = rbac.role_name(role)
    job = one(built, "Job")
    assert job["metadata"]["name"] == account
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == account
    assert one(built, "ServiceAccount")["metadata"] == {
        "name": account,
        "namespace": "fracctl",
        "labels": {"app.kubernetes.io/name": "fracctl", "app.kubernetes.io/component": role},
    }
    p = params(Config())
    roles = [o for o in built if o["kind"] in ("Role", "ClusterRole")]
    shipped = {(o["kind"], o["metadata"].get("namespace", "")): o["rules"] for o in roles}
    assert shipped == {(r.kind, r.namespace): r.to_dict()["rules"] for r in rbac.roles(role, p)}
    bound = [o for o in built if o["kind"].endswith("Binding")]
    assert {o["metadata"].get("namespace", "") for o in bound} == {ns for _, ns in shipped}
    for binding in bound:
        assert binding["metadata"]["name"] == account
        assert binding["roleRef"]["name"] == account
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account, "namespace": "fracctl"}
        ]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["args"][:2] == ["gate", role.removeprefix("gate-")]
    assert_options_exist(container["args"])
    assert container["image"] == "fracctl:0.1.0"


def test_no_hook_annotations_and_no_bare_pods(halves: dict[str, list[Obj]]) -> None:
    # kstatus calls a Failed Pod Current: a bare-Pod gate would pass Flux's wait.
    for obj in halves["pre"] + halves["post"]:
        assert obj["kind"] != "Pod"
        assert not any(
            a.startswith("argocd.argoproj.io/") for a in (obj["metadata"].get("annotations") or {})
        ), key(obj)


@pytest.mark.parametrize("half", HALVES)
def test_a_refusal_fails_the_job_at_once_and_a_finished_job_goes(
    halves: dict[str, list[Obj]], half: str
) -> None:
    spec = one(halves[half], "Job")["spec"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # what podFailurePolicy requires
    fail, ignore = spec["podFailurePolicy"]["rules"]
    assert fail == {
        "action": "FailJob",
        "onExitCodes": {
            "containerName": pod["containers"][0]["name"],
            "operator": "In",
            "values": [ExitCode.FINDING, ExitCode.USAGE],
        },
    }
    # A kill, an API error, a lock held, a timeout: the job controller runs it again.
    retried = {ExitCode.EXTERNAL, ExitCode.TIMEOUT, ExitCode.LOCKED, 137}
    assert not retried & set(fail["onExitCodes"]["values"])
    assert spec["backoffLimit"] >= 1
    assert ignore["action"] == "Ignore"
    assert ignore["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert 0 < spec["ttlSecondsAfterFinished"] <= 600
    assert pod["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"
    deadline = {"pre": 900, "post": 1800}[half]
    assert spec["activeDeadlineSeconds"] == deadline


@pytest.mark.parametrize("half", HALVES)
def test_the_job_reads_the_revisions_config_by_its_hash(
    halves: dict[str, list[Obj]], half: str
) -> None:
    built = halves[half]
    cm = one(built, "ConfigMap")
    text = (EXAMPLE / "gate" / "config" / "gpufractioningconfig.yaml").read_text()
    assert cm["data"] == {"gpufractioningconfig.yaml": text}
    name = cm["metadata"]["name"]
    assert name.startswith(f"fracctl-gate-{half}-desired-")  # the content hash kept on
    pod = one(built, "Job")["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "desired"]
    assert volume["configMap"]["name"] == name


def test_a_change_of_the_config_changes_each_jobs_template(
    halves: dict[str, list[Obj]], tmp_path: Path
) -> None:
    # The same layout elsewhere, the config one word different.
    shutil.copytree(COMPONENT, tmp_path / "deploy" / "components" / "flux-gate")
    gate = tmp_path / "examples" / "flux" / "gate"
    shutil.copytree(EXAMPLE / "gate", gate)
    config = gate / "config" / "gpufractioningconfig.yaml"
    config.write_text(config.read_text().replace("enabled", "on"))
    for half in HALVES:
        before, after = one(halves[half], "Job"), one(build(gate / half), "Job")
        assert before["spec"]["template"] != after["spec"]["template"]  # force recreates it
        assert before["metadata"] == after["metadata"]


def test_the_halves_share_no_object_and_the_pre_half_owns_the_namespace(
    halves: dict[str, list[Obj]],
) -> None:
    pre, post = ({key(o) for o in halves[h]} for h in HALVES)
    assert not pre & post  # one object in two Kustomizations: the other prunes it
    ns = one(halves["pre"], "Namespace")
    assert ns["metadata"]["name"] == "fracctl"
    assert ns["metadata"]["annotations"] == {"kustomize.toolkit.fluxcd.io/prune": "disabled"}
    assert not [o for o in halves["post"] if o["kind"] == "Namespace"]
    # No object names a namespace the pre-half does not make or a cluster already has.
    namespaces = {o["metadata"].get("namespace") for o in halves["pre"] + halves["post"]}
    assert namespaces - {None} == {"fracctl", "default", "gpu-fractioning"}


def test_the_config_kustomization_holds_only_the_config() -> None:
    built = build(EXAMPLE / "gate" / "config")
    assert [o["kind"] for o in built] == ["GpuFractioningConfig"]


def test_the_plain_yaml_example_is_the_builds(halves: dict[str, list[Obj]]) -> None:
    plain = load_all((EXAMPLE / "gate-jobs.yaml").read_text())
    assert plain == halves["pre"] + halves["post"]


def test_the_builds_pass_fracctl_lint(halves: dict[str, list[Obj]], tmp_path: Path) -> None:
    path = tmp_path / "gate.yaml"
    path.write_text(dump_all(halves["pre"] + halves["post"]))
    r = run_cli("lint", str(path))
    assert r.exit_code == ExitCode.OK, r.output


def test_every_object_passes_a_server_side_dry_run(
    cluster: Cluster, halves: dict[str, list[Obj]]
) -> None:
    kube = cluster.kube
    objs = halves["pre"] + halves["post"]
    for name in sorted({o["metadata"].get("namespace") for o in objs} - {None}):
        ensure_namespace(kube, name)
    for obj in objs:
        try:
            kube.create(kube.resolve(obj["apiVersion"], obj["kind"]), obj, dry_run=True)
        except Conflict as e:
            assert e.status.reason == "AlreadyExists", e  # validated, then found
