from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup

from fracctl import __version__
from fracctl.cli import _root
from fracctl.cli import main as main_module
from fracctl.cli.main import COMMANDS
from fracctl.errors import ExitCode, Refused
from tests.support.helpers import Cluster, run_cli

REPO = Path(__file__).resolve().parents[2]


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


# --- start-up: what `fracctl --version` and `--help` import, and that help is unchanged ---

# Each proven slow to import (python -X importtime) and never needed to print the
# version or help: the cluster and HTTP clients, YAML, pydantic (typer's coercion of a
# given option value), markdown-it (typer's markdown markup mode), rich's tracebacks and
# pretty printer (typer's pretty exceptions), and fracctl's own flows and adapters.
HEAVY = (
    "kubernetes",
    "httpx",
    "urllib3",
    "ruamel",
    "yaml",
    "jsonpatch",
    "pydantic",
    "pydantic_core",
    "markdown_it",
    "rich.markdown",
    "rich.traceback",
    "rich.pretty",
    "fracctl.flows",
    "fracctl.adapters",
)
COMMAND_MODULES = {f"fracctl.cli.{module}" for module, _ in COMMANDS.values()}

# Runs fracctl as its console script does, then writes the modules it imported.
_RUN_AND_LIST_MODULES = """
import atexit, json, sys
out, sys.argv = sys.argv[1], ["fracctl", *sys.argv[2:]]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
from fracctl.cli.main import main
main()
"""


def _imported_by(tmp_path: Path, *args: str, code: int = 0) -> tuple[set[str], str]:
    listing = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, str(listing), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == code, done.stderr
    return set(json.loads(listing.read_text())), done.stdout


def _loaded(modules: set[str], names: Iterable[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize(
    ("args", "allowed_commands", "code"),
    [
        (["--help"], set(), 0),
        (["-h"], set(), 0),
        (["drift", "--help"], {"drift", "fleet", "render"}, 0),
        (["node", "mps", "--help"], {"node"}, 0),
        (["node"], {"node"}, ExitCode.USAGE),  # a group without its command: its help
    ],
)
def test_help_imports_no_heavy_library_nor_other_commands(
    tmp_path: Path, args: list[str], allowed_commands: set[str], code: int
) -> None:
    modules, out = _imported_by(tmp_path, *args, code=code)
    assert "Usage: fracctl" in out
    assert _loaded(modules, HEAVY) == []
    commands = {m for m in modules if m in COMMAND_MODULES or m == "fracctl.cli.fleet"}
    assert commands == {f"fracctl.cli.{c}" for c in allowed_commands}


def test_the_console_script_ends_the_process_itself(tmp_path: Path) -> None:
    """Its code kept, both streams flushed, exit handlers run; nothing after ``main()`` runs.

    The interpreter's own teardown is what is skipped (benchmarks/bench_window.py).
    """
    marker = tmp_path / "exit-handler"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))\n"
        "sys.argv = ['fracctl', 'frobnicate']\n"
        "print('before', flush=False)\n"
        "from fracctl.cli.main import main\n"
        "main()\n"
        "print('not reached')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stdout == "before\n"
    assert done.stderr.startswith("Error: No such command 'frobnicate'"), done.stderr
    assert marker.read_text() == "ran"


def test_version_imports_only_the_standard_library(tmp_path: Path) -> None:
    modules, out = _imported_by(tmp_path, "--version")
    assert out == f"fracctl {__version__}\n"
    assert _loaded(modules, (*HEAVY, "typer", "rich", "fracctl.cli._root")) == []


def test_help_summaries_are_the_commands_own() -> None:
    """`fracctl --help` lists each command from COMMANDS: it must say what typer would."""
    root = typer.main.get_command(main_module.app)
    assert isinstance(root, TyperGroup)
    assert list(COMMANDS) == list(root.commands)  # the order typer lists them in
    for name, (_, summary) in COMMANDS.items():
        cmd = root.commands[name]
        text = inspect.cleandoc(cmd.short_help or cmd.help or "")
        assert summary == text.split("\n\n")[0].strip(), name
        assert not cmd.hidden and not cmd.deprecated and not getattr(cmd, "rich_help_panel", None)


def _shape(cmd: Any) -> Any:
    """What a command is made of: its help, its options, its subcommands (by name)."""
    subcommands = getattr(cmd, "commands", {})
    return (
        cmd.name,
        cmd.help,
        [(p.name, p.opts, p.secondary_opts, p.required, p.default) for p in cmd.params],
        {name: _shape(sub) for name, sub in subcommands.items()},
    )


def test_commands_loaded_on_use_are_the_complete_clis() -> None:
    """Each command the run imports on use (from its module in COMMANDS) is the same."""
    complete = typer.main.get_command(main_module.app)
    lazy = typer.main.get_command(_root.lazy_app(COMMANDS))
    assert isinstance(complete, TyperGroup) and isinstance(lazy, _root.LazyGroup)
    assert [p.opts for p in lazy.params] == [p.opts for p in complete.params]
    for name in COMMANDS:
        assert _shape(lazy.commands[name]) == _shape(complete.commands[name]), name
    assert dict(lazy.commands).keys() == complete.commands.keys()


def _typer_help(args: list[str]) -> str:
    """Typer's own rendering of `fracctl ARGS --help` from the complete CLI."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        typer.main.get_command(main_module.app).main(
            args, prog_name="fracctl", standalone_mode=False
        )
    return out.getvalue()


@pytest.mark.parametrize("width", [60, 80, 132])
@pytest.mark.parametrize(
    "args", [["--help"], ["drift", "--help"], ["node", "--help"], ["node", "mps", "--help"]]
)
def test_help_is_typers_rendering(
    monkeypatch: pytest.MonkeyPatch, width: int, args: list[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    r = run_cli(*args)
    assert r.exit_code == ExitCode.OK, r.output
    assert r.stdout == _typer_help(args)
    assert "Usage: fracctl" in r.stdout and "╭─ Options" in r.stdout


def test_help_in_a_fresh_process_is_typers_rendering_in_colour(tmp_path: Path) -> None:
    """Where typer's help renderer is imported with stand-ins for what it does not use."""
    env = {**os.environ, "COLUMNS": "100", "FORCE_COLOR": "1", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    typer_help = (
        "import sys, typer\n"
        "from fracctl.cli.main import app\n"
        "typer.main.get_command(app).main(sys.argv[1:], prog_name='fracctl', "
        "standalone_mode=False)\n"
    )
    for args in (["--help"], ["drift", "--help"]):
        ours = subprocess.run(
            [sys.executable, "-m", "fracctl", *args], capture_output=True, text=True, env=env
        )
        theirs = subprocess.run(
            [sys.executable, "-c", typer_help, *args], capture_output=True, text=True, env=env
        )
        assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
        assert "\x1b[" in ours.stdout
        assert ours.stdout == theirs.stdout


def test_help_renderer_stand_ins_import_the_real_thing_when_used() -> None:
    code = (
        "import sys\n"
        "from fracctl.cli import _root\n"
        "_root.import_rich_help()\n"
        "assert 'rich.markdown' not in sys.modules and 'rich.traceback' not in sys.modules\n"
        "from typer import rich_utils\n"
        "from rich.markdown import Markdown\n"
        "from rich.traceback import Traceback\n"
        "text = rich_utils._make_rich_text(text='*x*', markup_mode='markdown')\n"
        "assert isinstance(text, Markdown), text\n"
        "try:\n"
        "    1 / 0\n"
        "except ZeroDivisionError as e:\n"
        "    tb = rich_utils.Traceback.from_exception(type(e), e, e.__traceback__)\n"
        "assert isinstance(tb, Traceback), tb\n"
        "assert 'rich.markdown' in sys.modules and 'rich.traceback' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _parsed(cmd: Any, argv: list[str]) -> list[dict[str, Any]]:
    """The values of the options of each command on the path ``argv`` names."""
    ctx = cmd.make_context("fracctl", list(argv))
    values = [ctx.params]
    while isinstance(cmd, TyperGroup):
        name, cmd, rest = cmd.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        ctx = cmd.make_context(name, rest, parent=ctx)
        values.append(ctx.params)
    return values


@pytest.mark.parametrize(
    "argv",
    [
        ["render"],
        ["drift"],
        ["--config", "c.yaml", "--context", "a", "--context", "b", "--debug", "drift", "--all"],
        ["--context", "a", "drift", "--kind", "Deployment", "-o", "json", "--parallel", "3"],
        ["node", "probe-memory", "--limit", "4G"],
    ],
)
def test_options_parse_alike_when_commands_load_on_use(argv: list[str]) -> None:
    """Options not given skip typer's coercion (and pydantic) there; the values are equal."""
    complete = _parsed(typer.main.get_command(main_module.app), argv)
    lazy = _parsed(typer.main.get_command(_root.lazy_app(COMMANDS)), argv)
    assert lazy == complete


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
    from fracctl.sandbox import flow as sandbox

    monkeypatch.setattr(sandbox, "env_lines", lambda root, **_: _boom(exc))
    r = run_cli("sandbox", "env")
    assert r.exit_code == code, r.output
    assert text in r.stderr
    assert r.stderr.count("\n") == 1
    assert "Traceback" not in r.output


def test_debug_reraises_unexpected_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from fracctl.sandbox import flow as sandbox

    monkeypatch.setattr(sandbox, "env_lines", lambda root, **_: _boom(RuntimeError("kaboom")))
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


@pytest.mark.parametrize("argv", [[], ["node"], ["policy"]])
def test_a_bare_group_prints_its_help_and_no_empty_error(argv: list[str]) -> None:
    r = run_cli(*argv)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "Usage: fracctl" in r.stdout
    assert "Error" not in r.stderr, r.stderr


def test_fracctl_is_a_kubectl_plugin_too() -> None:
    """kubectl runs `kubectl-fracctl` on PATH as `kubectl fracctl`: the same entry point."""
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-fracctl"] == scripts["fracctl"] == "fracctl.cli.main:main"
    plugin = Path(sys.executable).with_name("kubectl-fracctl")
    if plugin.exists():  # installed in this environment (make venv)
        out = subprocess.run([str(plugin), "--version"], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.startswith("fracctl "), out
