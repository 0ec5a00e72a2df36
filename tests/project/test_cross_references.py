"""Every Sphinx cross-reference in fracctl's docstrings and comments names something real.

A reference to a module, function, class or constant that was renamed or moved reads as a
map to code that is not there. Relative names (``:mod:`.journal```) resolve as Sphinx's
do: from the module that writes them, then each package above it.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROLE = re.compile(r":(mod|func|class|data|meth|attr|exc|obj):`~?([\w.]+)(?:\(\))?`")


def references() -> list[tuple[str, str]]:
    out = []
    for path in sorted((REPO / "fracctl").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)  # a package: .__init__
        found = ROLE.findall(path.read_text())
        # A path (a module, or a name in one) must resolve; a bare name is the module's
        # own attribute, field or local, which the type checker already holds to it.
        out += [(module, name) for role, name in found if role == "mod" or "." in name]
    return out


def resolves(dotted: str) -> bool:
    """Whether ``a.b.c`` is a module, or an attribute (chain) of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            fields = getattr(obj, "__dataclass_fields__", {})  # a field with a factory
            if not hasattr(obj, attr) and attr not in fields:
                return False
            obj = getattr(obj, attr, None)
        return True
    return False


def candidates(module: str, name: str) -> list[str]:
    """Where ``name``, written in ``module``, may point: the module, then each package up."""
    if name.startswith("fracctl."):
        return [name]
    here = module.removesuffix(".__init__")
    package = here if module.endswith(".__init__") else here.rsplit(".", 1)[0]
    parts = package.split(".")
    bases = ([] if name.startswith(".") else [here]) + [
        ".".join(parts[:i]) for i in range(len(parts), 0, -1)
    ]
    return [f"{base}.{name.lstrip('.')}" for base in bases] + [name.lstrip(".")]


def test_there_are_references() -> None:
    assert len(references()) > 50


@pytest.mark.parametrize(("module", "name"), sorted(set(references())))
def test_each_reference_resolves(module: str, name: str) -> None:
    assert any(resolves(c) for c in candidates(module, name)), f"{module}: {name} names nothing"
