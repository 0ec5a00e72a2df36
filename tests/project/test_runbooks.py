"""Every `fracctl …` line in the runbooks and the README parses against the real CLI."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from fracctl.cli.main import app

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted((REPO / "runbooks").glob("*.md")) + [REPO / "README.md"]
FENCE = re.compile(r"```([\w-]*)\n(.*?)```", re.S)
SHELL = ("", "bash", "sh", "console")
ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)+(?=fracctl )")


def command_lines(path: Path) -> list[str]:
    lines = []
    for lang, block in FENCE.findall(path.read_text()):
        if lang not in SHELL:
            continue
        for raw in block.splitlines():
            line = ENV_PREFIX.sub("", raw.strip().removeprefix("$ "))
            if line.startswith("fracctl "):
                lines.append(line.split(" | ")[0].split(" #")[0].strip())
    return lines


def parse(argv: list[str]) -> list[str]:
    """Resolve the command path and parse every option, without running anything."""
    cmd = typer.main.get_command(app)
    ctx = cmd.make_context("fracctl", list(argv), resilient_parsing=False)
    path = []
    while hasattr(cmd, "resolve_command"):
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not args:
            break
        name, sub, rest = cmd.resolve_command(ctx, args)
        assert sub is not None, f"no command {args[0]!r}"
        path.append(name)
        ctx = sub.make_context(name, rest, parent=ctx, resilient_parsing=False)
        cmd = sub
    return path


CASES = [(p.name, line) for p in DOCS for line in command_lines(p)]


def test_runbooks_have_commands() -> None:
    runbooks = {p.name for p in DOCS if p.parent.name == "runbooks"}
    with_commands = {name for name, _ in CASES}
    missing = {r for r in runbooks if r != "README.md"} - with_commands
    assert not missing, f"runbooks without fracctl commands: {missing}"
    assert len(CASES) >= 20


@pytest.mark.parametrize(("doc", "line"), CASES, ids=[f"{doc}:{line}" for doc, line in CASES])
def test_command_line_parses(doc: str, line: str) -> None:
    argv = shlex.split(line)[1:]
    if argv == ["--version"]:
        with pytest.raises(typer.Exit):
            parse(argv)
        return
    path = parse(argv)
    assert path, f"{doc}: {line!r} names no command"


def test_a_wrong_flag_is_caught() -> None:
    with pytest.raises(Exception, match="No such option"):
        parse(["recreate", "--yess"])
