"""`fracctl sandbox`: restarting in the same shell, and an operator simulation that must start.

Each test starts its own real control plane through ``sandbox up``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fracctl.errors import ExitCode
from fracctl.sandbox import flow
from fracctl.sandbox.controlplane import ControlPlane, alive
from tests.support.helpers import Result, run_cli
from tests.support.sandbox import rtx_ready

pytestmark = pytest.mark.cluster


def pids_of(state: Path) -> list[int]:
    cp = ControlPlane.load(state / "controlplane")
    assert cp is not None
    pids = [cp.etcd_pid, cp.apiserver_pid, *cp.components.values()]
    sim = state / "operator-sim.pid"
    if sim.is_file():
        pids.append(int(sim.read_text()))
    return pids


def up(state: Path) -> Result:
    return run_cli("sandbox", "up", "--state-dir", str(state))


def test_up_again_in_the_shell_of_a_removed_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "sbx"
    r = up(state)
    assert r.exit_code == ExitCode.OK, r.output
    try:
        env = run_cli("sandbox", "env", "--state-dir", str(state))
        assert env.exit_code == ExitCode.OK, env.output
        for line in env.stdout.splitlines():  # eval "$(fracctl sandbox env)"
            name, value = line.removeprefix("export ").split("=", 1)
            monkeypatch.setenv(name, value)
        assert Path(value).is_file()
    finally:
        r = run_cli("sandbox", "down", "--state-dir", str(state))
    assert r.exit_code == ExitCode.OK, r.output
    assert not state.exists()

    # The same shell: FRACCTL_CONFIG and KUBECONFIG name files that `down` removed.
    r = run_cli("sandbox", "down", "--state-dir", str(state))
    assert r.exit_code == ExitCode.OK, r.output
    assert "was not running" in r.stdout
    st = run_cli("sandbox", "status", "--state-dir", str(state))
    assert st.exit_code == ExitCode.FINDING, st.output
    env = run_cli("sandbox", "env", "--state-dir", str(state))
    assert env.exit_code == ExitCode.USAGE, env.output
    assert "not running" in env.stderr
    r = up(state)
    assert r.exit_code == ExitCode.OK, r.output
    assert "config file not found" not in r.output
    assert "warning" not in r.stderr  # its own config: nothing to warn about
    try:
        assert rtx_ready(state)
        # The exported variables are right again.
        r = run_cli("nodes", "check", "-o", "json")
        assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    finally:
        r = run_cli("sandbox", "down", "--state-dir", str(state))
    assert r.exit_code == ExitCode.OK, r.output

    # A missing config that is not the sandbox's own: ignored, with a warning.
    monkeypatch.setenv("FRACCTL_CONFIG", str(tmp_path / "elsewhere" / "fracctl.yaml"))
    st = run_cli("sandbox", "status", "--state-dir", str(state))
    assert st.exit_code == ExitCode.FINDING, st.output
    assert "elsewhere/fracctl.yaml, which does not exist: ignored" in st.stderr
    # Named with --config, a missing file stays an error.
    st = run_cli("--config", str(tmp_path / "nope.yaml"), "sandbox", "status")
    assert st.exit_code == ExitCode.USAGE, st.output
    assert "config file not found" in st.stderr


def test_a_fracctl_folder_in_the_working_directory_does_not_matter(tmp_path: Path) -> None:
    shadow = tmp_path / "fracctl"  # tmp_path is the working directory
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('not the fracctl package')\n")
    (shadow / "__main__.py").write_text("raise SystemExit(9)\n")
    # A relative --state-dir as well: the simulation runs in the sandbox folder, so every
    # path it is given (and that fracctl.yaml and `sandbox env` hold) must be absolute.
    r = run_cli("sandbox", "up", "--state-dir", "sbx")
    assert r.exit_code == ExitCode.OK, r.output
    state = tmp_path / "sbx"
    try:
        assert rtx_ready(state)
        assert "not the fracctl package" not in (state / "operator-sim.log").read_text()
        assert (
            f"kubeconfig: {state}/controlplane/kubeconfig" in (state / "fracctl.yaml").read_text()
        )
        env = run_cli("sandbox", "env", "--state-dir", "sbx")
        assert f"export FRACCTL_CONFIG={state}/fracctl.yaml" in env.stdout
    finally:
        pids = pids_of(state)
        r = run_cli("sandbox", "down", "--state-dir", str(state))
    assert r.exit_code == ExitCode.OK, r.output
    assert not any(alive(p) for p in pids)


def test_up_fails_when_the_simulation_dies_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        flow,
        "simulation_argv",
        lambda box: [sys.executable, "-c", "print('ImportError: boom'); raise SystemExit(7)"],
    )
    state = tmp_path / "sbx"
    r = up(state)
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "operator simulation exited at start (exit 7): ImportError: boom" in r.stderr
    assert f"see {state / 'operator-sim.log'}" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 or "starting" in r.stderr
    assert "Traceback" not in r.output
    # Nothing keeps running; the logs stay; the next `up` starts clean.
    assert not any(alive(p) for p in pids_of(state))
    st = run_cli("sandbox", "status", "--state-dir", str(state))
    assert st.exit_code == ExitCode.FINDING, st.output
    monkeypatch.undo()
    r = up(state)
    assert r.exit_code == ExitCode.OK, r.output
    try:
        assert rtx_ready(state)
    finally:
        pids = pids_of(state)
        run_cli("sandbox", "down", "--state-dir", str(state))
    assert not any(alive(p) for p in pids)


def test_up_fails_when_the_simulation_never_gets_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        flow, "simulation_argv", lambda box: [sys.executable, "-c", "import time; time.sleep(60)"]
    )
    monkeypatch.setattr(flow, "SIM_START_TIMEOUT", 2.0)
    state = tmp_path / "sbx"
    r = up(state)
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "operator simulation did not get ready within 2s" in r.stderr
    assert not any(alive(p) for p in pids_of(state))
    r = run_cli("sandbox", "down", "--state-dir", str(state))
    assert r.exit_code == ExitCode.OK, r.output


def test_down_stops_everything_with_the_sandbox_config_made_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sandbox down` reads no fracctl.yaml: with the sandbox's own config rejected (its
    recreate.backend set to a value fracctl refuses, named by FRACCTL_CONFIG as `sandbox
    env` exports it), every process it started is stopped and its state removed."""

    state = tmp_path / "sbx"
    up = run_cli("sandbox", "up", "--state-dir", str(state))
    assert up.exit_code == ExitCode.OK, up.output
    cp = ControlPlane.load(state / "controlplane")
    assert cp is not None and cp.alive()
    cfg = state / "fracctl.yaml"
    cfg.write_text(cfg.read_text().replace("  backend: apply\n", "  backend: nope\n"))
    monkeypatch.setenv("FRACCTL_CONFIG", str(cfg))
    assert run_cli("config", "view").exit_code == ExitCode.USAGE
    down = run_cli("sandbox", "down", "--state-dir", str(state))
    assert down.exit_code == ExitCode.OK, down.output
    assert down.stdout == "sandbox stopped\n"
    assert not cp.alive() and not state.exists()
