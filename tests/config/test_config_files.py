"""The tests' fracctl.yaml helpers (tests/support/config_files.py): what they write is read."""

from __future__ import annotations

from pathlib import Path

from fracctl import config as cfg
from tests.support.config_files import edit_config, merged, read_config, write_config


def test_a_change_merges_by_key_and_keeps_the_rest(tmp_path: Path) -> None:
    base = {"timeouts": {"ready": "20s", "sync": "20s"}, "git": {"repo": tmp_path / "gitops"}}
    path = write_config(tmp_path / "fracctl.yaml", base)
    assert read_config(path) == {
        "timeouts": {"ready": "20s", "sync": "20s"},
        "git": {"repo": str(tmp_path / "gitops")},
    }
    other = edit_config(path, to=tmp_path / "other.yaml", timeouts={"sync": "1ms"}, flux={})
    assert read_config(path)["timeouts"]["sync"] == "20s"  # the original stays
    c = cfg.load(str(other), env={})
    assert (c.timeouts.ready, c.timeouts.sync, c.git.repo) == (20, 0.001, str(tmp_path / "gitops"))
    edit_config(path, recreate={"backend": "flux"}, flux={"leases": []})
    c = cfg.load(str(path), env={})
    assert (c.recreate.backend, c.flux.leases, c.timeouts.sync) == ("flux", [], 20)


def test_merged_leaves_its_arguments_alone() -> None:
    base = {"timeouts": {"ready": "20s"}}
    assert merged(base, {"timeouts": {"sync": "1s"}}) == {
        "timeouts": {"ready": "20s", "sync": "1s"}
    }
    assert base == {"timeouts": {"ready": "20s"}}
