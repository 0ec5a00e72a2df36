"""When a cron schedule fires: enough to tell whether an Argo CD sync window opens soon.

Argo CD reads a window's ``schedule`` with robfig/cron's parser for five fields
(``cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)``: minute,
hour, day of month, month, day of week; no descriptor such as ``@daily``) in the
window's ``timeZone`` (argo-cd v3.2.11 ``pkg/apis/application/v1alpha1/types.go``,
``SyncWindow.active``). As in robfig/cron, when both day fields are restricted a day
matches either of them, and when one is ``*`` the other alone decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = {
    m: i + 1 for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())
}
_DAYS = {d: i for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split())}
_NONE: dict[str, int] = {}
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, _NONE),
    (0, 23, _NONE),
    (1, 31, _NONE),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)


@dataclass(frozen=True)
class Schedule:
    """A parsed five-field schedule: the values each field allows."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool  # the day-of-month field is ``*``
    any_weekday: bool  # the day-of-week field is ``*``

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """Parse ``text``.

        Raises:
            ValueError: not a schedule robfig/cron's standard parser takes.
        """
        fields = text.split()
        if len(fields) != 5:
            raise ValueError(f"cron schedule {text!r} does not have five fields")
        sets = [
            _field(f, lo, hi, names) for f, (lo, hi, names) in zip(fields, _BOUNDS, strict=True)
        ]
        weekdays = frozenset(d % 7 for d in sets[4])  # 7 is Sunday too
        return cls(sets[0], sets[1], sets[2], sets[3], weekdays,
                   fields[2] in ("*", "?"), fields[4] in ("*", "?"))  # fmt: skip

    def matches(self, t: datetime) -> bool:
        """Whether the schedule fires in the minute of ``t``."""
        if t.minute not in self.minutes or t.hour not in self.hours:
            return False
        if t.month not in self.months:
            return False
        dom = t.day in self.days
        dow = (t.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow


def _field(text: str, lo: int, hi: int, names: dict[str, int]) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"cron step {part!r} must be positive")
        if body in ("*", "?"):
            start, end = lo, hi
        elif "-" in body:
            a, b = body.split("-", 1)
            start, end = _value(a, names), _value(b, names)
        else:
            start = _value(body, names)
            end = hi if step_text else start
        if not (lo <= start <= end <= hi + (1 if names is _DAYS else 0)):
            raise ValueError(f"cron field {part!r} is out of range {lo}-{hi}")
        out.update(range(start, end + 1, step))
    return frozenset(out)


def _value(text: str, names: dict[str, int]) -> int:
    upper = text.upper()
    if upper in names:
        return names[upper]
    return int(text)


def next_fire(schedule: str, start: datetime, within: timedelta, tz: str = "") -> datetime | None:
    """The first minute in (``start``, ``start + within``] at which ``schedule`` fires.

    Args:
        schedule: the cron schedule.
        start: an aware datetime.
        within: how far ahead to look.
        tz: the IANA time zone the schedule is read in ("" is UTC).

    Raises:
        ValueError: the schedule or the time zone is not valid.
    """
    try:
        zone = ZoneInfo(tz) if tz else timezone.utc
    except ZoneInfoNotFoundError:
        raise ValueError(f"unknown time zone {tz!r}") from None
    s = Schedule.parse(schedule)
    t = start.astimezone(zone).replace(second=0, microsecond=0) + timedelta(minutes=1)
    end = start + within
    while t <= end:
        if s.matches(t):
            return t
        t += timedelta(minutes=1)
    return None
