#!/usr/bin/env python3
"""No module imports another module's underscored name: ``_name`` means this module only.

Usage: scripts/check-private-imports.py [FOLDER ...]   (default: fracctl tests benchmarks)

An underscored *module* may be imported by its package's other modules (a private
module with public names inside, as kopf keeps its ``_core``); an underscored *name*
inside a module may not be imported anywhere else. Prints each offending import as
``path:line: from MODULE import NAME`` and exits 1 when there is one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGES = ("fracctl", "tests", "benchmarks")


def is_module(root: Path, module: str, name: str) -> bool:
    base = root.joinpath(*module.split("."))
    return (base / f"{name}.py").is_file() or (base / name / "__init__.py").is_file()


def offences(root: Path, folders: list[str]) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                    continue
                if node.module.split(".")[0] not in PACKAGES:
                    continue
                for alias in node.names:
                    name = alias.name
                    if name.startswith("_") and not name.startswith("__"):
                        if not is_module(root, node.module, name):
                            where = path.relative_to(root)
                            found.append(f"{where}:{node.lineno}: from {node.module} import {name}")
    return found


def main(argv: list[str]) -> int:
    root = Path.cwd()
    found = offences(root, argv or list(PACKAGES))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} import(s) of another module's private name", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
