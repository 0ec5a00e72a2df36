"""Helm's release records and hooks, read as Helm writes them (pure data)."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest

from fracctl.core.gitops import helm_release
from fracctl.core.recreate.plan import (
    FULL,
    NOTHING_TO_DO,
    RESUME_READY,
    RESUME_UPGRADE,
    UPGRADE,
    ReleaseState,
    decide,
)


def record(version: int, status: str, *, hooks: list[dict[str, Any]] | None = None,
           gz: bool = True, name: str = "op") -> dict[str, Any]:  # fmt: skip
    raw = {"name": name, "namespace": "ns", "version": version,
           "info": {"status": status, "description": "Upgrade complete"},
           "chart": {"metadata": {"name": "gpu-fractioning", "version": "0.4.0"}},
           "config": {"operator": {"logLevel": "debug"}}, "manifest": "---\nkind: ConfigMap",
           "hooks": hooks or []}  # fmt: skip
    payload = json.dumps(raw).encode()
    if gz:
        payload = gzip.compress(payload)
    inner = base64.b64encode(payload)
    return {"metadata": {"name": f"sh.helm.release.v1.{name}.v{version}", "namespace": "ns",
                         "labels": {"owner": "helm", "status": status}, "resourceVersion": "7"},
            "data": {"release": base64.b64encode(inner).decode()}}  # fmt: skip


HOOK = {
    "kind": "GpuFractioningConfig",
    "name": "default",
    "path": "op/templates/default-cr.yaml",
    "events": ["post-install", "post-upgrade"],
    "manifest": "kind: GpuFractioningConfig",
}


def test_a_record_decodes_with_its_hooks_and_values() -> None:
    r = helm_release.decode(record(3, "deployed", hooks=[HOOK]))
    assert (r.name, r.namespace, r.version, r.status, r.chart) == (
        "op",
        "ns",
        3,
        "deployed",
        "gpu-fractioning-0.4.0",
    )
    assert r.values == {"operator": {"logLevel": "debug"}} and not r.pending
    hook = r.hook_for("GpuFractioningConfig", "default")
    assert hook is not None and hook.recreated_on == ("post-install", "post-upgrade")
    assert r.hook_for("GpuFractioningConfig", "other") is None


def test_a_record_without_gzip_decodes_too() -> None:  # decodeRelease accepts both
    assert helm_release.decode(record(1, "pending-upgrade", gz=False)).pending


@pytest.mark.parametrize("data", [None, "not base64!", base64.b64encode(b"bm90IGpzb24=").decode(),
                                  base64.b64encode(base64.b64encode(b"[1]")).decode()])  # fmt: skip
def test_what_is_not_a_record_is_refused(data: str | None) -> None:
    with pytest.raises(helm_release.NotARelease):
        helm_release.decode({"data": {"release": data} if data else {}})


def test_latest_keeps_each_releases_newest_readable_revision() -> None:
    secrets = [record(1, "superseded"), record(3, "failed"), record(2, "deployed"),
               record(9, "deployed", name="other"),
               {"metadata": {"name": "sh.helm.release.v1.op.v4"}, "data": {"release": "x"}},
               {"metadata": {"name": "unrelated"}, "data": {}}]  # fmt: skip
    found = helm_release.latest(secrets)
    assert found[("ns", "op")].version == 3 and found[("ns", "other")].version == 9


def test_with_status_rewrites_the_revision_as_helm_would() -> None:
    secret = record(2, "pending-upgrade", hooks=[HOOK])
    changed = helm_release.with_status(secret, "failed", "interrupted")
    again = helm_release.decode(changed)
    assert (again.status, again.description, again.version) == ("failed", "interrupted", 2)
    assert again.hooks == helm_release.decode(secret).hooks
    assert changed["metadata"]["labels"]["status"] == "failed"
    assert changed["metadata"]["resourceVersion"] == "7", "a replace stays optimistic"


@pytest.mark.parametrize(
    ("annotations", "recreated"),
    [
        ({"helm.sh/hook": "post-install,post-upgrade"}, ("post-install", "post-upgrade")),
        ({"helm.sh/hook": "post-upgrade", "helm.sh/hook-delete-policy": "before-hook-creation"},
         ("post-upgrade",)),
        ({"helm.sh/hook": "post-upgrade", "helm.sh/hook-delete-policy": "hook-succeeded"}, ()),
        ({}, ()),
    ],
)  # fmt: skip
def test_which_hooks_helm_recreates(
    annotations: dict[str, str], recreated: tuple[str, ...]
) -> None:
    obj = {"metadata": {"annotations": annotations}}
    assert helm_release.recreated_by_hook(obj) == recreated


def test_the_release_name_defaults_to_the_chart_folder() -> None:
    assert helm_release.release_of("", "charts/gpu-fractioning/") == "gpu-fractioning"
    assert helm_release.release_of("op", "charts/x") == "op"
    assert helm_release.release_of("", ".") == "release"


SEL = {"a": "b"}


@pytest.mark.parametrize(
    ("verdict", "terminating", "state", "reason", "has_backup"),
    [
        ("needs-recreate", False, ReleaseState(False, False), FULL, True),
        ("in-sync", False, ReleaseState(True, False), FULL, True),
        ("applies-in-place", False, ReleaseState(False, False), FULL, True),
        ("missing-live", False, ReleaseState(True, False), RESUME_UPGRADE, False),
        ("in-sync", True, ReleaseState(True, False), RESUME_UPGRADE, False),
        ("in-sync", False, ReleaseState(True, True), RESUME_UPGRADE, False),
    ],
)  # fmt: skip
def test_the_upgrade_is_planned_whenever_the_object_or_the_release_differs(
    verdict: str, terminating: bool, state: ReleaseState, reason: str, has_backup: bool
) -> None:
    plan = decide(verdict=verdict, terminating=terminating, live_selector=SEL,
                  desired_selector=SEL, unready_nodes=[], release=state)  # fmt: skip
    assert plan.reason == reason and UPGRADE in plan.steps and plan.changes_cluster
    assert ("backup" in plan.steps) == has_backup
    assert "delete" not in plan.steps and "recreate" not in plan.steps
    if reason == FULL:
        assert "MPS daemons restart on every fraction node" in plan.summary


def test_an_upgrade_with_nothing_to_change_only_waits_or_does_nothing() -> None:
    same = ReleaseState(differs=False, interrupted=False)
    waits = decide(verdict="in-sync", terminating=False, live_selector=SEL, desired_selector=SEL,
                   unready_nodes=["n"], release=same)  # fmt: skip
    assert waits.reason == RESUME_READY and UPGRADE not in waits.steps
    done = decide(verdict="in-sync", terminating=False, live_selector=SEL, desired_selector=SEL,
                  unready_nodes=[], release=same)  # fmt: skip
    assert done.reason == NOTHING_TO_DO and not done.steps
