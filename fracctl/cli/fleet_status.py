"""``fracctl fleet``: where a fleet rollout stands, and a Flux hub's objects for one.

``status``: where an Argo CD ApplicationSet's progressive sync stands; ``render``
(:func:`fracctl.cli.fleet.render_command`): the hub's Kustomizations of a rollout on Flux.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from fracctl.cli import _app, fleet
from fracctl.errors import ExitCode

if TYPE_CHECKING:
    from fracctl.core.appset import Rollout
    from fracctl.core.flux_rollout import FluxRollout
    from fracctl.flows.context import Context

app = typer.Typer(
    help="Fleet rollouts: an ApplicationSet's progress; the Flux hub's objects.",
    no_args_is_help=True,
)
app.command("render")(fleet.render_command)


AppSet = Annotated[
    str | None,
    typer.Option(
        "--appset",
        help="Argo CD: the ApplicationSet's name.",
        show_default=False,
        callback=_app.not_blank,
    ),
]
Flux = Annotated[
    bool,
    typer.Option("--flux", help="Flux: the hub's Kustomizations of --fleet.", show_default=False),
]
FleetName = Annotated[
    str,
    typer.Option(
        "--fleet", help="With --flux: the fracctl.io/fleet label.", callback=_app.not_blank
    ),
]
Namespace = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        help="Where Argo CD's ApplicationSet or Flux's Kustomizations are. Default: "
        "argocd.namespace or flux.namespace of the configuration.",
        show_default=False,
        callback=_app.not_blank,
    ),
]
Revision = Annotated[
    str | None,
    typer.Option(
        "--revision",
        help="Git's revision every cluster must run (a commit, branch or tag; with --flux "
        "a commit). Default: what the template's source names now (git ls-remote); with "
        "--flux, what the GitRepository fetched.",
        show_default=False,
        callback=_app.not_blank,
    ),
]


@app.command()
def status(
    ctx: typer.Context,
    appset: AppSet = None,
    flux: Flux = False,
    fleet_name: FleetName = "gpu-fractioning",
    namespace: Namespace = None,
    revision: Revision = None,
    output: _app.Output = "table",
) -> None:
    """Show each step and each cluster of a fleet rollout: Argo CD's or Flux's.

    --appset: reads the ApplicationSet and its Applications from the cluster
    Argo CD runs in (--kubeconfig/--context): each cluster's step, the
    revision it last applied, its rollout state (Waiting, Pending,
    Progressing, Healthy), sync and health, and what holds it: a failed
    hook's message (a fracctl gate refusal names what it found) and the fix,
    a retry in backoff, a sync window. Done means every cluster runs git's
    revision: its Application Synced and Healthy at it, its last sync having
    applied it. A cluster that applied a revision before an earlier step's
    cluster ran it is named: the order was broken there.

    --flux: reads the hub's Kustomizations of --fleet (fracctl fleet render
    --flux): each wave, each cluster's three (pre, config, post) with their
    state, the revision its config last applied and what holds it (waiting
    for a wave, a failed gate and where to read its refusal). Done means
    every half of every cluster Ready at the revision.

    Exits 0 while the rollout goes on or is done, 1 when a cluster is
    stopped (the rollout waits on it). The role of --appset: fracctl rbac
    print --role fleet-status; the rollout: runbooks/fleet-rollout.md.

    Examples:
        fracctl --context argocd fleet status --appset gpu-fractioning
        fracctl fleet status --appset gpu-fractioning -n argocd -o json
        fracctl fleet status --appset gpu-fractioning --revision 1a2b3c4d...
        fracctl --context hub fleet status --flux --fleet gpu-fractioning
    """
    from fracctl.errors import UsageError

    if (appset is None) == (not flux):
        raise UsageError("fleet status reads one rollout: give --appset NAME or --flux")
    c = _app.context(ctx)
    found: Any
    if flux:
        from fracctl.flows.fleet.flux import status as read_flux

        ns = namespace or c.config.flux.namespace
        found = read_flux(c, fleet=fleet_name, namespace=ns, revision=revision)
        show: Any = _show_flux
    else:
        from fracctl.flows.appset import status as read

        ns = namespace or c.config.argocd.namespace
        found = read(c, appset=str(appset), namespace=ns, revision=revision)
        show = _show
    if output == "json":
        _app.emit_json(found.to_dict())
    else:
        show(c, found)
    raise typer.Exit(ExitCode.FINDING if found.stopped else ExitCode.OK)


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


def _show_flux(c: Context, rollout: FluxRollout) -> None:
    from fracctl.cli import _table
    from fracctl.core.flux_rollout import short

    def say(line: str) -> None:
        c.out.print(line, markup=False, soft_wrap=True)

    say(f"Fleet {rollout.fleet} on Flux ({rollout.namespace}, source {rollout.source or '-'})")
    numbers = sorted({r.wave for r in rollout.clusters})
    for number, wave in zip(numbers, rollout.waves, strict=True):
        say(f"  wave {number}: {', '.join(wave)}")
    git = short(rollout.revision) if rollout.revision else f"unknown ({rollout.unknown})"
    say(f"git's revision: {git}")
    rows = []
    for r in rollout.clusters:
        states = [h.state if h else "-" for h in r.halves.values()]
        applied = short(r.applied) if r.applied else "-"
        rows.append((str(r.wave), r.cluster, *states, applied, r.blocker or "-"))
    _table.show(c.out, ("wave", "cluster", "pre", "config", "post", "applied", "holds it"), rows)
    for r in rollout.stopped:
        failed = r.failed
        said = failed.message if failed else ""
        say(f"stopped at {r.cluster} (wave {r.wave}): {r.blocker}: {said}")
        if r.fix:
            say(f"  fix: {r.fix}")
    n = len(rollout.clusters)
    if rollout.done:
        say(f"every cluster ({n}) runs {short(rollout.revision or '')}: the rollout is done")
    elif rollout.revision:
        done = sum(1 for r in rollout.clusters if r.done())
        say(f"{done} of {n} cluster(s) run {short(rollout.revision)}: not done")


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="fleet")
