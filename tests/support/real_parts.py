"""What the tests of a real part (Argo CD, Flux, promtool) share: how a part that cannot
run is reported, and the records they keep of what the real part did."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NoReturn

#: Under CI a real part that cannot run is a broken build, never a reason to skip.
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(message: str) -> NoReturn:
    """A real part the test needs cannot run: skip locally, fail under ``CI=true``."""
    import pytest

    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def live_record(live: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a real-part record says of the live object: its uid and selector, or None."""
    if live is None:
        return None
    return {
        "uid": live["metadata"]["uid"],
        "nodeSelector": (live.get("spec") or {}).get("nodeSelector"),
    }


def keep_record(records: list[dict[str, Any]], entry: dict[str, Any]) -> dict[str, Any]:
    """Add ``entry`` to a real part's records and print it (shown with -s or on failure)."""
    records.append(entry)
    print(json.dumps(entry, indent=2))
    return entry


def write_records(path: str | None, records: list[dict[str, Any]]) -> None:
    """Write a real part's records to ``path`` (its ``FRACCTL_*_RECORD``), if one is set."""
    if path and records:
        # Each xdist worker keeps its own records: records.gw0.json, records.gw1.json, …
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        target = Path(path)
        if worker:
            target = target.with_name(f"{target.stem}.{worker}{target.suffix}")
        target.write_text(json.dumps(records, indent=2) + "\n")
