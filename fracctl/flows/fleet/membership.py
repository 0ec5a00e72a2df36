"""The clusters a run addresses: each one's name in reports, context, wave and overrides.

A fleet comes from ``fleet.clusters`` in fracctl.yaml, from ``--context`` given more than
once, or from every context of the kubeconfig (``--all-contexts``); a context listed in
``fleet.clusters`` keeps that entry's name, wave and overrides. One ``--context`` without
a ``fleet:`` section is no fleet at all, but the single-cluster run it always was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fracctl.config import Config
from fracctl.errors import UsageError


@dataclass(frozen=True)
class Member:
    """One cluster of the fleet: its name in reports, its context, wave and overrides."""

    name: str
    context: str | None
    wave: int = 0
    app: str | None = None
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {"context": self.context, "wave": self.wave, "app": self.app, "path": self.path}


def members(
    config: Config,
    *,
    contexts: Sequence[str] = (),
    all_contexts: bool = False,
    env: Mapping[str, str] | None = None,
) -> list[Member] | None:
    """The clusters this run addresses, or ``None`` for one cluster as before.

    ``--all-contexts`` takes every context of the kubeconfig; ``--context`` given more
    than once takes those; otherwise ``fleet.clusters``. A context that is also listed in
    ``fleet.clusters`` keeps that entry's name, wave and overrides. One ``--context``
    without a ``fleet:`` section is the single-cluster run it always was.
    """
    entries = {c.context: c for c in config.fleet.clusters}
    if all_contexts:
        from fracctl.adapters.kube import kubeconfig_contexts

        names = kubeconfig_contexts(config.kube.kubeconfig, env)
        if not names:
            raise UsageError("--all-contexts: the kubeconfig names no context")
    elif contexts:
        names = list(dict.fromkeys(contexts))
        if len(names) == 1 and not entries:
            return None
    elif entries:
        names = list(entries)
    else:
        return None
    out = []
    for name in names:
        e = entries.get(name)
        if e is None:
            out.append(Member(name=name, context=name))
        else:
            out.append(Member(name=e.name, context=name, wave=e.wave, app=e.app, path=e.path))
    return out
