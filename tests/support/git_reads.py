"""Counting how often a run reads git: its tree exports, its renderings, helm's dry runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class GitReads:
    """The commits exported and the renderers run, in order."""

    exports: list[str] = field(default_factory=list)
    renders: list[str] = field(default_factory=list)


def count_git_reads(monkeypatch: pytest.MonkeyPatch) -> GitReads:
    """Count every export of a git tree and every rendering of one from now on."""
    from fracctl.adapters.render import revision

    reads = GitReads()
    real_export, real_render = revision.export_tree, revision._render_export

    def export_tree(gitdir: str, commit: str, *rest: Any) -> None:
        reads.exports.append(commit)
        real_export(gitdir, commit, *rest)

    def render(chosen: str, *rest: Any, **kw: Any) -> Any:
        reads.renders.append(chosen)
        return real_render(chosen, *rest, **kw)

    monkeypatch.setattr(revision, "export_tree", export_tree)
    monkeypatch.setattr(revision, "_render_export", render)
    return reads


def count_dry_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``helm upgrade --dry-run=server`` fracctl runs from now on (its release)."""
    from fracctl.adapters.helm import HelmCLI

    runs: list[str] = []
    real = HelmCLI.upgrade

    def upgrade(self: HelmCLI, release: str, *args: Any, **kw: Any) -> Any:
        if kw.get("dry_run"):
            runs.append(release)
        return real(self, release, *args, **kw)

    monkeypatch.setattr(HelmCLI, "upgrade", upgrade)
    return runs
