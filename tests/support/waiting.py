"""Waiting on a real cluster: the controllers act a moment after the change they follow."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def until(what: str, probe: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll ``probe`` until it returns something truthy, and return that; fail naming
    ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g}s for {what}")
        time.sleep(0.1)
