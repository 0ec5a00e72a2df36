"""Outcomes: the words the output shows, and the exit code each means."""

from __future__ import annotations

import json

import pytest

from fracctl.core.outcome import Outcome
from fracctl.errors import ExitCode

EXPECTED = {
    Outcome.PLANNED: ExitCode.OK,
    Outcome.NOTHING_TO_DO: ExitCode.OK,
    Outcome.APPLIES_IN_PLACE: ExitCode.OK,
    Outcome.DRY_RUN: ExitCode.OK,
    Outcome.RECREATED: ExitCode.OK,
    Outcome.UPDATED: ExitCode.OK,
    Outcome.READY: ExitCode.OK,
    Outcome.RESTORED: ExitCode.OK,
    Outcome.IN_SYNC: ExitCode.OK,
    Outcome.DRIFTED: ExitCode.FINDING,
    Outcome.PASSED: ExitCode.OK,
    Outcome.REFUSED: ExitCode.FINDING,
    Outcome.NOT_STARTED: ExitCode.OK,
    Outcome.UNREACHABLE: ExitCode.EXTERNAL,
    Outcome.FAILED: ExitCode.EXTERNAL,
    Outcome.INTERRUPTED: ExitCode.INTERRUPTED,
}


def test_every_outcome_has_its_exit_code() -> None:
    assert set(EXPECTED) == set(Outcome), "the table covers every outcome"
    for outcome, code in EXPECTED.items():
        assert outcome.exit_code is code, outcome


@pytest.mark.parametrize("outcome", list(Outcome))
def test_an_outcome_reads_as_its_word(outcome: Outcome) -> None:
    word = outcome.value
    assert outcome == word and str(outcome) == word and f"{outcome}" == word
    assert f"{outcome:>20}" == f"{word:>20}"
    assert json.dumps({"outcome": outcome}) == json.dumps({"outcome": word})
    assert {word: 1}[outcome] == 1 and {outcome: 1}[word] == 1
