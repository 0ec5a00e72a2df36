"""`fracctl sandbox` with its controllers, scheduler and KWOK: the probe the incident
needs, and a component that cannot start.

Each test starts its own control plane through ``sandbox up``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from fracctl.sandbox.controllers import find_kwok
from fracctl.sandbox.controlplane import ControlPlane, alive
from tests.support.helpers import run_cli
from tests.support.sandbox import rtx_ready

pytestmark = pytest.mark.cluster


def test_a_fractional_probe_waits_on_a_pool_without_daemons_and_runs_where_they_run(
    tmp_path: Path,
) -> None:
    state = str(tmp_path / "sbx")
    r = run_cli("sandbox", "up", "--state-dir", state)
    assert r.exit_code == ExitCode.OK, r.output
    config = str(Path(state, "fracctl.yaml"))
    try:
        assert rtx_ready(Path(state))
        # The B200 pool: no agent runs there, so KAI (simulated) leaves the probe Pending.
        waiting = run_cli(
            "--config", config, "probe", "--memory", "4Gi",
            "--pool", "example.org/gpu-class=b200", "--expect", "not-ready", "-o", "json",
        )  # fmt: skip
        assert waiting.exit_code == ExitCode.OK, waiting.output
        assert waiting.json["outcome"] == "not-ready"
        assert "is not ready for fractional GPU scheduling" in waiting.output
        assert "Reason: ConditionNotFound" in waiting.output
        # The opt-in pool (the RTX node, whose agents run): bound, and KWOK runs it.
        ran = run_cli(
            "--config", config, "probe", "--memory", "4Gi", "--expect", "running", "-o", "json"
        )
        assert ran.exit_code == ExitCode.OK, ran.output
        assert ran.json["node"] == "rtx-pro-6000-0"
    finally:
        run_cli("sandbox", "down", "--state-dir", state)


def test_a_component_that_exits_at_start_fails_up_and_leaves_nothing_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "kwok"
    shutil.copytree(find_kwok() / "stages", broken / "stages")
    (broken / "kwok").write_text("#!/bin/sh\necho 'no stages found' >&2\nexit 3\n")
    (broken / "kwok").chmod(0o755)
    monkeypatch.setenv("FRACCTL_KWOK_DIR", str(broken))
    state = tmp_path / "sbx"
    r = run_cli("sandbox", "up", "--state-dir", str(state))
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "kwok exited at start (3): no stages found" in r.stderr
    assert f"see {state / 'controlplane' / 'logs' / 'kwok.log'}" in r.stderr
    assert "Traceback" not in r.output
    cp = ControlPlane.load(state / "controlplane")
    assert cp is not None
    assert not any(alive(p) for p in [cp.etcd_pid, cp.apiserver_pid, *cp.components.values()])
    run_cli("sandbox", "down", "--state-dir", str(state))


def test_a_kwok_folder_without_kwok_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRACCTL_KWOK_DIR", str(tmp_path))
    r = run_cli("sandbox", "up", "--state-dir", str(tmp_path / "sbx"))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert f"FRACCTL_KWOK_DIR={tmp_path} lacks kwok or stages/" in r.stderr
    assert not (tmp_path / "sbx").exists()


def test_control_plane_binaries_without_the_controllers_are_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "etcd").touch()
    (tmp_path / "kube-apiserver").touch()
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    r = run_cli("sandbox", "up", "--state-dir", str(tmp_path / "sbx"))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "lacks kube-controller-manager, kube-scheduler" in r.stderr
