"""A kill test prints the seed of its random moment; the seed it prints replays it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_printed_seed_reaches_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``FRACCTL_TEST_SEED=N pytest …`` reaches the test through the clean environment
    every test gets (which drops every other FRACCTL_ variable)."""
    pytester.makeconftest((REPO / "tests" / "conftest.py").read_text())
    pytester.makepyfile(
        test_inner="""
        import os

        from tests.support.killing import seeded_jitter

        def test_seed(capsys):
            assert os.environ.get("FRACCTL_TEST_SEED") == "424242"
            assert os.environ.get("FRACCTL_OTHER") is None
            seeded_jitter("here")
            assert "(FRACCTL_TEST_SEED=424242)" in capsys.readouterr().out
        """
    )
    monkeypatch.setenv("FRACCTL_TEST_SEED", "424242")
    monkeypatch.setenv("FRACCTL_OTHER", "dropped")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "-q")
    result.assert_outcomes(passed=1)
