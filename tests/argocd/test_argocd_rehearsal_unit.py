"""The Argo CD rehearsal's judgements on Argo CD's answers (no server needed)."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.errors import Refused
from fracctl.flows.backends import argocd as b
from fracctl.flows.context import Context
from tests.support.helpers import unit_context

GROUP = "gpu-fractioning.kai.scheduler/v1alpha1"
SHA = "0123456789abcdef0123456789abcdef01234567"


def ctx() -> Context:
    ctx: Context = unit_context(cfg.Config())
    return ctx


def target(selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "GpuFractioningConfig",
        "metadata": {"name": "default"},
        "spec": {"nodeSelector": selector},
    }


GIT = target({"example.org/gpu-fractions": "enabled"})


@pytest.mark.parametrize("count", [0, 2])
def test_a_rendering_without_exactly_one_target_is_refused(count: int) -> None:
    with pytest.raises(Refused) as e:
        b._rendered_target(ctx(), [GIT] * count, "app", "HEAD (0123456789ab)", GIT)
    assert f"with {count} GpuFractioningConfig/default objects, not one" in e.value.message


def test_the_rendered_target_with_git_selector_is_what_will_be_created() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "default"}}
    assert b._rendered_target(ctx(), [other, GIT], "app", "HEAD", GIT) is GIT


def test_a_closed_window_names_what_is_active() -> None:
    windows = {
        "canSync": False,
        "activeWindows": [
            {"kind": "deny", "schedule": "0 22 * * *", "duration": "1h", "manualSync": False}
        ],
    }
    with pytest.raises(Refused) as e:
        b._windows_open(windows, "app")
    assert "deny 0 22 * * * for 1h (manualSync false)" in e.value.message
    assert b._windows_open({"canSync": True}, "app").endswith("(0 active)")


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"metadata": {"deletionTimestamp": "2026-12-01T00:00:00Z"}}, "is being deleted"),
        ({"operation": {"sync": {}}}, "runs an operation now (Pending"),
        ({"status": {"operationState": {"phase": "Terminating"}}}, "(Terminating"),
    ],
)
def test_a_busy_or_deleting_application_is_refused(doc: dict[str, Any], needle: str) -> None:
    with pytest.raises(Refused) as e:
        b._idle(doc, "app")
    assert needle in e.value.message


@pytest.mark.parametrize(
    ("spec", "pinned"),
    [
        ({"source": {"repoURL": "https://git.example/x"}}, SHA),
        ({"source": {"repoURL": "r"}, "syncPolicy": {"automated": {}}}, None),
        ({"source": {"repoURL": "r"}, "syncPolicy": {"automated": {"enabled": False}}}, SHA),
        ({"sources": [{"repoURL": "r"}]}, None),
    ],
)
def test_a_sync_is_pinned_only_where_argocd_accepts_a_pinned_revision(
    spec: dict[str, Any], pinned: str | None
) -> None:
    doc = {"spec": spec, "status": {"sync": {"revision": SHA}}}
    assert b._pinnable(doc) == pinned
    assert b._pinnable({"spec": spec, "status": {"sync": {"revision": "HEAD"}}}) is None
