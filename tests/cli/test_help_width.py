"""Help reads at any terminal width: prose reflows as paragraphs, tables and examples stay.

A docstring is hard-wrapped for the source; printed as it is, typer's rich help wraps
each of its lines again at the terminal's width, and where the two widths disagree a
word or two is left on a line of its own. :func:`fracctl.cli._root.reflow` makes each
prose paragraph one line for the renderer to wrap, and keeps indented lines as written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import typer

from fracctl.cli import _root
from fracctl.cli import main as main_module
from fracctl.errors import ExitCode
from tests.support.helpers import run_cli

WIDTHS = (80, 120)


def _paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[list[str]]:
    if path and not getattr(command, "hidden", False):
        yield list(path)
    for name, sub in getattr(command, "commands", {}).items():
        yield from _paths(sub, (*path, name))


COMMAND_PATHS = list(_paths(typer.main.get_command(main_module.app)))


def description(help_text: str) -> list[str]:
    """The lines of a rendered help between its usage line and its first panel."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if "╭" in line), len(lines))
    return [line.rstrip() for line in lines[start:end]]


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def stranded(lines: list[str]) -> list[str]:
    """Lines of one or two words inside a prose paragraph (not its last line).

    A prose line is at the paragraph's own indentation; a line indented further belongs
    to a table or an example block, which is not prose and is exempt.
    """
    found = []
    for i, line in enumerate(lines[:-1]):
        nxt = lines[i + 1]
        if not line.strip() or not nxt.strip():
            continue
        base = min(indent(x) for x in lines if x.strip())
        if indent(line) == base == indent(nxt) and len(line.split()) <= 2:
            found.append(f"{line.strip()!r} (before {nxt.strip()[:30]!r})")
    return found


def test_stranded_finds_a_short_line_inside_a_paragraph() -> None:
    text = [" The sync of an", " application", " by its cluster.", "", " Examples:", "    fracctl"]
    assert stranded(text) == ["'application' (before 'by its cluster.')"]
    assert stranded([" One paragraph that ends", " short.", "", " Next."]) == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", COMMAND_PATHS, ids=[" ".join(p) for p in COMMAND_PATHS])
def test_help_has_no_stranded_words(
    monkeypatch: pytest.MonkeyPatch, width: int, path: list[str]
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    r = run_cli(*path, "--help")
    assert r.exit_code == ExitCode.OK, r.output
    lines = description(r.stdout)
    assert any(line.strip() for line in lines), r.stdout
    assert not stranded(lines), "\n".join(stranded(lines)) + "\n\n" + r.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_examples_and_tables_keep_their_lines(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    """Every indented line of a help fits 80 columns and is printed whole, as written."""
    monkeypatch.setenv("COLUMNS", str(width))
    checked = 0
    for path in COMMAND_PATHS:
        cmd: Any = typer.main.get_command(main_module.app)
        for name in path:
            cmd = cmd.commands[name]
        block = [line.rstrip() for line in (cmd.help or "").splitlines() if line[:1].isspace()]
        too_long = [line for line in block if len(line) + 2 > 80]  # the help's padding
        assert not too_long, (path, too_long)  # it would wrap at the default width
        out = run_cli(*path, "--help").stdout.splitlines()
        for line in block:
            assert any(o.rstrip().endswith(line) for o in out), (path, line)
            checked += 1
    assert checked > 50  # every command's Examples


def test_reflow_joins_prose_and_keeps_blocks() -> None:
    doc = """Summary line.

    A paragraph hard-wrapped
    for the source, in three
    lines.

    The verdicts:

      in-sync            live matches git
      rejected           the API server rejects it (a missing
                         field)

    Examples:
        fracctl drift
        fracctl drift --all
    """
    assert _root.reflow(doc) == (
        "Summary line.\n\n"
        "A paragraph hard-wrapped for the source, in three lines.\n\n"
        "The verdicts:\n\n"
        "  in-sync            live matches git\n"
        "  rejected           the API server rejects it (a missing\n"
        "                     field)\n\n"
        "Examples:\n"
        "    fracctl drift\n"
        "    fracctl drift --all"
    )
    assert _root.reflow(_root.reflow(doc)) == _root.reflow(doc)


def test_reflow_keeps_a_paragraph_click_keeps() -> None:
    doc = "Summary.\n\n\bkept as\nwritten"
    assert _root.reflow(doc) == doc
