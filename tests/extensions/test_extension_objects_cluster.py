"""An extension backend with its other half: ``recreate KIND/NAME`` through its creator.

A new backend is one module plus one registry line: the line's ``objects`` names the
creator the KIND/NAME procedures call, and nothing else in fracctl learns its name.
"""

from __future__ import annotations

import pytest

from fracctl.core.gitops import backends as registry
from fracctl.core.gitops.backends import BackendEntry
from fracctl.errors import ExitCode
from tests.kinds.test_recreate_kinds_cluster import RBAC, binding
from tests.support.helpers import run_cli
from tests.support.kinds_fixtures import Shop

pytestmark = pytest.mark.cluster
HERE = "tests.extensions"


@pytest.fixture
def stamped_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry line, this time with its ``objects``."""
    entry = BackendEntry(
        "stamped",
        "server-side apply under its own field manager",
        f"{HERE}.stamped.backend:StampedBackend",
        section=f"{HERE}.stamped.backend:StampedConfig",
        objects=f"{HERE}.stamped.objects:stamped_creator",
    )
    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, entry))


def test_an_extension_backend_with_a_creator_recreates_an_object(
    stamped_objects: None, shop: Shop
) -> None:
    shop.commit(binding("view"))
    old = shop.create(binding("view"))
    shop.commit(binding("edit"))
    args = ["-c", str(shop.config), "recreate", "RoleBinding/team", "-n", shop.ns,
            "--backend", "stamped"]  # fmt: skip
    plan = run_cli(*args, "--dry-run")
    assert plan.exit_code == ExitCode.OK, plan.output
    assert "the stamped backend creates it (fracctl-stamped)" in plan.output, plan.output
    r = run_cli(*args, "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    new = shop.live(f"{RBAC}/v1", "RoleBinding", "team")
    assert new is not None and new["roleRef"]["name"] == "edit"
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
