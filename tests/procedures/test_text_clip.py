"""Another tool's message quoted in a line of fracctl's: one line, cut between words."""

from __future__ import annotations

from fracctl.core.text import clip

FORBIDDEN = (
    'StatefulSet.apps "db" is invalid: spec: Forbidden: updates to statefulset spec for '
    "fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
    "'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' "
    "are forbidden"
)


def test_a_short_message_is_one_line_and_whole() -> None:
    assert clip("Helm upgrade\n  failed:\tno  space", 300) == "Helm upgrade failed: no space"


def test_a_long_message_is_cut_at_a_word_and_says_so() -> None:
    said = clip(FORBIDDEN, 200)
    assert len(said) <= 200 and said.endswith("…")
    assert said[:-1] == FORBIDDEN[: len(said) - 1]
    assert not FORBIDDEN[len(said) - 1].isalnum()  # what follows the cut is no letter: whole words
    assert not said.startswith("forbidde") and "forbidde…" not in said


def test_one_long_word_is_cut_where_it_must_be() -> None:
    said = clip("x" * 50, 10)
    assert said == "x" * 9 + "…"
