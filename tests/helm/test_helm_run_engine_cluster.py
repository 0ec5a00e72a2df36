"""One engine per run: ``recreate --backend NAME`` is the engine every part of the run asks.

``recreate.backend: helm`` configured, the operator's chart installed by the real helm 4:
a run that names another backend must not have drift's judge (or anything else) run
helm's server dry run, which only the helm engine's proofs need.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.git_reads import count_dry_runs
from tests.support.helm import find
from tests.support.helm_chart import ChartIncident, chart_incident
from tests.support.helpers import Cluster


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Iterator[ChartIncident]:
    """The operator's release by helm 4 (one helm is enough: no helm runs here)."""
    found = chart_incident(cluster, tmp_path, find("helm4").path)
    try:
        yield found
    finally:
        found.remove()


def test_the_backend_named_on_the_command_line_is_the_one_the_judge_asks(
    incident: ChartIncident, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``recreate --backend apply`` under ``recreate.backend: helm``: no helm dry run."""
    from fracctl.flows.recreate import recreate

    runs = count_dry_runs(monkeypatch)
    ctx = incident.context()
    try:
        result = recreate(ctx, backend="apply", dry_run=True)
    finally:
        ctx.close()
    assert result.backend == "apply"
    assert runs == [], f"helm's dry run ran for a run through apply: {runs}"
