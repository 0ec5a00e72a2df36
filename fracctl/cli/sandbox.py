"""``fracctl sandbox``: a local real control plane seeded with a scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fracctl.cli import _app

app = typer.Typer(
    help="A local real control plane seeded with a scenario (demo, rehearsal).",
    no_args_is_help=True,
)

StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="Sandbox state (default $FRACCTL_SANDBOX_DIR or ~/.local/state/fracctl/sandbox).",
        show_default=False,
    ),
]


def _root(ctx: typer.Context, state_dir: Path | None) -> Path:
    from fracctl.flows.sandbox import default_root

    return state_dir or default_root(_app.context(ctx).env)


@app.command()
def up(
    ctx: typer.Context,
    scenario: Annotated[
        Path | None, typer.Option(help="Scenario YAML (default: the incident).", show_default=False)
    ] = None,
    state_dir: StateDir = None,
) -> None:
    """Start kube-apiserver + etcd in the background and seed the scenario.

    Examples:
        fracctl sandbox up
        eval "$(fracctl sandbox env)"
    """
    from fracctl.flows import sandbox

    c = _app.context(ctx)
    st = sandbox.up(
        c, root=_root(ctx, state_dir), scenario_file=scenario or sandbox.DEFAULT_SCENARIO
    )
    verb = "already running" if st.get("already_running") else "up"
    c.out.print(f"sandbox {verb}: {st['server']}", markup=False)
    c.out.print(f"  kubeconfig: {st['kubeconfig']}", markup=False)
    c.out.print(f"  config:     {st['config']}", markup=False)
    c.out.print('  next:       eval "$(fracctl sandbox env)"', markup=False)


@app.command()
def down(ctx: typer.Context, state_dir: StateDir = None) -> None:
    """Stop the sandbox's processes and remove its state (safe to repeat)."""
    from fracctl.flows import sandbox

    c = _app.context(ctx)
    found = sandbox.down(c, root=_root(ctx, state_dir))
    c.out.print("sandbox stopped" if found else "sandbox was not running", markup=False)


@app.command()
def status(
    ctx: typer.Context,
    output: Annotated[str, typer.Option("-o", "--output", help=_app.OUTPUT_HELP)] = "table",
    state_dir: StateDir = None,
) -> None:
    """Show whether the sandbox runs, its processes, and its nodes' readiness.

    Exits 0 when running, 1 when not.
    """
    from fracctl.flows import sandbox

    _app.check_output(output)
    c = _app.context(ctx)
    st = sandbox.status(c, root=_root(ctx, state_dir))
    if output == "json":
        _app.emit_json(st)
    elif not st["running"]:
        c.out.print(f"sandbox not running (state dir {st['state_dir']})", markup=False)
    else:
        from rich.table import Table

        c.out.print(f"sandbox running: {st['server']}  pids {st['pids']}", markup=False)
        c.out.print(f"operator simulation: {st['operator_simulation']}", markup=False)
        c.out.print(
            f"{st['target']['name']} nodeSelector: {st['target']['nodeSelector']}", markup=False
        )
        table = Table("node", "class", "opt-in", "ready")
        cfg = c.config.labels
        for n in st["nodes"]:
            table.add_row(
                n["name"],
                n["labels"].get(cfg.class_key, "-"),
                "yes" if n["labels"].get(cfg.opt_in_key) == cfg.opt_in_value else "no",
                n["ready"],
            )
        c.out.print(table)
    raise typer.Exit(0 if st["running"] else 1)


@app.command()
def env(ctx: typer.Context, state_dir: StateDir = None) -> None:
    """Print the export lines that point kubectl and fracctl at the sandbox."""
    from fracctl.flows import sandbox

    for line in sandbox.env_lines(_root(ctx, state_dir)):
        print(line)


@app.command("operator-sim", hidden=True)
def operator_sim(ctx: typer.Context) -> None:
    """Run the gpu-fractioning operator SIMULATION in the foreground."""
    from fracctl.flows import sandbox

    sandbox.run_operator_simulation(_app.context(ctx))


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="sandbox")
