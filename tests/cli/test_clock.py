"""The one clock and the one backoff."""

from __future__ import annotations

import time

import pytest

from fracctl.core.clock import Backoff, Clock, SystemClock
from tests.support.helpers import FakeClock


def test_backoff_doubles_and_caps() -> None:
    b = Backoff(first=1, factor=2, cap=10)
    assert [b.delay(n) for n in range(0, 7)] == [0, 1, 2, 4, 8, 10, 10]


def test_backoff_next_hands_out_the_delays_in_turn_and_resets() -> None:
    b = Backoff(first=1, factor=2, cap=5)
    assert [b.next() for _ in range(5)] == [1, 2, 4, 5, 5]
    b.reset()
    assert b.next() == 1


def test_backoff_defaults_grow_by_a_factor_of_1_6_up_to_5s() -> None:
    b = Backoff()
    delays = [b.next() for _ in range(12)]
    assert delays[:3] == [0.25, 0.4, pytest.approx(0.64)]
    assert delays[-1] == 5.0
    assert delays == sorted(delays)


def test_backoff_stays_capped_after_very_many_attempts() -> None:
    assert Backoff().delay(100_000) == 5.0


def test_the_system_clock_reads_time() -> None:
    clock: Clock = SystemClock()
    before = time.monotonic()
    clock.sleep(0)
    assert clock.monotonic() >= before
    assert abs(clock.now() - time.time()) < 60


def test_the_fake_clock_moves_only_when_slept_on() -> None:
    fake = FakeClock()
    clock: Clock = fake
    assert clock.monotonic() == 0
    clock.sleep(1.5)
    assert clock.monotonic() == 1.5
    assert clock.now() == fake.epoch + 1.5
    assert fake.sleeps == [1.5]
