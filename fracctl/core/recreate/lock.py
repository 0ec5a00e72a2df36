"""Pure decisions about the ``coordination.k8s.io`` Lease that serialises recreates."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

FREE = "free"  # no lease, or nobody holds it
MINE = "mine"
HELD = "held"  # another holder, still within its lease
STALE = "stale"  # another holder whose lease expired


def micro_time(when: datetime) -> str:
    """A Kubernetes MicroTime string."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str | None) -> datetime | None:
    """Parse a Time or MicroTime string; None when absent or unreadable."""
    if not text:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class LeaseState:
    """Who holds the lease and whether it is still valid at ``now``."""

    state: str
    holder: str = ""
    since: datetime | None = None
    expires: datetime | None = None


def judge_lease(lease: dict[str, Any] | None, *, me: str, now: datetime) -> LeaseState:
    """Decide what a lease means for ``me`` at ``now``."""
    if lease is None:
        return LeaseState(FREE)
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    if not holder:
        return LeaseState(FREE)
    since = parse_time(spec.get("acquireTime"))
    renewed = parse_time(spec.get("renewTime")) or since
    duration = int(spec.get("leaseDurationSeconds") or 0)
    expires = renewed + timedelta(seconds=duration) if renewed else None
    if holder == me:
        return LeaseState(MINE, holder, since, expires)
    if expires is None or expires <= now:
        return LeaseState(STALE, holder, since, expires)
    return LeaseState(HELD, holder, since, expires)


def lease_spec(
    *, me: str, now: datetime, duration: int, acquired: datetime | None = None
) -> dict[str, Any]:
    """The spec of a lease held by ``me``."""
    return {
        "holderIdentity": me,
        "leaseDurationSeconds": max(1, int(duration)),
        "acquireTime": micro_time(acquired or now),
        "renewTime": micro_time(now),
    }


def run_of(holder: str) -> str:
    """The run id a holder identity names (``alice@host pid 7 run 3060ba5a``), or ""."""
    head, sep, run = holder.rpartition(" run ")
    return run if sep and head else ""
