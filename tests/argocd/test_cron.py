"""Cron schedules as Argo CD reads a sync window's (robfig/cron's standard parser)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from fracctl.core.gitops.cron import Schedule, next_fire

T0 = datetime(2026, 12, 2, 14, 30, 20, tzinfo=timezone.utc)  # a Wednesday


@pytest.mark.parametrize(
    ("schedule", "within", "want"),
    [
        ("* * * * *", 60, datetime(2026, 12, 2, 14, 31, tzinfo=timezone.utc)),
        ("35 14 * * *", 300, datetime(2026, 12, 2, 14, 35, tzinfo=timezone.utc)),
        ("35 14 * * *", 240, None),
        ("*/20 * * * *", 1800, datetime(2026, 12, 2, 14, 40, tzinfo=timezone.utc)),
        ("0 15 * * WED", 3600, datetime(2026, 12, 2, 15, 0, tzinfo=timezone.utc)),
        ("0 15 * * 4", 3600, None),  # Thursday only
        ("0 15 3 * 3", 3600, datetime(2026, 12, 2, 15, 0, tzinfo=timezone.utc)),  # dom or dow
        ("0 15 3 * *", 3600, None),
        ("0 0 * DEC 0,7", 5 * 86400, datetime(2026, 12, 6, 0, 0, tzinfo=timezone.utc)),
    ],
)
def test_the_first_fire_within(schedule: str, within: int, want: datetime | None) -> None:
    assert next_fire(schedule, T0, timedelta(seconds=within)) == want


def test_a_time_zone_moves_the_fire() -> None:
    # 15:35 in Berlin (UTC+1 in December) is 14:35 UTC.
    got = next_fire("35 15 * * *", T0, timedelta(minutes=10), "Europe/Berlin")
    assert got is not None and got.astimezone(timezone.utc).hour == 14


@pytest.mark.parametrize(
    "bad",
    ["* * * *", "61 * * * *", "*/0 * * * *", "x * * * *", "@hourly"],  # no descriptors
)
def test_bad_schedules_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        Schedule.parse(bad)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        next_fire("* * * * *", T0, timedelta(minutes=1), "Mars/Olympus")
