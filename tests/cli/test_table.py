"""Tables: rich's on a terminal; plain aligned columns, never cut, anywhere else."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.text import Text

from fracctl import redact as r
from fracctl.cli import _table
from fracctl.cli._table import Column, plain, show

LONG = "fracctl nodes label " + "-".join(["a-very-long-node-name"] * 6)


def test_plain_is_kubectl_like_and_cuts_nothing() -> None:
    text = plain(["check", "what to do"], [["opt-in-missing", LONG], ["x", ""]])
    lines = text.splitlines()
    assert lines[0] == "CHECK            WHAT TO DO"
    assert lines[1] == f"opt-in-missing   {LONG}"
    assert lines[2] == "x"  # no trailing blanks
    assert len(lines[1]) > 160


def test_a_cell_of_several_lines_takes_as_many_rows() -> None:
    text = plain(
        ["setting", "value", "source"], [["a.b", "one\ntwo", "default"], ["c", "3", "f:2"]]
    )
    assert text.splitlines() == [
        "SETTING   VALUE   SOURCE",
        "a.b       one     default",
        "          two",
        "c         3       f:2",
    ]


def test_columns_wraps_only_the_last_column_at_spaces() -> None:
    words = "label the node and run the guards again before any recreate"
    text = plain(["check", "result", "fix"], [["opt-in-missing", "REFUSED", words]], width=50)
    lines = text.splitlines()
    assert all(len(line) <= 50 for line in lines), text
    indent = len("opt-in-missing   REFUSED   ")
    assert lines[1].startswith("opt-in-missing   REFUSED   label")
    assert all(line.startswith(" " * indent) and line[indent] != " " for line in lines[2:])
    assert " ".join(line[indent:] for line in lines[1:]) == words  # every word, in order


def test_a_word_too_long_for_columns_stays_whole() -> None:
    text = plain(["a", "b"], [["x" * 30, LONG]], width=40)
    assert LONG.split()[-1] in text.splitlines()[-1]  # wider than asked, never cut
    assert "".join(text.split()).endswith("".join(LONG.split()))


def test_no_row_may_have_more_cells_than_columns() -> None:
    with pytest.raises(ValueError, match="more cells"):
        plain(["a"], [["1", "2"]])


def test_secrets_are_masked_before_the_columns_are_measured() -> None:
    secret = "s3cr3t-t0ken-value-0123456789"
    r.register(secret)
    try:
        text = plain(["object", "note"], [[secret, "x"], ["y", "z"]])
    finally:
        r.forget_all()
    assert secret not in text
    assert text.splitlines()[1] == f"{r.MASK}      x"


@pytest.mark.parametrize(("value", "width"), [("", None), ("abc", None), ("0", None), ("72", 72)])
def test_columns_env(value: str, width: int | None) -> None:
    assert _table.columns_env({"COLUMNS": value}) == width
    assert _table.columns_env({}) is None


def test_show_off_a_terminal_is_plain_and_honours_columns() -> None:
    sink = io.StringIO()
    out = Console(file=sink, width=80, color_system=None)  # rich would fit 80 columns
    show(out, ["check", Column("fix", overflow="fold")], [[Text("a", style="red"), LONG]], env={})
    assert sink.getvalue() == f"CHECK   FIX\na       {LONG}\n"
    sink.truncate(0), sink.seek(0)
    show(out, ["check", "fix"], [["a", "one two three four five six"]], env={"COLUMNS": "28"})
    assert sink.getvalue().splitlines()[1:] == ["a       one two three four", "        five six"]


def test_show_on_a_terminal_is_rich_table() -> None:
    sink = io.StringIO()
    out = Console(file=sink, width=60, force_terminal=True, color_system=None)
    show(out, ["check", Column("fix", no_wrap=True)], [["a", "b"]], env={})
    text = sink.getvalue()
    assert "┃ check ┃ fix" in text and "│ a     │ b" in text


def test_a_table_too_wide_off_a_terminal_is_records_under_its_key_columns() -> None:
    sink = io.StringIO()
    out = Console(file=sink, force_terminal=False, width=80)
    evidence = "selected: " + ", ".join(f"node-{i}" for i in range(60))
    rows = [("opt-in-missing", "REFUSED", evidence, LONG), ("fractional-pods", "pass", "none", "")]
    show(out, ("check", "result", "evidence", "what to do"), rows, env={}, keys=2)
    assert sink.getvalue().splitlines() == [
        "CHECK             RESULT",
        "opt-in-missing    REFUSED",
        f"    evidence: {evidence}",  # whole, on one line
        f"    what to do: {LONG}",
        "fractional-pods   pass",
        "    evidence: none",
    ]


@pytest.mark.parametrize("env", [{}, {"COLUMNS": "200"}])
def test_a_table_that_fits_stays_a_table(env: dict[str, str]) -> None:
    sink = io.StringIO()
    out = Console(file=sink, force_terminal=False, width=80)
    show(out, ("check", "result", "evidence"), [("a", "pass", "short")], env=env, keys=2)
    assert sink.getvalue().splitlines() == ["CHECK   RESULT   EVIDENCE", "a       pass     short"]
