"""`fracctl sandbox` against the real control plane and KWOK processes it starts itself."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from fracctl.sandbox.controlplane import ControlPlane, alive
from tests.support.helpers import run_cli

pytestmark = pytest.mark.cluster


def wait_for(predicate, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("condition not met in time")


def test_up_status_down_twice(tmp_path: Path) -> None:
    state = str(tmp_path / "sbx")
    for _ in range(2):
        r = run_cli("sandbox", "up", "--state-dir", state)
        assert r.exit_code == ExitCode.OK, r.output
        cp = ControlPlane.load(Path(state, "controlplane"))
        assert cp is not None and cp.alive()
        try:
            nodes = subprocess.run(
                ["kubectl", "--kubeconfig", cp.kubeconfig, "get", "nodes", "-o", "name"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            assert sorted(nodes) == [
                "node/b200-0",
                "node/cpu-0",
                "node/h200-0",
                "node/rtx-pro-6000-0",
            ]

            def rtx_ready() -> dict | None:  # type: ignore[type-arg]
                st = run_cli("sandbox", "status", "--state-dir", state, "-o", "json")
                assert st.exit_code == ExitCode.OK, st.output
                data = st.json
                ready = {n["name"]: n["ready"] for n in data["nodes"]}
                return data if ready["rtx-pro-6000-0"] == "True" else None

            data = wait_for(rtx_ready)
            ready = {n["name"]: n["ready"] for n in data["nodes"]}
            assert ready == {
                "rtx-pro-6000-0": "True",
                "b200-0": "missing",
                "h200-0": "missing",
                "cpu-0": "missing",
            }
            assert data["target"]["nodeSelector"] == {"example.org/gpu-class": "rtx-pro-6000"}
            assert data["operator_simulation"] == "running"
            assert data["kai_simulation"] == "running"
            assert data["components"] == dict.fromkeys(
                ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"],
                "running",
            )
            # The agents run where the config selects, put there by the real controllers.
            pods = subprocess.run(
                ["kubectl", "--kubeconfig", cp.kubeconfig, "-n", "gpu-fractioning", "get",
                 "pods", "-l", "app.kubernetes.io/managed-by=gpu-fractioning",
                 "-o", "jsonpath={.items[*].spec.nodeName}"],
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
            assert pods == ["rtx-pro-6000-0", "rtx-pro-6000-0"]
            cfg_text = Path(data["config"]).read_text()
            assert "gitops" in cfg_text

            again = run_cli("sandbox", "up", "--state-dir", state)
            assert again.exit_code == ExitCode.OK, again.output
            assert "already running" in again.stdout

            env = run_cli("sandbox", "env", "--state-dir", state)
            assert env.exit_code == ExitCode.OK, env.output
            assert f"export KUBECONFIG={cp.kubeconfig}" in env.stdout
            assert cp.admin_token not in env.output
        finally:
            pids = [cp.etcd_pid, cp.apiserver_pid, *cp.components.values()]
            sim_pid = int(Path(state, "operator-sim.pid").read_text())
            r = run_cli("sandbox", "down", "--state-dir", state)
        assert r.exit_code == ExitCode.OK, r.output
        assert not any(alive(p) for p in [*pids, sim_pid])
        assert not Path(state).exists()
    r = run_cli("sandbox", "down", "--state-dir", state)
    assert r.exit_code == ExitCode.OK, r.output
    assert "was not running" in r.stdout
    st = run_cli("sandbox", "status", "--state-dir", state)
    assert st.exit_code == ExitCode.FINDING, st.output
    env = run_cli("sandbox", "env", "--state-dir", state)
    assert env.exit_code == ExitCode.USAGE, env.output
    assert "not running" in env.stderr


def test_bad_scenario_is_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("nodes: [ {name: a}\n")
    r = run_cli("sandbox", "up", "--state-dir", str(tmp_path / "sbx"), "--scenario", str(bad))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "not valid YAML" in r.stderr
    assert not (tmp_path / "sbx").exists()
    bad.write_text(json.dumps({"nodes": [{}]}))
    r = run_cli("sandbox", "up", "--state-dir", str(tmp_path / "sbx"), "--scenario", str(bad))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "nodes[0] needs a name" in r.stderr
