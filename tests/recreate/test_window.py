"""The expected window the plan quotes: the bench's last figures, labelled as measured."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from fracctl.flows.recreate.window import expected, measured

FIGURES: dict[str, Any] = {
    "apply": {"window_s": 3.14, "fracctl_s": 0.061, "nodes": 2, "runs": 3,
              "measured_on": "2026-12-03"},
    "apply --drain": {"window_s": 3.5, "fracctl_s": 0.08, "nodes": 2, "runs": 3,
                      "measured_on": "2026-12-03"},
    "flux": {"window_s": 4.0, "fracctl_s": 0.2, "nodes": 2, "runs": 3,
             "measured_on": "2026-12-02"},
}  # fmt: skip


def test_the_backends_figure_is_quoted_as_a_measurement() -> None:
    said = expected("apply", drain=False, figures=FIGURES)
    assert said == (
        "expected window: about 3.1s without fractional scheduling on the selected nodes "
        "(fracctl's own share 0.06s); measured on 2026-12-03 on the sandbox (apply, 2 KWOK "
        "node(s), median of 3 run(s)), not a promise for this cluster"
    )


def test_the_drain_has_its_own_figure() -> None:
    said = expected("apply", drain=True, figures=FIGURES)
    assert said is not None
    assert "about 3.5s" in said and "(apply --drain, 2 KWOK" in said
    assert "evictions" not in said


def test_without_a_drain_figure_the_backends_is_quoted_with_the_drain_on_top() -> None:
    said = expected("flux", drain=True, figures=FIGURES)
    assert said is not None
    assert "about 4.0s" in said and "(flux, 2 KWOK" in said and "measured on 2026-12-02" in said
    assert said.endswith("; the drain's evictions come before it")


@pytest.mark.parametrize(
    "figures",
    [
        {},
        {"argocd": "3s"},
        {"argocd": {"window_s": 3.0}},
        {"argocd": {"window_s": "soon", "fracctl_s": 0.1, "nodes": 2, "runs": 3,
                    "measured_on": "2026-12-03"}},
    ],
)  # fmt: skip
def test_no_figure_or_a_broken_one_quotes_nothing(figures: dict[str, Any]) -> None:
    assert expected("argocd", drain=False, figures=figures) is None


def test_the_packaged_figures_are_each_quoted_as_measured() -> None:
    """The bench writes the package's data file; the plan reads that same file."""
    text = resources.files("fracctl").joinpath("data", "window.json").read_text()
    data = json.loads(text)
    assert "not a promise" in data["about"]
    assert measured() == data["backends"]
    assert "apply" in data["backends"]
    for way in data["backends"]:
        said = expected(way.split()[0], drain="--drain" in way)
        assert said is not None and f"({way}, " in said, way
