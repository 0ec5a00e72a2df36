"""The shipped examples: the Argo CD hook's RBAC on the real API server, and the CI jobs."""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.core import drift as d
from fracctl.core.kube.resources import NAMESPACES
from fracctl.errors import Conflict, ExitCode, Forbidden, NotFound
from fracctl.flows import drift as flow
from fracctl.flows.context import Context
from tests.support.helpers import Cluster, ref_for, run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HOOK = EXAMPLES / "argocd" / "drift-postsync.yaml"
SA_USER = "system:serviceaccount:argocd:fracctl-drift"
CEL = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"


def load_all(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in YAML(typ="safe").load_all(path.read_text()) if doc]


class AsDriftServiceAccount(Kube):
    """The admin's connection, impersonating the hook's ServiceAccount."""

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = super()._headers(content_type, accept)
        headers["Impersonate-User"] = SA_USER
        headers["Impersonate-Group"] = "system:serviceaccounts"
        return headers


@pytest.fixture
def hook_rbac(cluster: Cluster) -> Iterator[list[dict[str, Any]]]:
    kube = cluster.kube
    try:
        kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}}
        )
    except Conflict:
        pass
    made = []
    docs = load_all(HOOK)
    for doc in docs:
        ref = kube.resolve(doc["apiVersion"], doc["kind"])
        if doc["kind"] == "Job":
            kube.create(ref, doc, dry_run=True)  # valid, but nothing would run it here
            continue
        try:
            kube.create(ref, doc)
        except Conflict:
            pass
        made.append((ref, doc))
    try:
        yield docs
    finally:
        for ref, doc in reversed(made):
            try:
                kube.delete(ref, doc["metadata"]["name"], doc["metadata"].get("namespace"))
            except NotFound:
                pass


def test_the_hook_identity_can_run_drift_and_nothing_else(
    cluster: Cluster, hook_rbac: list[dict[str, Any]]
) -> None:
    cluster.target({"example.org/gpu-class": "rtx-pro-6000"})
    sa = AsDriftServiceAccount.connect(kubeconfig=cluster.kubeconfig)
    ctx = Context(config=cfg.Config(), kube_factory=lambda: sa)
    t = ctx.config.target
    desired = {
        "apiVersion": t.api_version,
        "kind": t.kind,
        "metadata": {"name": t.name},
        "spec": {"nodeSelector": {"example.org/gpu-fractions": "enabled"}},
    }
    # RBAC grants take effect at once; the admission policy needs a moment to load.
    ref = ref_for(cluster.config)
    deadline = time.monotonic() + 30
    while True:
        try:
            sa.patch(ref, t.name, {"metadata": {"labels": {"probe": str(time.monotonic())}}})
        except Forbidden as e:
            assert "fracctl-drift may only send dry-run requests" in str(e)
            break
        assert time.monotonic() < deadline, "the dry-run-only policy never took effect"
        time.sleep(0.5)

    o = flow.check_target(ctx, desired_objects=[desired])
    assert o.verdict == d.NEEDS_RECREATE
    assert CEL in o.message
    assert [f.path for f in o.fields] == ["spec.nodeSelector"]  # the CRD was readable

    # create is granted for the dry-run validation only
    with pytest.raises(Forbidden, match="fracctl-drift may only send dry-run requests"):
        sa.create(ref, desired)
    with pytest.raises(Forbidden):
        sa.delete(ref, t.name)
    with pytest.raises(Forbidden):
        sa.list(sa.resolve("v1", "Secret"), namespace="argocd")
    live = cluster.live_target()
    assert live is not None
    assert live["spec"]["nodeSelector"] == {"example.org/gpu-class": "rtx-pro-6000"}


def test_the_hook_job_is_a_postsync_hook_running_drift_for_the_app() -> None:
    job = next(doc for doc in load_all(HOOK) if doc["kind"] == "Job")
    assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PostSync"
    spec = job["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "fracctl-drift"
    (container,) = spec["containers"]
    assert container["args"][:2] == ["drift", "--app"]
    env = {e["name"]: e for e in container["env"]}
    assert env["FRACCTL_KUBE_IN_CLUSTER"]["value"] == "true"
    assert "secretKeyRef" in env["ARGOCD_AUTH_TOKEN"]["valueFrom"]
    assert_options_exist(container["args"])


def assert_options_exist(args: list[str]) -> None:
    command = args[0]
    r = run_cli(command, "--help")
    assert r.exit_code == ExitCode.OK, r.output
    for token in args[1:]:
        if token.startswith("-"):
            assert token.split("=")[0] in r.stdout, token


def fracctl_command(text: str) -> list[str]:
    words = shlex.split(text.replace("\\\n", " "))
    start = words.index("fracctl")
    return words[start + 1 :]


def test_the_github_job_runs_drift_with_annotations_and_a_junit_artifact() -> None:
    (doc,) = load_all(EXAMPLES / "ci" / "github-actions.yaml")
    steps = doc["jobs"]["drift"]["steps"]
    run = next(s["run"] for s in steps if "fracctl drift" in str(s.get("run", "")))
    args = fracctl_command(run)
    assert args[0] == "drift"
    assert "-o" in args and args[args.index("-o") + 1] == "github"
    assert "--junit-file" in args
    assert_options_exist(args)
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["with"]["path"] == "drift.xml"


def test_the_gitlab_job_runs_drift_after_deploy_with_a_junit_report() -> None:
    (doc,) = load_all(EXAMPLES / "ci" / "gitlab-ci.yml")
    job = doc["fracctl-drift"]
    assert job["needs"] == ["deploy"]
    assert job["artifacts"]["reports"]["junit"] == "drift.xml"
    (script,) = [s for s in job["script"] if "fracctl drift" in s]
    args = fracctl_command(script)
    assert args[0] == "drift"
    assert_options_exist(args)
