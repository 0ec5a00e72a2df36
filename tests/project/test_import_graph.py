"""No import circle anywhere in the repository, lazy and type-checking imports included.

The product (``fracctl``), its benchmarks and its tests are one graph: a circle between two
benchmarks, or between a test helper and the tests, is as much a trap as one in fracctl.

A circle is one even when every import in it is lazy: ``cli._app`` importing each command
module to register it, while each command module imports ``cli._app``, worked only by the
order things happened to run in.
"""

from __future__ import annotations

from collections.abc import Iterator

import grimp
import pytest

#: Every Python package of the repository (``scripts/`` holds stand-alone scripts, no package).
PACKAGES = ("fracctl", "benchmarks", "tests")


def _graph() -> dict[str, set[str]]:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def strongly_connected(edges: dict[str, set[str]]) -> Iterator[list[str]]:
    """Tarjan's algorithm, iterative: every group of modules that import each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1 or node in edges[node]:
                        yield sorted(group)


def test_strongly_connected_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert sorted(strongly_connected(edges)) == [["a", "b", "c"], ["e"]]


def test_no_import_circle_in_the_repository() -> None:
    edges = _graph()
    assert "fracctl.cli.main" in edges and "fracctl.cli._app" in edges
    assert "benchmarks.report" in edges and "tests.support.helpers" in edges
    circles = list(strongly_connected(edges))
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


@pytest.mark.parametrize("module", ["drift", "node", "nodes", "preflight", "probe", "recreate"])
def test_commands_are_registered_by_main_not_by_their_helpers(module: str) -> None:
    edges = _graph()
    assert f"fracctl.cli.{module}" in edges["fracctl.cli.main"]
    assert f"fracctl.cli.{module}" not in edges["fracctl.cli._app"]
