"""The shop every kinds test works in: a namespace, a node, a git repository, fracctl.yaml."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import Cluster
from tests.support.kinds_fixtures import Shop


@pytest.fixture
def shop(cluster: Cluster, tmp_path: Path) -> Iterator[Shop]:
    """One test's shop, its cluster-scoped objects removed after."""
    s = Shop(cluster, tmp_path)
    try:
        yield s
    finally:
        s.cleanup()
