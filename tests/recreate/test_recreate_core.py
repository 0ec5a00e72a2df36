from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from fracctl.core.recreate import plan as r
from fracctl.core.recreate.lock import FREE, HELD, MINE, STALE, judge_lease, lease_spec, micro_time

OLD = {"example.org/gpu-class": "rtx-pro-6000"}
NEW = {"example.org/gpu-fractions": "enabled"}


def test_immutable_change_plans_the_full_path() -> None:
    plan = r.decide(
        verdict="needs-recreate",
        terminating=False,
        live_selector=OLD,
        desired_selector=NEW,
        unready_nodes=[],
    )
    assert plan.reason == r.FULL
    assert plan.steps == [
        r.PROVE,
        r.GUARDS,
        r.BACKUP,
        r.DELETE,
        r.WAIT_GONE,
        r.RECREATE,
        r.VERIFY,
        r.WAIT_READY,
        r.RECORD,
    ]
    assert plan.changes_cluster


def test_terminating_object_resumes_by_waiting_never_deletes_again() -> None:
    plan = r.decide(
        verdict="needs-recreate",
        terminating=True,
        live_selector=OLD,
        desired_selector=NEW,
        unready_nodes=[],
    )
    assert plan.reason == r.RESUME_GONE
    assert r.DELETE not in plan.steps and r.BACKUP not in plan.steps
    assert plan.steps[:3] == [r.PROVE, r.GUARDS, r.WAIT_GONE]


def test_missing_object_resumes_at_recreate() -> None:
    plan = r.decide(
        verdict="missing-live",
        terminating=False,
        live_selector=None,
        desired_selector=NEW,
        unready_nodes=[],
    )
    assert plan.reason == r.RESUME_MISSING
    assert r.DELETE not in plan.steps
    assert r.RECREATE in plan.steps


def test_in_sync_with_unready_nodes_only_waits() -> None:
    plan = r.decide(
        verdict="in-sync",
        terminating=False,
        live_selector=NEW,
        desired_selector=NEW,
        unready_nodes=["b200-0"],
    )
    assert plan.reason == r.RESUME_READY
    assert plan.steps == [r.WAIT_READY, r.RECORD]
    assert not plan.changes_cluster


@pytest.mark.parametrize(
    ("verdict", "reason"), [("in-sync", r.NOTHING_TO_DO), ("applies-in-place", r.IN_PLACE)]
)
def test_nothing_to_recreate(verdict: str, reason: str) -> None:
    plan = r.decide(
        verdict=verdict,
        terminating=False,
        live_selector=NEW,
        desired_selector=NEW,
        unready_nodes=[],
    )
    assert plan.reason == reason
    assert plan.steps == []
    assert plan.to_dict()["steps"] == []


NOW = datetime(2026, 11, 29, 10, 0, 0, tzinfo=timezone.utc)


def lease(holder: str, renewed: datetime, duration: int = 60) -> dict:  # type: ignore[type-arg]
    return {"spec": lease_spec(me=holder, now=renewed, duration=duration)}


def test_lease_states() -> None:
    assert judge_lease(None, me="a", now=NOW).state == FREE
    assert judge_lease({"spec": {}}, me="a", now=NOW).state == FREE
    assert judge_lease(lease("a", NOW), me="a", now=NOW).state == MINE
    held = judge_lease(lease("b", NOW - timedelta(seconds=10)), me="a", now=NOW)
    assert held.state == HELD
    assert held.holder == "b"
    assert held.since == NOW - timedelta(seconds=10)
    stale = judge_lease(lease("b", NOW - timedelta(seconds=61)), me="a", now=NOW)
    assert stale.state == STALE


def test_micro_time_round_trip() -> None:
    text = micro_time(NOW)
    assert text == "2026-11-29T10:00:00.000000Z"
    assert (
        judge_lease(
            {"spec": {"holderIdentity": "b", "renewTime": "garbage", "leaseDurationSeconds": 5}},
            me="a",
            now=NOW,
        ).state
        == STALE
    )


def test_a_change_that_restarts_the_daemons_is_updated_in_place_guarded() -> None:
    plan = r.decide(
        verdict="restarts-daemons",
        terminating=False,
        live_selector=OLD,
        desired_selector=OLD,
        unready_nodes=[],
    )
    assert plan.reason == r.ROLL
    assert plan.steps == [r.PROVE, r.GUARDS, r.BACKUP, r.ARM, r.UPDATE, r.VERIFY, r.WAIT_READY,
                          r.RECORD]  # fmt: skip
    assert r.DELETE not in plan.steps and plan.changes_cluster


def test_an_unfinished_rollout_is_waited_for_though_the_nodes_say_ready() -> None:
    rolling = ["DaemonSet gpu-fractioning/gpu-fractioning-mpsd: 0 of 1 pod(s) updated, 1 ready"]
    plan = r.decide(verdict="in-sync", terminating=False, live_selector=OLD,
                    desired_selector=OLD, unready_nodes=[], rolling=rolling)  # fmt: skip
    assert plan.reason == r.RESUME_READY and plan.steps == [r.WAIT_READY, r.RECORD]
    assert "0 of 1 pod(s) updated" in plan.summary
    assert not plan.changes_cluster


def test_a_chart_upgrade_carries_a_change_that_restarts_the_daemons() -> None:
    plan = r.decide(verdict="restarts-daemons", terminating=False, live_selector=OLD,
                    desired_selector=OLD, unready_nodes=[],
                    release=r.ReleaseState(differs=True, interrupted=False))  # fmt: skip
    assert plan.reason == r.FULL and r.UPGRADE in plan.steps
    assert plan.summary.startswith("a field that rolls the daemons differs")
