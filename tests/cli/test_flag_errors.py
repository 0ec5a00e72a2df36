"""A bad value is blamed on where it came from: the flag, the variable, or file:line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
import typer

from fracctl import config as cfg
from fracctl.cli.main import app
from fracctl.errors import ConfigError, ExitCode
from tests.support.helpers import Result, run_cli

# A valid fracctl.yaml in the working directory: an error must not point at it when the
# bad value did not come from it.
GOOD = "timeouts:\n  ready: 5m\n  probe: 1m\nmps:\n  protocol: 3\n"


@pytest.fixture(autouse=True)
def config_file() -> Path:
    path = Path("fracctl.yaml")  # the test's working directory is its tmp_path
    path.write_text(GOOD)
    return path


def usage(r: Result) -> str:
    assert r.exit_code == ExitCode.USAGE, r.output
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.output
    return r.stderr


# Every command flag that carries a duration, a size, a number with a range or a
# KEY=VALUE; each must be named when its value is bad, and the file must not be.
FLAG_CASES = [
    (["wait", "--timeout", "abc"], "--timeout", "expected a duration"),
    (["wait", "--timeout", "0"], "--timeout", "must be a positive duration"),
    (["probe", "--memory", "4Gi", "--timeout", "abc"], "--timeout", "expected a duration"),
    (["probe", "--memory", "4Gi", "--timeout", "0s"], "--timeout", "must be a positive"),
    (["probe", "--memory", "4Gi", "--pool", "nokey"], "--pool", "KEY=VALUE"),
    (["preflight", "--selector", "nokey"], "--selector", "KEY=VALUE"),
    (["recreate", "--dry-run", "--backend", "bogus"], "--backend", "must be one of argocd, flux"),
    (["node", "probe-memory", "--limit", "abc"], "--limit", "expected a size"),
    (["node", "probe-memory", "--step", "0"], "--step", "positive whole number"),
    (["probe", "--memory", "4G"], "--memory", "expected a size like 4Gi"),
    (["probe", "--fraction", "1.5"], "--fraction", "between 0 and 1 (exclusive), got 1.5"),
    (["probe", "--memory", "4Gi", "--expect", "maybe"], "--expect", "must be one of any"),
    (
        ["node", "mps", "install", "--systemd", "--dry-run", "--protocol", "5"],
        "--protocol",
        "must be 2 or 3",
    ),
    (
        ["node", "mps", "install", "--systemd", "--dry-run", "--active-thread-percentage", "0"],
        "--active-thread-percentage",
        "must be 1..100",
    ),
    (
        ["node", "mps", "install", "--systemd", "--dry-run", "--pinned-mem-limit", "x"],
        "--pinned-mem-limit",
        "expected <device>=<size>",
    ),
]


@pytest.mark.parametrize(("args", "flag", "needle"), FLAG_CASES)
def test_a_bad_flag_value_names_the_flag(args: list[str], flag: str, needle: str) -> None:
    err = usage(run_cli("--kubeconfig", "/nonexistent/kubeconfig", *args))
    assert f"'{flag}'" in err, err
    assert needle in err, err
    assert "fracctl.yaml" not in err, err


def test_wait_timeout_from_the_issue() -> None:
    err = usage(run_cli("wait", "--timeout", "abc"))
    assert "Invalid value for '--timeout': expected a duration like 10m or 600s" in err
    assert "timeouts.ready" not in err


@pytest.mark.parametrize(
    ("args", "var", "value"),
    [
        (["wait"], "FRACCTL_TIMEOUTS_READY", "abc"),
        (["wait"], "FRACCTL_TIMEOUTS_READY", "0"),
        (["probe", "--memory", "4Gi"], "FRACCTL_TIMEOUTS_PROBE", "soon"),
        (["node", "mps", "install", "--systemd", "--dry-run"], "FRACCTL_MPS_PROTOCOL", "5"),
    ],
)
def test_a_bad_environment_value_names_the_variable(
    args: list[str], var: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(var, value)
    err = usage(run_cli("--kubeconfig", "/nonexistent/kubeconfig", *args))
    assert f"environment variable {var}" in err, err
    assert "fracctl.yaml" not in err, err


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("timeouts:\n  ready: abc\n", 2, "timeouts.ready: expected a duration"),
        ("timeouts:\n  request: 5s\n  probe: 0\n", 3, "probe must be a positive duration"),
        ("mps:\n  pipe_dir: /run/x\n  protocol: 5\n", 3, "protocol must be 2 or 3"),
    ],
)
def test_a_bad_file_value_names_file_and_line(
    text: str, line: int, needle: str, config_file: Path
) -> None:
    config_file.write_text(text)
    err = usage(run_cli("--kubeconfig", "/nonexistent/kubeconfig", "probe", "--memory", "4Gi"))
    assert f"fracctl.yaml:{line}:" in err, err
    assert needle in err, err
    assert "--timeout" not in err, err


def test_the_flag_wins_over_a_bad_file_value_only_where_it_is_given(config_file: Path) -> None:
    config_file.write_text("timeouts:\n  ready: abc\n")
    # The flag replaces the bad file value: the file is not consulted for it.
    r = run_cli("--kubeconfig", "/nonexistent/kubeconfig", "wait", "--timeout", "1s")
    assert "timeouts.ready" not in r.stderr, r.stderr
    assert "kubeconfig /nonexistent/kubeconfig: file not found" in r.stderr


# --- the configuration layer itself ---------------------------------------------------


def test_load_names_the_flag_an_override_came_from() -> None:
    with pytest.raises(ConfigError) as e:
        cfg.load(
            env={},
            overrides={"timeouts.ready": "abc"},
            flags={"timeouts.ready": "--timeout"},
        )
    assert str(e.value).startswith("--timeout: timeouts.ready: expected a duration")
    assert "fracctl.yaml" not in str(e.value)
    with pytest.raises(ConfigError) as e:
        cfg.load(env={}, overrides={"timeouts.ready": "abc"})
    assert str(e.value).startswith("a command-line flag: timeouts.ready:")


def test_section_checks_blame_the_key_they_name(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("mps:\n  pipe_dir: /run/x\n  log_dir: /var/log/x\n  protocol: 7\n")
    with pytest.raises(ConfigError) as e:
        cfg.load(str(path), env={})
    assert str(e.value).startswith(f"{path}:4: mps: protocol must be 2 or 3")
    # The same key from a flag, the rest from the file: the flag is named.
    path.write_text("mps:\n  pipe_dir: /run/x\n")
    with pytest.raises(ConfigError) as e:
        cfg.load(str(path), env={}, overrides={"mps.protocol": 7}, flags={"mps.protocol": "-p"})
    assert str(e.value).startswith("-p: mps: protocol must be 2 or 3")
    with pytest.raises(ConfigError) as e:
        cfg.load(str(path), env={"FRACCTL_MPS_PROTOCOL": "7"})
    assert str(e.value).startswith("environment variable FRACCTL_MPS_PROTOCOL: mps: protocol")


def test_check_value_parses_like_the_file() -> None:
    assert cfg.check_value("timeouts.ready", "10m") == 600
    assert cfg.check_value("mps.protocol", "2") == 2
    assert cfg.check_value("mps.pinned_mem_limits", ["0=4096M"]) == ["0=4096M"]
    with pytest.raises(ValueError, match="^expected a duration"):
        cfg.check_value("timeouts.ready", "abc")
    with pytest.raises(ValueError, match="^must be 2 or 3"):
        cfg.check_value("mps.protocol", 5)
    # A complaint about a combination (here with the default denied classes) is left to
    # the full load, which sees the file too.
    assert cfg.check_value("labels.allowed_classes", ["h200"]) == ["h200"]


def test_config_path_errors_say_what_and_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = usage(run_cli("--config", str(tmp_path), "nodes", "check"))
    assert f"{tmp_path}: is a directory, not a config file" in err
    err = usage(run_cli("sandbox", "up", "--scenario", str(tmp_path), "--state-dir", "sbx"))
    assert "is a directory, not a scenario file" in err
    assert not Path("sbx").exists()
    monkeypatch.setenv("FRACCTL_CONFIG", str(tmp_path / "gone.yaml"))
    err = usage(run_cli("nodes", "check"))
    assert "gone.yaml: config file not found (named by FRACCTL_CONFIG)" in err


# --- one message per mistake, from every command that takes the flag --------------------


def _leaf_commands() -> list[tuple[list[str], Any]]:
    """Every runnable command as (its path, its click command), from the real CLI."""

    def walk(group: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        for name, cmd in sorted(group.commands.items()):
            if hasattr(cmd, "commands"):
                yield from walk(cmd, [*path, name])
            else:
                yield [*path, name], cmd

    return list(walk(typer.main.get_command(app), []))


# The choices of -o where a command's differ from table, json.
OUTPUT_CHOICES = {
    "render": "yaml, json",
    "rbac print": "yaml, json",
    "policy print": "yaml, json",
    "fleet render": "yaml, json",
    "drift": "table, json, junit, github, prometheus",
    "doctor": "table, json, github, prometheus",
    "lint": "table, json, sarif, github",
    "config view": "table, json, yaml",
}

# (the flag, a bad value, what every command taking it says; {choices}: OUTPUT_CHOICES)
SAME_MISTAKES = [
    ("--output", "xml", "must be one of {choices}; got 'xml'"),
    ("--timeout", "abc", "expected a duration like 10m or 600s, got 'abc'"),
    ("--timeout", "0", "must be a positive duration, got 0s"),
    ("--backend", "nope", "must be one of argocd, flux, helm, apply; got 'nope'"),
    ("--renderer", "jsonnet", "must be one of auto, plain, kustomize, helm; got 'jsonnet'"),
    ("--expect", "maybe", "must be one of any, running, not-ready; got 'maybe'"),
    ("--revision", " ", "cannot be empty"),
    ("--kind", "", "cannot be empty"),
    ("--name", "", "cannot be empty"),
    ("--selector", "nokey", "expected KEY=VALUE, got 'nokey'"),
    ("--pool", "nokey", "expected KEY=VALUE, got 'nokey'"),
    ("--limit", "abc", "expected a size like 4096M or 4G, got 'abc'"),
    ("--memory", "4G", "expected a size like 4Gi or 4096Mi, got '4G'"),
    ("--fraction", "1.5", "must be between 0 and 1 (exclusive), got 1.5"),
]


def _cases() -> list[Any]:
    cases = []
    for flag, value, said in SAME_MISTAKES:
        takers = [
            (path, param)
            for path, cmd in _leaf_commands()
            for param in cmd.params
            if flag in param.opts
        ]
        assert takers, f"no command takes {flag}"
        for path, param in takers:
            name = " ".join(path)
            case_id = f"{name} {flag}={value!r}"
            cases.append(pytest.param(path, param.opts, flag, value, said, id=case_id))
    return cases


@pytest.mark.parametrize(("path", "opts", "flag", "value", "said"), _cases())
def test_the_same_mistake_reads_the_same_from_every_command(
    path: list[str], opts: list[str], flag: str, value: str, said: str
) -> None:
    name = " ".join(path)
    nodes = ["x"] if path[0] == "nodes" and path[1] != "check" else []  # a required argument
    err = usage(run_cli("--kubeconfig", "/nonexistent/kubeconfig", *path, *nodes, flag, value))
    hint = " / ".join(f"'{o}'" for o in opts)
    reason = said.format(choices=OUTPUT_CHOICES.get(name, "table, json"))
    assert err == f"Error: Invalid value for {hint}: {reason} (see 'fracctl {name} --help')\n"


def test_every_command_that_prints_takes_the_same_output_flag() -> None:
    takers = {" ".join(p) for p, cmd in _leaf_commands() for x in cmd.params if "-o" in x.opts}
    assert len(takers) >= 13, takers
    for path, cmd in _leaf_commands():
        for param in cmd.params:
            if "--output" in param.opts or "-o" in param.opts:
                assert param.opts == ["-o", "--output"], (path, param.opts)


def test_choices_come_from_where_the_flows_read_them() -> None:
    from fracctl.adapters.render import RENDERERS
    from fracctl.cli import probe as probe_cli
    from fracctl.cli import render as render_cli
    from fracctl.core.gitops.backends import NAMES as BACKENDS
    from fracctl.flows.guards.probe import EXPECT

    assert get_args(render_cli.Renderer) == RENDERERS
    assert get_args(probe_cli.Expect) == EXPECT
    r = run_cli("recreate", "--help")
    assert f"<{'|'.join(BACKENDS)}>" in r.stdout, r.stdout


@pytest.mark.parametrize(
    ("args", "key", "var"),
    [
        (["wait", "--timeout", "1s"], "timeouts:\n  ready: abc\n", "FRACCTL_TIMEOUTS_READY"),
        (
            ["probe", "--memory", "4Gi", "--timeout", "1s"],
            "timeouts:\n  probe: abc\n",
            "FRACCTL_TIMEOUTS_PROBE",
        ),
        (
            ["node", "mps", "install", "--systemd", "--dry-run", "--protocol", "2"],
            "mps:\n  protocol: 7\n",
            "FRACCTL_MPS_PROTOCOL",
        ),
    ],
)
def test_a_flag_beats_the_environment_and_the_file(
    args: list[str], key: str, var: str, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file.write_text(key)
    monkeypatch.setenv(var, "abc")
    r = run_cli("--kubeconfig", "/nonexistent/kubeconfig", *args)
    assert var not in r.stderr, r.stderr
    assert "fracctl.yaml" not in r.stderr, r.stderr
