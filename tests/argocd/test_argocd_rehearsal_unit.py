"""The Argo CD rehearsal's judgements on Argo CD's answers (no server needed)."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.core.recreate.sync_target import SyncTarget
from fracctl.errors import Refused
from fracctl.flows.context import Context
from fracctl.flows.engines.argocd import application as argo
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
        argo.rendered_target(ctx(), [GIT] * count, "app", "HEAD (0123456789ab)", GIT)
    assert f"with {count} GpuFractioningConfig/default objects, not one" in e.value.message


def test_the_rendered_target_with_git_selector_is_what_will_be_created() -> None:
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "default"}}
    assert argo.rendered_target(ctx(), [other, GIT], "app", "HEAD", GIT) is GIT


def test_a_closed_window_names_what_is_active() -> None:
    windows = {
        "canSync": False,
        "activeWindows": [
            {"kind": "deny", "schedule": "0 22 * * *", "duration": "1h", "manualSync": False}
        ],
    }
    with pytest.raises(Refused) as e:
        argo.windows_open(windows, "app")
    assert "deny 0 22 * * * for 1h (manualSync false)" in e.value.message
    assert argo.windows_open({"canSync": True}, "app").endswith("(0 active)")


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
        argo.idle(doc, "app", SyncTarget.of_config(cfg.Config().target))
    assert needle in e.value.message


IMMUTABLE = (
    'GpuFractioningConfig.gpu-fractioning.kai.scheduler "default" is invalid: '
    'spec.nodeSelector: Invalid value: "object": nodeSelector is immutable'
)


def _automated(phase: str, resources: list[dict[str, str]], message: str = "") -> dict[str, Any]:
    return {
        "operation": {"initiatedBy": {"automated": True}, "sync": {}},
        "status": {"operationState": {
            "phase": phase, "message": message,
            "operation": {"initiatedBy": {"automated": True}},
            "syncResult": {"resources": resources},
        }},
    }  # fmt: skip


def test_only_an_automated_sync_failing_on_the_targets_selector_may_be_stopped() -> None:
    t = SyncTarget.of_config(cfg.Config().target)
    target = {"group": t.group, "kind": t.kind, "name": "default", "status": "SyncFailed",
              "message": IMMUTABLE}  # fmt: skip
    said = argo.idle(_automated("Running", [target], "Retrying attempt #2"), "app", t)
    assert said is not None and "failing on GpuFractioningConfig/default" in said
    # Only the message says so yet: still that failure.
    assert argo.idle(
        _automated("Running", [], f"one or more objects failed: {IMMUTABLE}"), "app", t
    )
    other = {**target, "kind": "ConfigMap", "name": "x", "message": "forbidden"}
    for doc in (
        _automated("Running", [target, other]),  # something else fails too
        _automated("Running", [{**target, "message": "conflict"}]),  # not the selector
        _automated("Running", []),  # nothing known yet
        {**_automated("Running", [target]), "operation": {"initiatedBy": {"username": "me"}}},
    ):
        with pytest.raises(Refused, match="runs an operation now"):
            argo.idle(doc, "app", t)


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
    assert argo.pinnable(doc) == pinned
    assert argo.pinnable({"spec": spec, "status": {"sync": {"revision": "HEAD"}}}) is None


def test_a_deny_window_that_opens_before_the_run_ends_refuses() -> None:
    from datetime import datetime, timezone

    from fracctl.errors import Refused

    now = datetime(2026, 12, 2, 14, 30, 20, tzinfo=timezone.utc).timestamp()
    deny = {"kind": "deny", "schedule": "35 14 * * *", "duration": "1h", "manualSync": False}
    with pytest.raises(Refused, match=r"opens at 2026-12-02T14:35:00\+00:00"):
        argo.no_window_opens({"assignedWindows": [deny]}, "app", 600, now)
    # Not within the run, letting manual syncs through, or an allow window: no refusal.
    assert "no deny sync window" in argo.no_window_opens(
        {"assignedWindows": [deny]}, "app", 60, now
    )
    for w in ({**deny, "manualSync": True}, {**deny, "kind": "allow"}):
        assert "no deny" in argo.no_window_opens({"assignedWindows": [w]}, "app", 600, now)
    with pytest.raises(Refused, match="cannot read"):
        argo.no_window_opens({"assignedWindows": [{**deny, "schedule": "nope"}]}, "app", 600, now)


STS_FORBIDDEN = (
    'StatefulSet.apps "db" is invalid: spec: Forbidden: updates to statefulset spec for '
    "fields other than 'replicas', 'ordinals', 'template', 'updateStrategy' … are forbidden"
)


def test_an_automated_sync_failing_on_a_statefulsets_spec_may_be_stopped() -> None:
    """A built-in kind's refusal is not worded "immutable": the target's own cause counts."""
    from fracctl.core.kube.resources import ResourceRef

    ref = ResourceRef("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet",
           "metadata": {"name": "db", "namespace": "shop"}}  # fmt: skip
    t = SyncTarget.of_object(sts, ref, ("spec.serviceName",), STS_FORBIDDEN)
    assert t.refusal == "spec: Forbidden"
    failed = {"group": "apps", "kind": "StatefulSet", "name": "db", "status": "SyncFailed",
              "message": STS_FORBIDDEN}  # fmt: skip
    said = argo.idle(_automated("Running", [failed]), "app", t)
    assert said is not None and "failing on StatefulSet/db's immutable field" in said
    plain = SyncTarget.of_object(sts, ref, ("spec.serviceName",))  # no cause known
    with pytest.raises(Refused, match="runs an operation now"):
        argo.idle(_automated("Running", [failed]), "app", plain)
