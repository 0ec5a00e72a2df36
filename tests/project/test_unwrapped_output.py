"""Machine-readable text never wraps: every line a command prints as text is soft-wrapped.

A path, a command or an id cut over two lines cannot be pasted back (``backup:`` and
its path on separate lines, the path broken inside its timestamp). rich wraps a printed
string at the console's width, 80 columns off a terminal, unless it is printed with
``soft_wrap=True``; tables lay out their own cells and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "fracctl" / "cli"


def _text_prints() -> list[tuple[str, int, ast.Call]]:
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "print":
                continue
            words = {k.arg for k in node.keywords}
            if "markup" in words:  # text, not a table (which passes no markup flag)
                found.append((path.name, node.lineno, node))
    return found


def test_every_text_line_is_printed_unwrapped() -> None:
    prints = _text_prints()
    assert len(prints) > 50
    wrapped = [
        f"{name}:{line}"
        for name, line, call in prints
        if not any(
            k.arg == "soft_wrap" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in call.keywords
        )
    ]
    assert not wrapped, f"printed wrapped at the console's width: {wrapped}"
