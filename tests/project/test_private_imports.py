"""``scripts/check-private-imports.py`` (run by ``make lint``): it finds an import of
another module's underscored name, allows a package's private modules, and the tree
has none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check-private-imports.py"


def check(root: Path, *folders: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *folders], cwd=root, capture_output=True, text=True
    )


def test_the_tree_imports_no_private_name() -> None:
    r = check(REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_private_name_from_another_module_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "fracctl"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "cli" / "_app.py").write_text("def context(): ...\n")
    (pkg / "loader.py").write_text("def _read_file(): ...\n")
    (pkg / "view.py").write_text(
        "from fracctl.cli import _app\n"  # a private module of the package: allowed
        "from fracctl.loader import _read_file\n"
        "from os import _exit\n"  # not the project's
    )
    r = check(tmp_path, "fracctl")
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["fracctl/view.py:2: from fracctl.loader import _read_file"]
    assert "1 import(s) of another module's private name" in r.stderr
