"""``fracctl sandbox up --argocd --clusters 3``: a gated fleet that Argo CD rolls out.

Three member clusters beside the sandbox (each seeded with the incident, guarded, its
operator simulation and pod runner in one process), the real Argo CD with the
applicationset-controller and the fleet's ApplicationSet. A commit of git's selector is
the rollout: the canary's gate refuses (b200-0 lacks the opt-in label), `fleet status`
names the fix, and once the nodes are labelled Argo CD's retries finish every cluster.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.errors import ExitCode
from fracctl.sandbox import argocd_local, fleet_box, fleet_wiring
from fracctl.sandbox.controlplane import alive
from fracctl.sandbox.layout import Sandbox
from tests.support.argocd_real import require_built
from tests.support.helpers import run_cli

pytestmark = pytest.mark.e2e

GIT_SELECTOR = "example.org/gpu-fractions: enabled"


def exports(text: str) -> dict[str, str]:
    return dict(line.removeprefix("export ").split("=", 1) for line in text.splitlines())


def fleet_status(state: str, *args: str) -> Any:
    kubeconfig = str(Sandbox(Path(state)).kubeconfig)
    return run_cli("--kubeconfig", kubeconfig, "fleet", "status", "--appset",
                   fleet_wiring.APPSET, "-n", argocd_local.NAMESPACE, *args)  # fmt: skip


def wait_status(state: str, done: Any, what: str, timeout: float = 300) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        r = fleet_status(state, "-o", "json")
        if r.stdout.strip() and done(r):
            return r
        assert time.monotonic() < deadline, f"{what}: {r.output}"
        time.sleep(1)


def refresh(state: str) -> None:
    kube = Kube.connect(kubeconfig=str(Sandbox(Path(state)).kubeconfig))
    for app in kube.list(argocd_local.APPLICATIONS, namespace=argocd_local.NAMESPACE):
        kube.patch(argocd_local.APPLICATIONS, app["metadata"]["name"], {"metadata": {
            "annotations": {"argocd.argoproj.io/refresh": "normal"}}},
            namespace=argocd_local.NAMESPACE)  # fmt: skip


def test_sandbox_up_clusters_3_rolls_a_gated_fleet_out(tmp_path: Path) -> None:
    require_built()
    state = str(tmp_path / "sandbox")
    up = run_cli("sandbox", "up", "--argocd", "--clusters", "3", "--state-dir", state)
    pids: list[int] = []
    try:
        assert up.exit_code == ExitCode.OK, up.output
        assert "fracctl fleet status --appset gpu-fractioning" in up.stdout
        st = run_cli("sandbox", "status", "-o", "json", "--state-dir", state).json
        assert [m["name"] for m in st["members"]] == ["member-1", "member-2", "member-3"]
        assert all(m["running"] for m in st["members"]), st["members"]
        env = exports(run_cli("sandbox", "env", "--cluster", "member-2", "--state-dir",
                              state).stdout)  # fmt: skip
        assert env["KUBECONFIG"].endswith("members/member-2/controlplane/kubeconfig")
        wait_status(state, lambda r: r.json["done"] and len(r.json["clusters"]) == 3,
                    "the fleet did not start in sync")  # fmt: skip
        box = Sandbox(Path(state))
        repo = box.root / "fleet-git"
        text = (repo / "app" / "gpufractioningconfig.yaml").read_text()
        live = "example.org/gpu-class: rtx-pro-6000"
        assert live in text
        fleet_wiring.commit_config(repo, text.replace(live, GIT_SELECTOR), "select by label")
        refresh(state)
        stopped = wait_status(state, lambda r: r.json["stopped"] == ["gpu-fractioning-member-1"],
                              "the canary's gate did not refuse")  # fmt: skip
        table = fleet_status(state)
        assert table.exit_code == ExitCode.FINDING, table.output
        assert "fracctl nodes label b200-0" in table.stdout, table.stdout
        assert stopped.json["clusters"][1]["status"] == "Waiting"
        for member in fleet_box.members_of(box).values():
            r = run_cli("-c", str(member.config_file), "nodes", "label", "b200-0")
            assert r.exit_code == ExitCode.OK, r.output

        def rolled_out(r: Any) -> bool:
            members = run_cli("sandbox", "status", "-o", "json", "--state-dir", state).json
            want = {"example.org/gpu-fractions": "enabled"}
            return bool(r.json["done"]) and all(
                m.get("nodeSelector") == want for m in members["members"]
            )

        wait_status(state, rolled_out, "the rollout did not finish once the nodes were labelled")
    finally:
        st = run_cli("sandbox", "status", "-o", "json", "--state-dir", state)
        doc = st.json if st.stdout.strip() else {}
        pids = list(((doc.get("argocd") or {}).get("pids") or {}).values())
        down = run_cli("sandbox", "down", "--state-dir", state)
    assert down.exit_code == ExitCode.OK, down.output
    assert not [pid for pid in pids if alive(pid)]
    assert not (tmp_path / "sandbox").exists()


def test_clusters_without_argocd_is_usage_and_starts_nothing(tmp_path: Path) -> None:
    state = tmp_path / "sandbox"
    r = run_cli("sandbox", "up", "--clusters", "3", "--state-dir", str(state))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "--clusters needs --argocd" in r.stderr
    assert not state.exists()


def test_env_of_an_unknown_member_is_usage(tmp_path: Path) -> None:
    r = run_cli("sandbox", "env", "--cluster", "member-9", "--state-dir", str(tmp_path / "none"))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "the sandbox is not running" in r.stderr
