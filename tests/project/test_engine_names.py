"""Ask the engine, never its name: no backend name is compared with a literal outside it.

A question about a backend ("does it run a chart?", "who owns this object?", "which
engine carries it?") is a member of the engine protocol, answered in the engine's own
package (``fracctl/flows/engines/<engine>/``). Elsewhere a comparison of a backend name
with its literal (``backend == "helm"``, ``name in ("flux", "argocd")``, ``case
"helm":``) is knowledge of that engine spread outside it. The registry
(:mod:`fracctl.core.gitops.backends`) names them all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from fracctl.core.gitops.backends import REGISTRY

PACKAGE = Path(__file__).resolve().parents[2] / "fracctl"
REGISTRY_MODULE = PACKAGE / "core" / "gitops" / "backends.py"
ENGINES = PACKAGE / "flows" / "engines"
#: Every backend's name, and the HelmRelease's (its words in flags and messages).
NAMES = frozenset({e.name for e in REGISTRY} | {"helmrelease"})
#: Other things called ``helm`` (git's renderer): not a backend.
NOT_A_BACKEND = ("renderer",)


def _literals(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
    return set()


def _compared(node: ast.Compare) -> set[str]:
    """The backend names ``node`` compares something with."""
    found: set[str] = set()
    left = node.left
    for op, right in zip(node.ops, node.comparators, strict=True):
        if isinstance(op, ast.Eq | ast.NotEq):
            other = right if _literals(left) else left
            names = (_literals(left) | _literals(right)) & NAMES
        elif isinstance(op, ast.In | ast.NotIn) and not _literals(left):
            other, names = left, _literals(right) & NAMES  # "helm" in a dict: a key test
        else:
            other, names = left, set()
        if names and not any(w in ast.unparse(other) for w in NOT_A_BACKEND):
            found |= names
        left = right
    return found


def name_tests(source: str) -> Iterator[tuple[int, str]]:
    """Each comparison of a backend name with a literal (``==``, ``in``, ``case``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and _compared(node):
            yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.MatchValue) and _literals(node.value) & NAMES:
            yield node.lineno, ast.unparse(node.value)


def _outside_the_engines() -> Iterator[Path]:
    own = [ENGINES / e.name for e in REGISTRY if (ENGINES / e.name).is_dir()]
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == REGISTRY_MODULE or any(path.is_relative_to(d) for d in own):
            continue
        yield path


def test_no_backend_name_is_compared_with_a_literal_outside_its_engine() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {text}"
        for path in _outside_the_engines()
        for line, text in name_tests(path.read_text())
    ]
    assert not found, "ask the engine (a member of its protocol), not its name:\n" + "\n".join(
        found
    )


def test_the_search_finds_each_way_of_asking_by_name() -> None:
    """The search is not blind: each shape the issue named is found, and the rest not."""
    asked = [
        'backend == "helm"',
        'c.recreate.backend != "flux"',
        '"argocd" == name',
        'name in ("flux", "argocd")',
        'backend not in (None, "apply")',
        'p.creator.name != "apply"',
        'match backend:\n    case "helmrelease":\n        pass',
    ]
    for source in asked:
        assert list(name_tests(source)), source
    fine = [
        'renderer not in ("auto", "helm")',
        '"helmrelease" in section',
        "engine.name == other.tool",
        'said = "helm" + suffix',
        'kind == "Deployment"',
    ]
    for source in fine:
        assert not list(name_tests(source)), source
