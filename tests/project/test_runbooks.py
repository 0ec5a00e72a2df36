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
#: A command written inline in prose: `fracctl …` in one code span.
INLINE = re.compile(r"(?<!`)`(fracctl [^`]+)`(?!`)")
README = REPO / "README.md"


def command_lines(path: Path) -> list[str]:
    lines = []
    for lang, block in FENCE.findall(path.read_text()):
        if lang not in SHELL:
            continue
        for raw in block.splitlines():
            line = ENV_PREFIX.sub("", raw.strip().removeprefix("$ "))
            if line.startswith("fracctl "):
                lines.append(line.split(" | ")[0].split(" #")[0].strip())
    if path == README:  # what a newcomer reads first: its inline commands run as written too
        prose = FENCE.sub("", path.read_text())
        spans = [m.split(" | ")[0].strip() for m in INLINE.findall(prose)]
        lines += [s for s in spans if "…" not in s]  # `fracctl …` names them all
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
    if argv in (["--version"], ["--help"]):
        with pytest.raises(typer.Exit):
            parse(argv)
        return
    path = parse(argv)
    assert path, f"{doc}: {line!r} names no command"


def test_readme_is_short_and_its_commands_are_checked() -> None:
    """A newcomer reads the README in two minutes; every command in it is a case here."""
    text = README.read_text()
    assert len(text.splitlines()) < 120
    readme = [line for doc, line in CASES if doc == "README.md"]
    assert "fracctl drift" in readme and "fracctl recreate --yes" in readme
    assert "fracctl recreate" in readme  # an inline one, from the prose
    # The two set-up commands of a fresh machine: the sandbox's demo and the tests (.ci/run).
    start = text.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in start.splitlines()] == ["make demo", "make test"]
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_readme_links_resolve() -> None:
    """What left the README went to a runbook: every relative link in it leads somewhere."""
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert "runbooks/install.md" in local and "runbooks/development.md" in local
    missing = [link for link in local if not (REPO / link).exists()]
    assert not missing, missing


def test_a_wrong_flag_is_caught() -> None:
    with pytest.raises(Exception, match="No such option"):
        parse(["recreate", "--yess"])
