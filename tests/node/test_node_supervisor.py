"""The foreground supervisor against the stand-in control daemon.

Durations are configuration, shortened here so each test runs in about a second.
Waits are bounded safety nets; nothing asserts how long anything took.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.errors import ExitCode, ExternalError, TimedOut, Unsafe
from fracctl.flows import node_agent
from tests.support.fake_mps import FakeMPS, fake_mps, pid_alive, stop_when, wait_for
from tests.support.helpers import run_cli

REPO = Path(__file__).resolve().parents[2]
FAST = {
    "health_interval": 0.1,
    "backoff": 0.05,
    "max_backoff": 1,
    "stable_threshold": 30,
    "max_retries": 3,
    # Limits a failing run meets to say why; a passing one never waits them out, so they
    # are wide enough for a loaded machine (a busy CI host took over 3 s to stop one).
    "start_timeout": 10,
    "command_timeout": 5,
    "graceful_stop": 10,
}
HEALTH = "get_default_active_thread_percentage"


@pytest.fixture
def fake() -> Iterator[FakeMPS]:
    with fake_mps() as f:
        yield f


def all_gone(fake: FakeMPS) -> list[int]:
    """PIDs of stand-in daemons or servers still alive (should be none)."""
    return [p for p in fake.daemon_pids() + fake.server_pids() if pid_alive(p)]


def health_checks(fake: FakeMPS) -> int:
    return fake.commands().count(HEALTH)


def test_start_defaults_health_and_clean_stop(fake: FakeMPS) -> None:
    fake.behave(spawn_server=True)
    ctx, err = fake.context(
        **FAST, pinned_mem_limits=["0=4096M", "1=8G"], default_active_thread_percentage=50
    )
    stop = threading.Event()
    stop_when(stop, lambda: health_checks(fake) >= 4)
    message = node_agent.supervise(ctx, stop=stop, tick=0.02)

    assert message.startswith("stopped cleanly"), err.getvalue()
    cmds = fake.commands()
    # readiness probe, then the defaults, then periodic health checks, then quit
    assert cmds[0] == HEALTH
    assert cmds[1:3] == [
        "set_default_active_thread_percentage 50",
        "set_default_device_pinned_mem_limit 0 4096M",
    ]
    assert cmds[3] == "set_default_device_pinned_mem_limit 1 8192M"
    assert cmds[-1] == "quit" and cmds.count(HEALTH) >= 4
    log = err.getvalue()
    assert "-f -p 3 -m" in log
    assert "ready in" in log and "applied set_default_device_pinned_mem_limit 0 4096M" in log
    assert "exited with code 0" in log and "after quit" in log
    assert all_gone(fake) == []
    assert not (fake.pipe / "control").exists()
    # the folders it created are recorded for uninstall
    manifest = json.loads((fake.host / "var/lib/fracctl/mps-install.json").read_text())
    assert manifest["runtime_dirs"] == [str(fake.pipe), str(fake.log)]


def test_protocol2_single_user_argv(fake: FakeMPS) -> None:
    ctx, err = fake.context(**FAST, protocol=2, multi_user=False)
    stop = threading.Event()
    stop_when(stop, lambda: health_checks(fake) >= 2)
    node_agent.supervise(ctx, stop=stop, tick=0.02)
    assert "nvidia-cuda-mps-control -f\n" in err.getvalue()


def test_crash_restarts_with_backoff_and_reapplies_defaults(fake: FakeMPS) -> None:
    # Each of the first two runs crashes right after its second health check, so the
    # crash comes after the defaults were applied, however slow the machine is.
    fake.behave(spawn_server=True, crash_after_health=2, crash_runs=2)
    ctx, err = fake.context(**FAST, pinned_mem_limits=["0=4096M"])
    stop = threading.Event()
    stop_when(
        stop,
        lambda: (
            len(fake.daemon_pids()) >= 3
            and fake.commands().count("set_default_device_pinned_mem_limit 0 4096M") >= 3
            and health_checks(fake) >= 8
        ),
    )
    message = node_agent.supervise(ctx, stop=stop, tick=0.02)

    log = err.getvalue()
    assert message.startswith("stopped cleanly"), log
    assert "exited with code 1; restart 1/3 in 0.05s" in log
    assert "exited with code 1; restart 2/3 in 0.1s" in log
    assert "removed stale" in log  # the crash left socket and PID file behind
    assert "leftover process" in log  # and its server, killed before the restart
    # each new daemon got the limit again: a restart forgets the defaults
    assert fake.commands().count("set_default_device_pinned_mem_limit 0 4096M") == 3
    assert all_gone(fake) == []


def test_a_crash_while_applying_defaults_is_a_crash_not_a_refusal(fake: FakeMPS) -> None:
    fake.behave(crash_after_health=1, crash_runs=1)  # dies right after the readiness probe
    ctx, err = fake.context(**FAST, pinned_mem_limits=["0=4096M"])
    stop = threading.Event()
    stop_when(stop, lambda: len(fake.daemon_pids()) >= 2 and health_checks(fake) >= 4)
    message = node_agent.supervise(ctx, stop=stop, tick=0.02)
    log = err.getvalue()
    assert message.startswith("stopped cleanly"), log
    assert "failed while the defaults were applied" in log
    assert "restart 1/3" in log and "refused a default" not in log
    assert all_gone(fake) == []


def test_backoff_resets_after_a_stable_run(fake: FakeMPS) -> None:
    fake.behave(crash_after_health=2, crash_runs=1)
    ctx, err = fake.context(**{**FAST, "stable_threshold": 0.5})
    stop = threading.Event()
    stop_when(stop, lambda: "backoff reset" in err.getvalue())
    node_agent.supervise(ctx, stop=stop, tick=0.02)
    log = err.getvalue()
    assert "restart 1/3" in log
    assert "stable, restart backoff reset" in log


def test_gives_up_after_max_retries(fake: FakeMPS) -> None:
    fake.behave(spawn_server=True, crash_after_health=2)
    ctx, err = fake.context(**{**FAST, "max_retries": 2})
    with pytest.raises(ExternalError) as e:
        node_agent.supervise(ctx, stop=threading.Event(), tick=0.02)
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert "failed 3 time(s) in a row" in str(e.value)
    assert "gave up after 2 restart(s)" in str(e.value)
    log = err.getvalue()
    assert "restart 1/2 in 0.05s" in log and "restart 2/2 in 0.1s" in log
    assert "giving up" in log
    assert len(fake.daemon_pids()) == 3
    assert all_gone(fake) == []


def test_start_timeout_without_a_socket(fake: FakeMPS) -> None:
    fake.behave(no_socket=True, spawn_server=True)
    ctx, err = fake.context(**{**FAST, "start_timeout": 0.3, "max_retries": 1})
    with pytest.raises(ExternalError, match="did not answer within 0.3s"):
        node_agent.supervise(ctx, stop=threading.Event(), tick=0.02)
    assert "restart 1/1" in err.getvalue()
    assert all_gone(fake) == []


def test_refused_defaults_stop_the_daemon(fake: FakeMPS) -> None:
    fake.behave(spawn_server=True, refuse=["set_default_device_pinned_mem_limit"])
    ctx, err = fake.context(**FAST, pinned_mem_limits=["0=4096M"])
    with pytest.raises(ExternalError) as e:
        node_agent.supervise(ctx, stop=threading.Event(), tick=0.02)
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert "refused 'set_default_device_pinned_mem_limit 0 4096M'" in str(e.value)
    assert "no client runs without the configured limits" in str(e.value)
    assert fake.commands()[-1] == "quit"
    assert all_gone(fake) == []


def test_unhealthy_daemon_is_restarted(fake: FakeMPS) -> None:
    fake.behave(spawn_server=True)
    ctx, err = fake.context(**{**FAST, "health_failures": 2})
    stop = threading.Event()

    def script() -> None:
        wait_for(lambda: health_checks(fake) >= 2)
        fake.behave(spawn_server=True, refuse=[HEALTH])  # the daemon stops answering
        wait_for(lambda: "unhealthy" in err.getvalue())
        fake.behave(spawn_server=True)  # and the new one is fine
        wait_for(lambda: len(fake.daemon_pids()) >= 2 and "ready in" in err.getvalue())
        first_ready = err.getvalue().count("ready in")
        wait_for(lambda: err.getvalue().count("ready in") > first_ready or first_ready >= 2)
        stop.set()

    threading.Thread(target=script, daemon=True).start()
    message = node_agent.supervise(ctx, stop=stop, tick=0.02)
    log = err.getvalue()
    assert message.startswith("stopped"), log
    assert "health check failed (1/2)" in log and "health check failed (2/2)" in log
    assert "unhealthy: 2 health checks failed in a row; restart 1/3" in log
    assert len(fake.daemon_pids()) >= 2
    assert all_gone(fake) == []


def test_hanging_quit_is_killed_after_the_grace_period(fake: FakeMPS) -> None:
    fake.behave(spawn_server=True, hang_quit=True)
    ctx, err = fake.context(**{**FAST, "graceful_stop": 0.5})
    stop = threading.Event()
    stop_when(stop, lambda: health_checks(fake) >= 2)
    with pytest.raises(TimedOut) as e:
        node_agent.supervise(ctx, stop=stop, tick=0.02)
    assert e.value.exit_code == ExitCode.TIMEOUT
    assert "did not quit within 0.5s" in str(e.value)
    log = err.getvalue()
    assert "sending quit" in log and "quit not finished after 0.5s" in log
    daemon, server = fake.daemon_pids()[0], fake.server_pids()[0]
    assert f"pids [{daemon}, {server}]" in log
    assert all_gone(fake) == []


def test_stop_while_waiting_to_restart(fake: FakeMPS) -> None:
    fake.behave(exit_at_start=7)
    ctx, err = fake.context(**{**FAST, "backoff": 30, "max_backoff": 30})
    stop = threading.Event()
    stop_when(stop, lambda: "restart 1/3 in 30s" in err.getvalue())
    message = node_agent.supervise(ctx, stop=stop, tick=0.02)
    assert message == "stopped: no daemon was running"
    assert "exited with code 7 before it was ready" in err.getvalue()
    assert all_gone(fake) == []


def test_refuses_when_a_daemon_already_runs(fake: FakeMPS) -> None:
    env = fake.env()
    env.update({"CUDA_MPS_PIPE_DIRECTORY": str(fake.pipe), "CUDA_MPS_LOG_DIRECTORY": str(fake.log)})
    other = subprocess.Popen([str(fake.binary), "-f"], env=env, stdin=subprocess.PIPE)
    try:
        assert wait_for(lambda: (fake.pipe / "control").exists())
        ctx, _ = fake.context(**FAST)
        with pytest.raises(Unsafe, match=f"already runs \\(pid {other.pid}\\)"):
            node_agent.supervise(ctx, stop=threading.Event())
    finally:
        other.kill()
        other.wait()
        if other.stdin is not None:
            other.stdin.close()


def test_cli_exit_codes_for_failures(fake: FakeMPS, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.behave(exit_at_start=1)
    for key, value in fake.env(**{**FAST, "max_retries": 0}).items():
        monkeypatch.setenv(key, value)
    r = run_cli("node", "mps", "install", "--foreground")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "Error: the MPS control daemon failed 1 time(s) in a row" in r.stderr
    assert "Traceback" not in r.output


def test_cli_exit_code_5_when_already_running(
    fake: FakeMPS, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = fake.env(**FAST)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    env.update({"CUDA_MPS_PIPE_DIRECTORY": str(fake.pipe), "CUDA_MPS_LOG_DIRECTORY": str(fake.log)})
    other = subprocess.Popen([str(fake.binary), "-f"], env=env, stdin=subprocess.PIPE)
    try:
        assert wait_for(lambda: (fake.pipe / "control").exists())
        r = run_cli("node", "mps", "install", "--foreground")
    finally:
        other.kill()
        other.wait()
        if other.stdin is not None:
            other.stdin.close()
    assert r.exit_code == ExitCode.LOCKED, r.output
    assert f"already runs (pid {other.pid})" in r.stderr


def test_a_stale_pid_file_naming_a_live_process_is_not_a_daemon(fake: FakeMPS) -> None:
    # After a container restart the hostPath pipe dir may name a PID reused by anything.
    fake.pipe.mkdir(parents=True)
    (fake.pipe / "nvidia-cuda-mps-control.pid").write_text(f"{os.getpid()}\n")
    ctx, err = fake.context(**FAST)
    stop = threading.Event()
    stop_when(stop, lambda: health_checks(fake) >= 2)
    assert node_agent.supervise(ctx, stop=stop, tick=0.02).startswith("stopped cleanly")
    assert f"PID file names pid {os.getpid()} but its control socket does not answer" in (
        err.getvalue()
    )


def test_cli_needs_exactly_one_mode() -> None:
    for args in ([], ["--systemd", "--foreground"], ["--foreground", "--dry-run"]):
        r = run_cli("node", "mps", "install", *args)
        assert r.exit_code == ExitCode.USAGE, r.output


def test_missing_control_binary_is_exit_3(fake: FakeMPS, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in fake.env(**FAST, control_binary="no-such-mps-control").items():
        monkeypatch.setenv(key, value)
    r = run_cli("node", "mps", "install", "--foreground")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "no-such-mps-control not found on PATH" in r.stderr


# --- a real process, a real SIGTERM -------------------------------------------------------


def start_supervisor(fake: FakeMPS, **mps: object) -> subprocess.Popen[str]:
    env = fake.env(**{**FAST, **mps})
    env["PYTHONPATH"] = str(REPO)
    return subprocess.Popen(
        [sys.executable, "-m", "fracctl", "node", "mps", "install", "--foreground"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=fake.root,
        start_new_session=True,  # its own process group, as under a container runtime
    )


def test_a_process_group_signal_does_not_kill_the_quit_client(fake: FakeMPS) -> None:
    # `timeout` and shells signal the whole process group. If that lands after the
    # supervisor spawned its quit client, the client must survive and deliver quit.
    fake.behave(client_delay={"quit": 0.5})
    proc = start_supervisor(fake)
    try:
        assert wait_for(lambda: health_checks(fake) >= 2)
        proc.send_signal(signal.SIGTERM)
        assert wait_for(lambda: any(line.endswith(" quit") for line in fake.lines("clients.log")))
        os.killpg(proc.pid, signal.SIGTERM)  # while the quit client waits to connect
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitCode.OK, stderr
    assert "stopped cleanly (SIGTERM" in stderr
    assert fake.commands()[-1] == "quit"
    assert all_gone(fake) == []


def test_sigterm_sends_quit_and_exits_0(fake: FakeMPS) -> None:
    fake.behave(spawn_server=True)
    proc = start_supervisor(fake, pinned_mem_limits="0=4096M")
    try:
        assert wait_for(lambda: health_checks(fake) >= 3)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitCode.OK, stderr
    assert "SIGTERM: sending quit" in stderr
    assert "stopped cleanly (SIGTERM)" in stderr
    assert fake.commands()[-1] == "quit"
    assert all_gone(fake) == []


def test_sigterm_with_hanging_quit_exits_4_and_leaves_no_process(fake: FakeMPS) -> None:
    fake.behave(spawn_server=True, hang_quit=True)
    proc = start_supervisor(fake, graceful_stop=0.5)
    try:
        assert wait_for(lambda: health_checks(fake) >= 2)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitCode.TIMEOUT, stderr
    assert "quit not finished after 0.5s" in stderr
    assert "Error: the MPS daemon did not quit within 0.5s (SIGTERM)" in stderr
    assert len(fake.daemon_pids()) == 1 and len(fake.server_pids()) == 1
    assert all_gone(fake) == []


# --- no shell, anywhere -------------------------------------------------------------------


def test_values_with_shell_syntax_stay_literal(fake: FakeMPS) -> None:
    odd = fake.root / "p;$(touch pwned)`touch pwned2`"
    ctx, err = fake.context(**FAST, pipe_dir=str(odd))
    stop = threading.Event()
    stop_when(stop, lambda: health_checks(fake) >= 2)
    message = node_agent.supervise(ctx, stop=stop, tick=0.02)
    assert message.startswith("stopped cleanly"), err.getvalue()
    assert odd.is_dir()
    assert not list(fake.root.glob("pwned*")) and not list(Path.cwd().glob("pwned*"))


@pytest.mark.parametrize(
    "args",
    [
        ["--pinned-mem-limit", "0=4096M; touch pwned"],
        ["--pinned-mem-limit", "0=$(touch pwned)"],
        ["--protocol", "4"],
        ["--active-thread-percentage", "101"],
    ],
)
def test_bad_values_are_usage_errors(
    fake: FakeMPS, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    for key, value in fake.env(**FAST).items():
        monkeypatch.setenv(key, value)
    r = run_cli("node", "mps", "install", "--foreground", *args)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert not list(Path.cwd().glob("pwned*"))
    assert fake.daemon_pids() == []


ARGV_CALLS = {"subprocess": {"run", "Popen", "call", "check_call", "check_output"}}
SHELL_CALLS = {"subprocess": {"getoutput", "getstatusoutput"}, "os": {"system", "popen"}}


def _process_calls(path: Path, kinds: dict[str, set[str]]) -> list[ast.Call]:
    """The ``module.function(...)`` calls of ``kinds`` in one source file."""
    tree = ast.parse(path.read_text())
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.attr in kinds.get(n.func.value.id, set())
    ]


def _imports_subprocess(path: Path) -> bool:
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.Import) and any(a.name == "subprocess" for a in n.names):
            return True
        if isinstance(n, ast.ImportFrom) and n.module == "subprocess":
            return True
    return False


MODULES = sorted((REPO / "fracctl").rglob("*.py"))
STARTS_PROCESSES = [p.relative_to(REPO).as_posix() for p in MODULES if _imports_subprocess(p)]


def test_the_node_adapters_that_start_processes_are_among_those_checked() -> None:
    assert {"fracctl/adapters/host.py", "fracctl/adapters/mps.py"} <= set(STARTS_PROCESSES)


@pytest.mark.parametrize("name", STARTS_PROCESSES)
def test_subprocess_calls_use_argument_lists(name: str) -> None:
    calls = _process_calls(REPO / name, ARGV_CALLS)
    assert calls, f"{name} imports subprocess, but no subprocess.<call>(...) was found to check"
    for call in calls:
        assert not any(k.arg == "shell" for k in call.keywords), ast.unparse(call)
        first = (
            call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "args")
        )
        assert not isinstance(first, (ast.Constant, ast.JoinedStr)), ast.unparse(call)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_module_runs_a_shell_command_line(path: Path) -> None:
    shells = _process_calls(path, SHELL_CALLS)
    assert not shells, [ast.unparse(c) for c in shells]
