"""The context of each cluster: its configuration, its own client, and where it reports.

Every cluster runs the single-cluster flow with a context of its own, built from the
invocation's configuration with that cluster's kubeconfig context, Argo CD application,
git path and a state folder of its own. Its messages and node progress go to the fleet's
progress rather than to the terminal.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

from fracctl.config import Config
from fracctl.flows.context import Context, redacting_console
from fracctl.flows.fleet.membership import Member
from fracctl.flows.fleet.progress import FleetProgress, Lines, MemberNodes


def _folder_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "cluster"


def member_config(config: Config, m: Member) -> Config:
    """``config`` for one cluster: its context, its overrides, its own state folder.

    Each cluster keeps its backups and audit log under ``<state_dir>/clusters/<name>``:
    the object has the same name in every cluster, so a shared folder would offer one
    cluster's backup as another's.
    """
    state = Path(config.recreate.state_dir) / "clusters" / _folder_name(m.name)
    return dataclasses.replace(
        config,
        kube=dataclasses.replace(config.kube, context=m.context, in_cluster=False),
        argocd=dataclasses.replace(config.argocd, app=m.app or config.argocd.app),
        git=dataclasses.replace(config.git, path=m.path or config.git.path),
        recreate=dataclasses.replace(config.recreate, state_dir=str(state)),
    )


# Builds a cluster's context from its configuration; tests may replace it.
build_context: Callable[[Config], Context] = Context.build


def member_context(base: Context, m: Member, progress: FleetProgress) -> Context:
    """The context of one cluster: its own client; its messages go to the fleet's progress."""
    ctx = build_context(member_config(base.config, m))
    ctx.clock = base.clock
    ctx.env = base.env
    ctx.interactive = False
    sink = Lines(lambda line: progress.update(m.name, note=line))
    width = base.err.width
    ctx._err = redacting_console(file=sink, highlight=False, color_system=None, width=width)
    ctx._out = ctx._err
    ctx.node_progress = lambda _ctx, condition: MemberNodes(progress, m.name, condition)
    return ctx
