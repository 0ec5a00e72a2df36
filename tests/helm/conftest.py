"""The operator's release on the shared control plane, installed by each real helm in turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helm import Helm
from tests.support.helm_chart import ChartIncident, chart_incident
from tests.support.helpers import Cluster


@pytest.fixture
def incident(helm_bin: Helm, cluster: Cluster, tmp_path: Path) -> Iterator[ChartIncident]:
    """:func:`chart_incident` with ``helm_bin``; the release and its config removed after."""
    found = chart_incident(cluster, tmp_path, helm_bin.path)
    try:
        yield found
    finally:
        found.remove()
