"""Every ``fracctl …`` command a message names uses flags that command really takes.

A "Next:", "fix:" or hint line is copied and pasted: ``recreate … --path shop`` must not
answer ``No such option: --path``. Every string in the package (f-strings with their
values left out) is searched for ``fracctl COMMAND [SUBCOMMAND] …``; each ``--flag`` or
``-f`` that follows, up to the end of the command, must be one the command declares.
Running the commands is the job of the tests of each message (and of
``test_runbooks_run_cluster.py`` for the runbooks); this holds all of them to the CLI.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from fracctl.cli.main import app

PACKAGE = Path(__file__).resolve().parents[2] / "fracctl"
#: What ends a command inside a sentence.
END = re.compile(r"[;()`|&]|\s{2,}| (?:and|or|then|to|runs|names|lifts|undoes|goes|is)\b")


def strings() -> Iterator[tuple[str, str]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr):
                text = "".join(
                    v.value if isinstance(v, ast.Constant) else "VALUE" for v in node.values
                )
                yield f"{path.relative_to(PACKAGE)}:{node.lineno}", text
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield f"{path.relative_to(PACKAGE)}:{node.lineno}", node.value


def commands(text: str) -> Iterator[list[str]]:
    for m in re.finditer(r"\bfracctl ((?:\S+ ?)+)", text):
        rest = m.group(1)
        end = END.search(rest)
        yield (rest[: end.start()] if end else rest).split()


@functools.cache
def root() -> tuple[Any, Any]:
    cmd = typer.main.get_command(app)
    return cmd, cmd.make_context("fracctl", ["--help"], resilient_parsing=True)


def options_of(words: list[str]) -> tuple[list[str], set[str], list[str]] | None:
    """The command path ``words`` names, its options, and the words after the path."""
    cmd, ctx = root()
    root_opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    path: list[str] = []
    rest = list(words)
    while rest and hasattr(cmd, "get_command"):
        sub = cmd.get_command(ctx, rest[0])
        if sub is None:
            break
        path.append(rest.pop(0))
        cmd = sub
    if not path:
        return None
    opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | root_opts
    opts |= {"--help", "-h"}
    return path, opts, rest


def test_every_flag_a_message_names_is_one_its_command_takes() -> None:
    wrong = []
    seen = 0
    for where, text in strings():
        for words in commands(text):
            found = options_of(words)
            if found is None:
                continue
            seen += 1
            path, opts, rest = found
            for word in rest:
                flag = word.rstrip(".,:").split("=", 1)[0]
                if re.fullmatch(r"--?[a-zA-Z][\w-]*", flag) and flag not in opts:
                    wrong.append(f"{where}: fracctl {' '.join(path)} has no {flag}: {text!r}")
    assert seen > 30
    assert not wrong, "\n".join(wrong)


def test_a_flag_the_command_lacks_is_caught() -> None:
    path, opts, rest = options_of(["recreate", "StatefulSet/db", "--path", "shop"]) or (
        [],
        set(),
        [],
    )
    assert path == ["recreate"] and "--path" in opts and "--revision" in opts
    assert "--nope" not in opts
