"""``fracctl fleet status``: where an Argo CD ApplicationSet's progressive sync stands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fracctl.cli import _app
from fracctl.errors import ExitCode

if TYPE_CHECKING:
    from fracctl.core.appset import Rollout
    from fracctl.flows.context import Context

app = typer.Typer(
    help="Where a fleet rollout stands: an Argo CD ApplicationSet's progressive sync.",
    no_args_is_help=True,
)


@app.command()
def status(
    ctx: typer.Context,
    appset: Annotated[
        str, typer.Option("--appset", help="The ApplicationSet's name.", show_default=False)
    ],
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            "-n",
            help="The namespace Argo CD runs in (default argocd.namespace).",
            show_default=False,
        ),
    ] = None,
    output: _app.Output = "table",
) -> None:
    """Show each step and each cluster of an ApplicationSet's RollingSync.

    Reads the ApplicationSet and its Applications from the cluster Argo CD
    runs in (--kubeconfig/--context): each cluster's step, rollout state
    (Waiting, Pending, Progressing, Healthy), sync and health, and, for a
    cluster whose sync failed, the failed hook's message (a fracctl gate
    refusal names what it found) and the fix.

    Exits 0 while the rollout goes on or is done, 1 when a cluster's last
    sync failed (the rollout waits on it).

    Examples:
        fracctl --context argocd fleet status --appset gpu-fractioning
        fracctl fleet status --appset gpu-fractioning -n argocd -o json
    """
    from fracctl.flows.appset import status as read

    c = _app.context(ctx)
    rollout = read(c, appset=appset, namespace=namespace or c.config.argocd.namespace)
    if output == "json":
        _app.emit_json(rollout.to_dict())
    else:
        _show(c, rollout)
    raise typer.Exit(ExitCode.FINDING if rollout.stopped else ExitCode.OK)


def _show(c: Context, rollout: Rollout) -> None:
    from fracctl.cli import _table

    def say(line: str) -> None:
        c.out.print(line, markup=False, soft_wrap=True)

    say(f"ApplicationSet {rollout.appset}: {rollout.strategy}")
    for i, step in enumerate(rollout.steps, 1):
        say(f"  step {i}: {step}")
    rows = [(r.step or "-", r.cluster or "-", r.application, r.status or "-",
             r.sync or "-", r.health or "-", r.operation or "-", r.message or "-")
            for r in rollout.clusters]  # fmt: skip
    headers = ("step", "cluster", "application", "rollout", "sync", "health", "last sync",
               "message")  # fmt: skip
    _table.show(c.out, headers, rows)
    for r in rollout.stopped:
        if r.hook:
            what = f"{r.hook.hook_type} hook {r.hook.kind}/{r.hook.name} {r.hook.phase.lower()}"
        elif r.retrying:
            what = f"retrying a failed sync (attempt #{r.retries})"
        else:
            what = f"its sync {r.operation.lower() or 'failed'}"
        said = r.hook.message if r.hook else r.operation_message
        say(f"stopped at {r.cluster} (step {r.step}, {r.application}): {what}: {said}")
        if r.fix:
            say(f"  fix: {r.fix}")
    if rollout.done:
        say(f"every cluster ({len(rollout.clusters)}) is Healthy: the rollout is done")


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="fleet")
