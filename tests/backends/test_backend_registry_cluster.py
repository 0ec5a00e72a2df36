"""A new backend is one module plus one registry entry: recreate runs it like the others."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from fracctl.core.gitops import backends as registry
from fracctl.core.gitops.backends import BackendEntry
from fracctl.errors import UsageError
from fracctl.flows import engines
from fracctl.flows.recreate import recreate
from tests.support import dry_backend
from tests.support.helpers import Cluster
from tests.support.recreate_fixtures import NEW, make_incident


@pytest.fixture
def with_dry(monkeypatch: pytest.MonkeyPatch) -> dry_backend.Calls:
    """The dry backend registered for this test; what it was asked, recorded for this test."""
    entry = BackendEntry("dry", "records calls", "tests.support.dry_backend:DryBackend")
    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, entry))
    return dry_backend.recording(monkeypatch)


def test_a_registered_backend_is_proven_before_the_delete_and_recreates(
    cluster: Cluster, tmp_path: Path, with_dry: dry_backend.Calls
) -> None:
    incident = make_incident(cluster, tmp_path)
    with incident.operator():
        result = recreate(incident.context(), yes=True, backend="dry")
    assert result.outcome == "recreated"
    assert result.notes[-1] == "the dry backend created it"
    assert "the dry backend is always ready" in result.proofs
    assert with_dry == [("validate", None), ("check", 0), ("recreate", 1)]
    live = cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW


def test_the_registry_is_what_config_and_lookup_accept(with_dry: dry_backend.Calls) -> None:
    from fracctl import config as cfg

    assert "dry" in registry.names()
    assert registry.choices() == "argocd, flux, helm, apply or dry"
    loaded = cfg.load(None, env={}, overrides={"recreate.backend": "dry"})
    assert loaded.recreate.backend == "dry"
    # select() reads the run's backend (--backend), else recreate.backend; one engine a run
    ctx: Any = SimpleNamespace(config=loaded, backend="", engines={})
    assert engines.select(ctx).name == "dry"
    assert engines.select(ctx) is engines.select(ctx, "dry")
    assert engines.select(ctx, "apply").name == "apply"
    first = engines.for_run(ctx, "apply")
    assert first is engines.select(ctx) is engines.select(ctx, "apply")
    again = engines.for_run(ctx, None)  # the next run on this context: its engines anew
    assert again.name == "dry" and engines.select(ctx, "apply") is not first
    with pytest.raises(
        UsageError, match="unknown backend 'helmfile' .use argocd, flux, helm, apply or dry"
    ):
        engines.select(ctx, "helmfile")
