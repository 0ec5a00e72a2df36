"""``fracctl node mps install --systemd | status | uninstall`` against the stand-ins."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl import config as cfg
from fracctl.adapters.host import Host
from fracctl.adapters.systemd import Systemd
from fracctl.errors import ExitCode
from fracctl.flows import node_agent
from tests.support.fake_mps import (
    FAKE_SYSTEMCTL,
    FakeMPS,
    fake_mps,
    pid_alive,
    stop_when,
    wait_for,
    wrapper,
)
from tests.support.helpers import parse_env_file, run_cli

UNIT = "/etc/systemd/system/fracctl-mps.service"
ENV_FILE = "/etc/fracctl/mps.env"
MANIFEST = "/var/lib/fracctl/mps-install.json"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMPS]:
    with fake_mps() as f:
        for key, value in f.env(command_timeout=5).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("PATH", "/usr/bin:/bin")
        monkeypatch.setenv("FAKE_SYSTEMCTL_STATE", str(f.state / "systemctl.json"))
        f.host.mkdir()
        yield f


def systemctl(fake: FakeMPS) -> Path:
    return wrapper(fake.host / "usr" / "bin" / "systemctl", FAKE_SYSTEMCTL)


def calls(fake: FakeMPS) -> list[list[str]]:
    try:
        return list(json.loads((fake.state / "systemctl.json").read_text())["calls"])
    except OSError:
        return []


def units(fake: FakeMPS) -> dict[str, dict[str, bool]]:
    return dict(json.loads((fake.state / "systemctl.json").read_text())["units"])


def on_host(fake: FakeMPS, path: str) -> Path:
    return fake.host / path.lstrip("/")


class Daemon:
    """The stand-in daemon run directly, as if another supervisor had started it."""

    def __init__(self, fake: FakeMPS, protocol: int = 3) -> None:
        env = fake.env()
        env.update(CUDA_MPS_PIPE_DIRECTORY=str(fake.pipe), CUDA_MPS_LOG_DIRECTORY=str(fake.log))
        argv = [str(fake.binary), "-f"] + (["-p", "3"] if protocol == 3 else [])
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE)
        assert wait_for(lambda: (fake.pipe / "control").exists())

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()


@pytest.fixture
def client() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing in for a CUDA client of the daemon."""
    p = subprocess.Popen(["sleep", "60"])
    try:
        yield p
    finally:
        p.kill()
        p.wait()


# --- install --systemd --------------------------------------------------------------------


def test_dry_run_prints_the_files_and_changes_nothing(fake: FakeMPS) -> None:
    systemctl(fake)
    r = run_cli("node", "mps", "install", "--systemd", "--dry-run", "--pinned-mem-limit", "0=4096M")
    assert r.exit_code == ExitCode.OK, r.output
    assert f"--- {UNIT}" in r.stdout and f"--- {ENV_FILE}" in r.stdout
    assert "node mps install --foreground" in r.stdout
    assert 'FRACCTL_MPS_PINNED_MEM_LIMITS="0=4096M"' in r.stdout
    assert "systemctl enable fracctl-mps.service" in r.stdout
    assert not on_host(fake, UNIT).exists() and not on_host(fake, MANIFEST).exists()
    assert calls(fake) == []


def test_install_writes_reloads_enables_starts_then_is_idempotent(fake: FakeMPS) -> None:
    systemctl(fake)
    (fake.host / "etc" / "systemd" / "system").mkdir(parents=True)  # exists on any host
    r = run_cli("node", "mps", "install", "--systemd", "--active-thread-percentage", "50")
    assert r.exit_code == ExitCode.OK, r.output
    unit = on_host(fake, UNIT).read_text()
    env = on_host(fake, ENV_FILE).read_text()
    assert "ExecStart=" in unit and "KillMode=mixed" in unit
    assert 'FRACCTL_MPS_DEFAULT_ACTIVE_THREAD_PERCENTAGE="50"' in env
    assert f'CUDA_MPS_PIPE_DIRECTORY="{fake.pipe}"' in env
    assert [c for c in calls(fake) if not c[0].startswith("is-")] == [
        ["daemon-reload"],
        ["enable", "fracctl-mps.service"],
        ["start", "fracctl-mps.service"],
    ]
    assert units(fake)["fracctl-mps.service"] == {"enabled": True, "active": True}
    manifest = json.loads(on_host(fake, MANIFEST).read_text())
    assert set(manifest["files"]) == {UNIT, ENV_FILE}
    # created: /etc/fracctl and the state folders, not /etc/systemd/system
    assert "/etc/fracctl" in manifest["dirs"] and "/etc/systemd/system" not in manifest["dirs"]

    before = len(calls(fake))
    mtime = on_host(fake, UNIT).stat().st_mtime_ns
    again = run_cli("node", "mps", "install", "--systemd", "--active-thread-percentage", "50")
    assert again.exit_code == ExitCode.OK, again.output
    assert "unchanged" in again.stdout
    assert all(c[0].startswith("is-") for c in calls(fake)[before:])
    assert on_host(fake, UNIT).stat().st_mtime_ns == mtime


def test_reinstall_starts_a_stopped_unit_without_rewriting(fake: FakeMPS) -> None:
    systemctl(fake)
    assert run_cli("node", "mps", "install", "--systemd").exit_code == ExitCode.OK
    subprocess.run(
        [str(fake.host / "usr/bin/systemctl"), "stop", "fracctl-mps.service"], check=True
    )
    r = run_cli("node", "mps", "install", "--systemd")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.stdout.strip() == "systemctl start fracctl-mps.service"


def test_changed_settings_on_a_running_unit_are_not_restarted(fake: FakeMPS) -> None:
    systemctl(fake)
    assert run_cli("node", "mps", "install", "--systemd").exit_code == ExitCode.OK
    n = len(calls(fake))
    r = run_cli("node", "mps", "install", "--systemd", "--pinned-mem-limit", "0=4096M")
    assert r.exit_code == ExitCode.OK, r.output
    assert "keeps running with the old settings" in r.stdout
    assert ["daemon-reload"] in calls(fake)[n:]
    assert not any(c[0] in ("start", "restart") for c in calls(fake)[n:])
    assert "0=4096M" in on_host(fake, ENV_FILE).read_text()


def test_install_refuses_a_unit_it_did_not_write(fake: FakeMPS) -> None:
    systemctl(fake)
    theirs = on_host(fake, UNIT)
    theirs.parent.mkdir(parents=True)
    theirs.write_text("[Service]\nExecStart=/usr/local/bin/their-own\n")
    r = run_cli("node", "mps", "install", "--systemd")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "exists and was not written by fracctl" in r.stderr
    assert theirs.read_text().startswith("[Service]\nExecStart=/usr/local/bin/their-own")


def test_install_without_systemctl_is_exit_3(fake: FakeMPS) -> None:
    r = run_cli("node", "mps", "install", "--systemd")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "systemctl not found" in r.stderr and "--foreground" in r.stderr
    assert not on_host(fake, UNIT).exists()


def test_install_reports_a_failing_systemctl(
    fake: FakeMPS, monkeypatch: pytest.MonkeyPatch
) -> None:
    systemctl(fake)
    monkeypatch.setenv("FAKE_SYSTEMCTL_FAIL", "enable")
    r = run_cli("node", "mps", "install", "--systemd")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "systemctl enable fracctl-mps.service failed (exit 1): Failed to enable" in r.stderr


def test_install_verifies_the_unit_with_systemd_analyze(fake: FakeMPS) -> None:
    real = shutil.which("systemd-analyze")
    if real is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    systemctl(fake)
    (fake.host / "usr" / "bin" / "systemd-analyze").symlink_to(real)
    r = run_cli("node", "mps", "install", "--systemd")
    assert r.exit_code == ExitCode.OK, r.output
    assert on_host(fake, UNIT).is_file()


def test_rendered_unit_passes_systemd_analyze_verify(fake: FakeMPS, tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    ctx, _ = fake.context(
        pinned_mem_limits=["0=4096M", "1=4096M"], default_active_thread_percentage=50
    )
    files = node_agent.render_systemd_files(ctx)
    unit = tmp_path / "fracctl-mps.service"
    unit.write_text(files[UNIT])
    checker = Systemd(Host("/"))
    r = checker.verify(str(unit))
    assert r is not None and r.ok, r.stderr if r else None
    # and it does catch a broken unit
    unit.write_text(files[UNIT].replace("ExecStart=/", "ExecStart=relative/"))
    bad = checker.verify(str(unit))
    assert bad is not None and not bad.ok


def test_env_file_values_are_read_back_by_the_supervisor(fake: FakeMPS) -> None:
    ctx, _ = fake.context(pinned_mem_limits=["0=4096M"], health_interval=2.5, multi_user=False)
    files = node_agent.render_systemd_files(ctx)
    env = parse_env_file(files[ENV_FILE])
    loaded = cfg.load(None, env=env).mps
    assert loaded.pinned_mem_limits == ["0=4096M"]
    assert loaded.health_interval == 2.5
    assert loaded.multi_user is False
    assert loaded.pipe_dir == str(fake.pipe)


# --- status -------------------------------------------------------------------------------


def test_status_when_not_running(fake: FakeMPS) -> None:
    r = run_cli("node", "mps", "status")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "MPS control daemon: not running" in r.stdout
    assert "(absent)" in r.stdout


def test_status_json_with_servers_defaults_namespaces_clients(
    fake: FakeMPS, monkeypatch: pytest.MonkeyPatch, client: subprocess.Popen[bytes]
) -> None:
    fake.behave(spawn_server=True, clients=[client.pid], namespaces=["default", "team-a"])
    monkeypatch.setenv("FRACCTL_MPS_PINNED_MEM_LIMITS", "0=4096M")
    d = Daemon(fake)
    try:
        subprocess.run(
            [str(fake.binary)],
            input=b"set_default_device_pinned_mem_limit 0 4096M\n",
            env={**fake.env(), "CUDA_MPS_PIPE_DIRECTORY": str(fake.pipe)},
            check=True,
            capture_output=True,
        )
        r = run_cli("node", "mps", "status", "-o", "json")
    finally:
        d.stop()
    assert r.exit_code == ExitCode.OK, r.output
    st = r.json
    assert st["running"] and st["daemon_pid"] == d.proc.pid
    assert st["servers"] == fake.server_pids()
    assert st["defaults"] == {"active_thread_percentage": 100.0, "pinned_mem_limit_0": "4096M"}
    assert [n["name"] for n in st["namespaces"]] == ["default", "team-a"]
    assert st["clients"] == [{"pid": client.pid, "name": "sleep", "server": st["servers"][0]}]


def test_status_table_protocol2_has_no_namespaces(
    fake: FakeMPS, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRACCTL_MPS_PROTOCOL", "2")
    d = Daemon(fake, protocol=2)
    try:
        r = run_cli("node", "mps", "status")
    finally:
        d.stop()
    assert r.exit_code == ExitCode.OK, r.output
    assert "MPS control daemon: running" in r.stdout
    assert "namespaces" not in r.stdout
    assert "clients:        0" in r.stdout


def test_status_with_a_daemon_that_refuses(fake: FakeMPS) -> None:
    fake.behave(refuse="*")
    d = Daemon(fake)
    try:
        r = run_cli("node", "mps", "status", "-o", "json")
    finally:
        d.stop()
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["socket_present"] and not r.json["running"]
    assert "refused" in r.json["error"]


# --- uninstall ----------------------------------------------------------------------------


def test_uninstall_without_an_install(fake: FakeMPS) -> None:
    r = run_cli("node", "mps", "uninstall")
    assert r.exit_code == ExitCode.OK, r.output
    assert "nothing to uninstall" in r.stdout


def test_uninstall_refuses_while_clients_are_connected(
    fake: FakeMPS, client: subprocess.Popen[bytes]
) -> None:
    systemctl(fake)
    assert run_cli("node", "mps", "install", "--systemd").exit_code == ExitCode.OK
    fake.behave(spawn_server=True, clients=[client.pid])
    d = Daemon(fake)
    try:
        r = run_cli("node", "mps", "uninstall")
    finally:
        d.stop()
    assert r.exit_code == ExitCode.LOCKED, r.output
    assert f"1 MPS client(s) connected: pid {client.pid} (sleep)" in r.stderr
    assert "--force" in r.stderr
    assert on_host(fake, UNIT).is_file() and on_host(fake, MANIFEST).is_file()
    assert not any(c[0] == "disable" for c in calls(fake))


def test_uninstall_force_removes_only_what_install_created(
    fake: FakeMPS, client: subprocess.Popen[bytes]
) -> None:
    systemctl(fake)
    (fake.host / "etc" / "systemd" / "system").mkdir(parents=True)
    other_unit = on_host(fake, "/etc/systemd/system/other.service")
    other_unit.write_text("[Service]\nExecStart=/bin/true\n")
    assert run_cli("node", "mps", "install", "--systemd").exit_code == ExitCode.OK
    admin_file = on_host(fake, "/etc/fracctl/admin-notes.txt")
    admin_file.write_text("mine")
    fake.behave(spawn_server=True, clients=[client.pid])
    d = Daemon(fake)
    try:
        r = run_cli("node", "mps", "uninstall", "--force")
    finally:
        d.stop()
    assert r.exit_code == ExitCode.OK, r.output
    assert "--force: 1 client(s) were connected" in r.stderr
    assert "systemctl disable --now fracctl-mps.service" in r.stdout
    assert ["disable", "--now", "fracctl-mps.service"] in calls(fake)
    assert calls(fake)[-1] == ["daemon-reload"]
    assert not on_host(fake, UNIT).exists() and not on_host(fake, ENV_FILE).exists()
    assert not on_host(fake, MANIFEST).exists()
    # not created by install: untouched
    assert other_unit.read_text() == "[Service]\nExecStart=/bin/true\n"
    assert admin_file.read_text() == "mine"
    assert "kept " + str(on_host(fake, "/etc/fracctl")) in r.stdout
    assert not (fake.host / "var" / "lib" / "fracctl").exists()  # created by install, now empty


def test_uninstall_keeps_a_pipe_dir_a_running_daemon_uses(fake: FakeMPS) -> None:
    fake.host.joinpath("var/lib/fracctl").mkdir(parents=True)
    manifest = {
        "version": 1,
        "unit": None,
        "files": {},
        "dirs": [],
        "runtime_dirs": [str(fake.pipe)],
    }
    on_host(fake, MANIFEST).write_text(json.dumps(manifest))
    d = Daemon(fake)
    try:
        r = run_cli("node", "mps", "uninstall")
    finally:
        d.stop()
    assert r.exit_code == ExitCode.OK, r.output
    assert "an MPS daemon still runs there" in r.stdout
    assert f"kept {fake.pipe} (not empty" in r.stdout


def test_uninstall_needs_no_driver_when_no_daemon_runs(
    fake: FakeMPS, monkeypatch: pytest.MonkeyPatch
) -> None:
    systemctl(fake)
    assert run_cli("node", "mps", "install", "--systemd").exit_code == ExitCode.OK
    monkeypatch.setenv("FRACCTL_MPS_CONTROL_BINARY", "nvidia-cuda-mps-control-removed")
    r = run_cli("node", "mps", "uninstall")
    assert r.exit_code == ExitCode.OK, r.output
    assert not on_host(fake, UNIT).exists()


def test_uninstall_removes_runtime_dirs_only_when_empty(fake: FakeMPS) -> None:
    ctx, _ = fake.context(health_interval=0.1, graceful_stop=3)
    stop = threading.Event()
    stop_when(stop, lambda: "get_default_active_thread_percentage" in fake.commands())
    node_agent.supervise(ctx, stop=stop, tick=0.02)
    assert (fake.log / "control.log").is_file()
    r = run_cli("node", "mps", "uninstall")
    assert r.exit_code == ExitCode.OK, r.output
    assert f"removed {fake.pipe}" in r.stdout  # empty after quit
    assert f"kept {fake.log} (not empty" in r.stdout  # the daemon's logs are not ours
    assert fake.log.is_dir() and not fake.pipe.exists()
    assert all(not pid_alive(p) for p in fake.daemon_pids())
