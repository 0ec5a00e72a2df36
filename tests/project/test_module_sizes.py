"""Rooms a newcomer can read: no module of fracctl/ over 400 lines, no function over 60."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "fracctl"
MODULE_LINES = 400
FUNCTION_LINES = 60


def test_no_module_is_over_400_lines() -> None:
    big = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert not big, f"split these along their concerns: {big}"


def test_no_function_is_over_60_lines() -> None:
    long = []
    for p in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > FUNCTION_LINES:
                    long.append(f"{p.relative_to(PACKAGE)}:{node.lineno} {node.name} ({n})")
    assert not long, f"split these: {long}"


#: The modules of fracctl/flows/ that every room shares; everything else is a package.
FLOWS_SHARED = {"__init__.py", "context.py", "signals.py", "procedures.py", "unfinished.py"}


def test_flows_holds_rooms_by_command() -> None:
    """A newcomer who opens fracctl/flows/ sees the commands: one package per command or
    concern, its entry point in its ``__init__.py``, beside the few shared modules."""
    flows = PACKAGE / "flows"
    loose = {p.name for p in flows.glob("*.py")} - FLOWS_SHARED
    assert not loose, f"give these a room (a package): {sorted(loose)}"
    rooms = {p.name for p in flows.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert {"recreate", "guards", "doctor", "drain", "drift", "engines"} <= rooms
    assert all((flows / room / "__init__.py").is_file() for room in rooms)
