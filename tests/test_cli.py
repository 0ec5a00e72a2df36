from __future__ import annotations

import subprocess
import sys

import pytest

from fracctl import __version__
from fracctl.errors import ExitCode, Refused
from tests.helpers import Cluster, run_cli


def test_version() -> None:
    r = run_cli("--version")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.stdout.strip() == f"fracctl {__version__}"


def test_help_lists_commands() -> None:
    r = run_cli("--help")
    assert r.exit_code == ExitCode.OK, r.output
    assert "sandbox" in r.stdout


def test_unknown_command_is_usage_error() -> None:
    r = run_cli("frobnicate")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "No such command" in r.stderr
    assert "Traceback" not in r.output


def test_bad_option_value_is_usage_error() -> None:
    r = run_cli("sandbox", "status", "-o", "xml")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "table, json" in r.stderr


def test_start_up_imports_no_heavy_libraries() -> None:
    code = (
        "import sys, fracctl.cli.main as m\n"
        "heavy = [x for x in ('kubernetes', 'httpx', 'ruamel', 'urllib3', 'rich.console') "
        "if x in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"heavy imports at start-up: {out.stdout}"


def _boom(exc: BaseException) -> None:
    raise exc


@pytest.mark.parametrize(
    ("exc", "code", "text"),
    [
        (Refused("b200-0 lacks the opt-in label"), ExitCode.FINDING, "Error: b200-0 lacks"),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "Interrupted."),
        (RuntimeError("kaboom"), ExitCode.EXTERNAL, "Unexpected error: RuntimeError: kaboom"),
    ],
)
def test_error_boundary(
    monkeypatch: pytest.MonkeyPatch, exc: BaseException, code: int, text: str
) -> None:
    from fracctl.flows import sandbox

    monkeypatch.setattr(sandbox, "env_lines", lambda root: _boom(exc))
    r = run_cli("sandbox", "env")
    assert r.exit_code == code, r.output
    assert text in r.stderr
    assert r.stderr.count("\n") == 1
    assert "Traceback" not in r.output


def test_debug_reraises_unexpected_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from fracctl.flows import sandbox

    monkeypatch.setattr(sandbox, "env_lines", lambda root: _boom(RuntimeError("kaboom")))
    with pytest.raises(RuntimeError, match="kaboom"):
        run_cli("--debug", "sandbox", "env")


def test_messages_keep_brackets() -> None:
    r = run_cli("--config", "/nonexistent/[x].yaml", "sandbox", "status")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "[x].yaml" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["drift", "--app", ""],
        ["drift", "--all", "--name", " "],
        ["drift", "--all", "--kind", ""],
        ["drift", "--revision", ""],
        ["render", "--from-argocd", ""],
        ["render", "--name", ""],
        ["render", "--kind", "  "],
        ["render", "-r", ""],
        ["recreate", "--dry-run", "--revision", ""],
    ],
)
def test_a_blank_name_is_usage_not_a_missing_filter(cluster: Cluster, args: list[str]) -> None:
    # With a real cluster behind: a blank --app or --name must not fall back to
    # "no application" or "no filter" and answer for something else.
    r = run_cli("--kubeconfig", cluster.kubeconfig, *args)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "cannot be empty" in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stdout == ""
