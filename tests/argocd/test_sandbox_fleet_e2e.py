"""``fracctl sandbox up --argocd --clusters N``: a gated fleet that Argo CD rolls out.

Member clusters beside the sandbox (each seeded with the incident, guarded, its
operator simulation and pod runner in one process), the real Argo CD with the
applicationset-controller and the fleet's ApplicationSet. The fleet starts in sync (git
holds the clusters' live config); a commit of git's selector is the rollout.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.errors import ExitCode
from fracctl.sandbox import argocd_local, fleet_box, fleet_wiring
from fracctl.sandbox.controlplane import alive
from fracctl.sandbox.layout import Sandbox
from fracctl.sandbox.pod_runner.launch import SECRETS
from tests.support.argocd_real import require_built
from tests.support.helpers import run_cli

pytestmark = pytest.mark.e2e


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


def test_sandbox_up_clusters_starts_a_gated_fleet_that_argo_cd_rolls_out(tmp_path: Path) -> None:
    """One member keeps the suite short (benchmarks/bench_gate.py runs three, the selector
    change included; tests/argocd/test_argocd_gate_e2e.py holds the gate's scenarios)."""
    require_built()
    state = str(tmp_path / "sandbox")
    up = run_cli("sandbox", "up", "--argocd", "--clusters", "1", "--state-dir", state)
    pids: list[int] = []
    try:
        assert up.exit_code == ExitCode.OK, up.output
        assert "fracctl fleet status --appset gpu-fractioning" in up.stdout
        assert f"fleet git:  {Path(state) / 'fleet-git'} (commit to app/ there" in up.stdout
        assert "member:     member-1 (step canary) https://" in up.stdout
        st = run_cli("sandbox", "status", "-o", "json", "--state-dir", state).json
        (member,) = st["members"]
        assert member["name"] == "member-1" and member["running"], member
        assert member["nodeSelector"] == {"example.org/gpu-class": "rtx-pro-6000"}
        lines = run_cli("sandbox", "env", "--cluster", "member-1", "--state-dir", state).stdout
        env = exports(lines)
        # Argo CD's own CLI, for the fixes fracctl prints (argocd app sync APP), as written.
        get = "argocd app get gpu-fractioning-member-1 -o json"
        shell = subprocess.run(
            ["bash", "-c", f"{lines}\n{get}"], capture_output=True, text=True, timeout=60
        )
        assert shell.returncode == 0, shell.stderr
        assert json.loads(shell.stdout)["metadata"]["name"] == "gpu-fractioning-member-1"
        assert st["argocd"]["app"] == "hub-incident"  # apart from the ApplicationSet's name
        assert env["KUBECONFIG"].endswith("members/member-1/controlplane/kubeconfig")
        assert env["FRACCTL_CONFIG"] == member["config"]
        # The member's git is the fleet's (what Argo CD syncs), and its gate reads the hub.
        assert f"repo: {Path(state) / 'fleet-git'}\n" in Path(member["config"]).read_text()
        kube = Kube.connect(kubeconfig=env["KUBECONFIG"])
        try:
            assert kube.get_or_none(SECRETS, "fracctl-gate-fleet", "fracctl") is not None
        finally:
            kube.close()
        other = run_cli("sandbox", "env", "--cluster", "member-2", "--state-dir", state)
        assert other.exit_code == ExitCode.USAGE and "members: member-1" in other.stderr
        # The fleet starts in sync: its first rollout ran the gate's hooks, which passed.
        done = wait_status(state, lambda r: r.json["done"] and len(r.json["clusters"]) == 1,
                           "the fleet did not start in sync")  # fmt: skip
        assert done.json["clusters"][0]["step"] == "1"
        assert done.json["clusters"][0]["cluster"] == "member-1"
        drift = run_cli("-c", member["config"], "drift")  # git is the fleet's: in sync
        assert drift.exit_code == ExitCode.OK, drift.output
        box = Sandbox(Path(state))
        log = (fleet_box.members_of(box)["member-1"].root / "operator-sim.log").read_text()
        assert "pod-runner: fracctl/fracctl-gate-pre-sync exit 0" in log
        assert "pod-runner: fracctl/fracctl-gate-post-sync exit 0" in log
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
