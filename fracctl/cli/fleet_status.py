"""``fracctl fleet``: where a fleet rollout stands, and a Flux hub's objects for one.

``status``: where an Argo CD ApplicationSet's progressive sync stands; ``render``
(:func:`fracctl.cli.fleet.render_command`): the hub's Kustomizations of a rollout on Flux.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fracctl.cli import _app, fleet
from fracctl.errors import ExitCode

if TYPE_CHECKING:
    from fracctl.core.appset import Rollout
    from fracctl.flows.context import Context

app = typer.Typer(
    help="Fleet rollouts: an ApplicationSet's progress; the Flux hub's objects.",
    no_args_is_help=True,
)
app.command("render")(fleet.render_command)


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
            help="The namespace Argo CD runs in. Default: argocd.namespace of the "
            "configuration (argocd).",
            show_default=False,
        ),
    ] = None,
    revision: Annotated[
        str | None,
        typer.Option(
            "--revision",
            help="Git's revision every cluster must run (a commit, branch or tag). "
            "Default: what the template's source names now (git ls-remote).",
            show_default=False,
            callback=_app.not_blank,
        ),
    ] = None,
    output: _app.Output = "table",
) -> None:
    """Show each step and each cluster of an ApplicationSet's RollingSync.

    Reads the ApplicationSet and its Applications from the cluster Argo CD
    runs in (--kubeconfig/--context): each cluster's step, the revision it
    last applied, its rollout state (Waiting, Pending, Progressing,
    Healthy), sync and health, and what holds it: a failed hook's message
    (a fracctl gate refusal names what it found) and the fix, a retry in
    backoff, a sync window. Done means every cluster runs git's revision:
    its Application Synced and Healthy at it, its last sync having applied
    it. A cluster that applied a revision before an earlier step's cluster
    ran it is named: the order was broken there.

    Exits 0 while the rollout goes on or is done, 1 when a cluster is
    stopped (the rollout waits on it). The role: fracctl rbac print --role
    fleet-status; the rollout: runbooks/fleet-rollout.md.

    Examples:
        fracctl --context argocd fleet status --appset gpu-fractioning
        fracctl fleet status --appset gpu-fractioning -n argocd -o json
        fracctl fleet status --appset gpu-fractioning --revision 1a2b3c4d...
    """
    from fracctl.flows.appset import status as read

    c = _app.context(ctx)
    rollout = read(
        c, appset=appset, namespace=namespace or c.config.argocd.namespace, revision=revision
    )
    if output == "json":
        _app.emit_json(rollout.to_dict())
    else:
        _show(c, rollout)
    raise typer.Exit(ExitCode.FINDING if rollout.stopped else ExitCode.OK)


def _show(c: Context, rollout: Rollout) -> None:
    from fracctl.cli import _table
    from fracctl.core.appset_order import short

    def say(line: str) -> None:
        c.out.print(line, markup=False, soft_wrap=True)

    say(f"ApplicationSet {rollout.appset}: {rollout.strategy}")
    for i, step in enumerate(rollout.steps, 1):
        say(f"  step {i}: {step}")
    git = short(rollout.revision) if rollout.revision else f"unknown ({rollout.unknown})"
    say(f"git's revision: {git}")
    rows = [(r.step or "-", r.cluster or "-", short(r.applied) if r.applied else "-",
             r.status or "-", r.sync or "-", r.health or "-", r.blocker or r.behind or "-")
            for r in rollout.clusters]  # fmt: skip
    _table.show(
        c.out, ("step", "cluster", "last synced", "rollout", "sync", "health", "holds it"), rows
    )
    for r in rollout.clusters:
        if r.out_of_turn:
            say(f"out of order at {r.cluster} (step {r.step}): before {r.out_of_turn}")
    for r in rollout.stopped:
        said = r.hook.message if r.hook and not r.windowed else r.operation_message
        say(f"stopped at {r.cluster} (step {r.step}, {r.application}): {r.blocker}: {said}")
        if r.fix:
            say(f"  fix: {r.fix}")
    if rollout.done:
        say(
            f"every cluster ({len(rollout.clusters)}) runs {short(rollout.revision)}: "
            "the rollout is done"
        )
    elif rollout.revision:
        behind = [r for r in rollout.clusters if r.behind]
        say(
            f"{len(rollout.clusters) - len(behind)} of {len(rollout.clusters)} cluster(s) run "
            f"{short(rollout.revision)}: not done"
        )


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="fleet")
