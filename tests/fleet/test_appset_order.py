"""The rollout's order as fracctl reads it from Argo CD's objects (the shapes Argo CD v3.2
writes; tests/argocd/test_argocd_gate_e2e.py holds them to the real ones)."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl.core.appset_order import (
    Behind,
    applied,
    behind,
    instance_of,
    not_at,
    out_of_turn,
    progressive,
    short,
    syncing,
)

OLD, NEW = "a" * 40, "b" * 40


def app(name: str, *, compared: str = NEW, sync: str = "Synced", health: str = "Healthy",
        phase: str = "Succeeded", last: str = NEW, history: list[Any] | None = None,
        ) -> dict[str, Any]:  # fmt: skip
    return {
        "metadata": {"name": name},
        "status": {
            "sync": {"status": sync, "revision": compared},
            "health": {"status": health},
            "operationState": {"phase": phase, "operation": {"sync": {}},
                               "syncResult": {"revision": last}},
            "history": history or [],
        },
    }  # fmt: skip


def appset(**steps: int) -> dict[str, Any]:
    entries = [{"application": a, "step": str(s), "status": "Healthy"} for a, s in steps.items()]
    return {"spec": {"strategy": {"type": "RollingSync"}},
            "status": {"applicationStatus": entries}}  # fmt: skip


def test_the_tracking_id_names_the_application_and_its_namespace() -> None:
    assert instance_of("gated-ap:/Pod:fracctl/fracctl-gate-pre-sync") == (None, "gated-ap")
    assert instance_of("team_gated-ap:/Pod:fracctl/x") == ("team", "gated-ap")
    for bad in ("", "gated-ap", ":/Pod:fracctl/x"):
        with pytest.raises(ValueError, match="not an Argo CD tracking id"):
            instance_of(bad)


def test_the_revision_a_sync_applies_is_a_resolved_sha_only() -> None:
    a = app("x", last="")
    assert syncing(a) == ""
    a["status"]["operationState"]["operation"]["sync"]["revision"] = "HEAD"
    assert syncing(a) == "", "a branch name is not the revision"
    a["status"]["operationState"]["operation"]["sync"]["revision"] = NEW
    assert syncing(a) == NEW
    a["status"]["operationState"]["syncResult"]["revision"] = OLD
    assert syncing(a) == OLD, "the resolved one comes first"
    assert short(NEW) == "bbbbbbb" and short("HEAD") == "HEAD" and short("") == "none"


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({}, ""),
        ({"compared": OLD}, "Argo CD compares it with aaaaaaa"),
        ({"sync": "OutOfSync", "phase": "Running"}, "OutOfSync at bbbbbbb"),
        (
            {"sync": "OutOfSync"},
            "OutOfSync at bbbbbbb although its last sync of it reported "
            "success: the live objects are not git's",
        ),
        ({"health": "Progressing"}, "health Progressing"),
        ({"phase": "Failed"}, "its last sync (Failed) was of bbbbbbb"),
        ({"phase": "Running", "last": OLD}, "its last sync (Running) was of aaaaaaa"),
    ],
)
def test_a_cluster_runs_a_revision_only_when_synced_healthy_and_its_last_sync_applied_it(
    changes: dict[str, str], why: str
) -> None:
    assert not_at(app("x", **changes), NEW) == why


def test_only_the_earlier_steps_that_do_not_run_the_revision_hold_a_cluster_back() -> None:
    apps = [app("canary", compared=OLD, last=OLD), app("early"),
            app("rest-1", sync="OutOfSync", phase="Running"),
            app("rest-2", compared=OLD)]  # fmt: skip
    a = appset(canary=1, early=2, **{"rest-1": 3, "rest-2": 3})
    assert behind(a, apps, "canary", NEW) == []
    assert behind(a, apps, "early", NEW) == [
        Behind("canary", 1, "Argo CD compares it with aaaaaaa")
    ]
    assert [str(b) for b in behind(a, apps, "rest-2", NEW)] == [
        "canary (step 1): Argo CD compares it with aaaaaaa"]  # fmt: skip
    apps[0] = app("canary")
    assert behind(a, apps, "rest-1", NEW) == [], "the same step never holds one back"
    with pytest.raises(ValueError, match="no step for stray"):
        behind(a, apps, "stray", NEW)
    assert progressive(a) and not progressive({"spec": {}})


def test_applied_is_the_last_successful_sync() -> None:
    assert applied(app("x")) == NEW
    failed = app("x", phase="Failed", history=[{"revision": OLD}])
    assert applied(failed) == OLD
    assert applied(app("x", phase="Running", history=[])) == ""


def test_a_later_step_deployed_before_the_canary_ran_it_is_out_of_turn() -> None:
    def deployed(rev: str, began: str, ended: str) -> dict[str, str]:
        return {"revision": rev, "deployStartedAt": began, "deployedAt": ended}

    canary = app("canary", history=[deployed(OLD, "T01", "T02"), deployed(NEW, "T20", "T30")])
    early = app("early", history=[deployed(OLD, "T03", "T04"), deployed(NEW, "T10", "T12")])
    rest = app("rest", history=[deployed(NEW, "T33", "T35")])
    a = appset(canary=1, early=2, rest=3)
    broken = out_of_turn(a, [canary, early, rest])
    assert list(broken) == ["early"], broken
    assert str(broken["early"]) == "canary (step 1): bbbbbbb finished T30; this one began T10"
    early["status"]["history"][-1] = deployed(NEW, "T31", "T32")
    assert out_of_turn(a, [canary, early, rest]) == {}
    never = app("canary", last=OLD, history=[deployed(OLD, "T01", "T02")])
    broken = out_of_turn(a, [never, early, rest])
    assert sorted(broken) == ["early", "rest"], broken
    assert all(b.application == "canary" and b.why.startswith("bbbbbbb not deployed")
               for b in broken.values())  # fmt: skip
