"""``fracctl sandbox``: a local real control plane seeded with a scenario."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fracctl.cli import _app
from fracctl.errors import ExitCode

if TYPE_CHECKING:
    from fracctl.flows.context import Context

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
    from fracctl.sandbox.flow import default_root

    # Absolute: the paths end up in fracctl.yaml, in `sandbox env` and in the operator
    # simulation, which runs in the sandbox folder, not here.
    root = state_dir or default_root(dict(os.environ))
    return Path(os.path.abspath(os.path.expanduser(root)))


def _context(ctx: typer.Context, state_dir: Path | None) -> Context:
    """The context of a sandbox command, also in a shell left pointing at a removed sandbox.

    ``eval "$(fracctl sandbox env)"`` exports FRACCTL_CONFIG naming the sandbox's
    fracctl.yaml, which ``down`` removes. The sandbox commands write that file, never
    need it, so a FRACCTL_CONFIG naming a file that does not exist is left out (with a
    warning unless it is this sandbox's own). A missing ``--config`` is still an error.
    """
    g = ctx.find_root().obj
    named = os.environ.get("FRACCTL_CONFIG")
    if not named or (g is not None and g.config) or Path(named).expanduser().is_file():
        return _app.context(ctx)
    from fracctl.sandbox.flow import Sandbox

    env = {k: v for k, v in os.environ.items() if k != "FRACCTL_CONFIG"}
    c = _app.context(ctx, env=env)
    own = Sandbox(_root(ctx, state_dir)).config_file.resolve()
    if Path(named).expanduser().resolve() != own:
        c.warn(f"FRACCTL_CONFIG names {named}, which does not exist: ignored")
    return c


ScenarioOption = Annotated[
    Path | None, typer.Option(help="Scenario YAML (default: the incident).", show_default=False)
]
ArgocdOption = Annotated[
    bool,
    typer.Option(
        "--argocd",
        help="Also run a real Argo CD (v3.2.11, built on first use) that owns the "
        "target; recreate then syncs through it. Needs git.",
    ),
]
FluxOption = Annotated[
    bool,
    typer.Option(
        "--flux",
        help="Also run a real Flux (source-, kustomize- and helm-controller, built on "
        "first use) whose Kustomization owns the target; recreate then reconciles "
        "through it. With a scenario that installs a chart (operator_chart, "
        "helm_release), a HelmRelease installs it instead.",
    ),
]


ClustersOption = Annotated[
    int,
    typer.Option(
        "--clusters",
        metavar="N",
        help="With --argocd: N member clusters more, each seeded and gated, that Argo "
        "CD's ApplicationSet rolls out with RollingSync (the first is the canary).",
    ),
]


@app.command()
def up(
    ctx: typer.Context,
    scenario: ScenarioOption = None,
    state_dir: StateDir = None,
    argocd: ArgocdOption = False,
    flux: FluxOption = False,
    clusters: ClustersOption = 0,
) -> None:
    """Start a local cluster in the background and seed the scenario.

    A real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler),
    KWOK playing the nodes' kubelets, and simulations of the gpu-fractioning operator
    and of KAI.

    Examples:
        fracctl sandbox up
        fracctl sandbox up --argocd
        fracctl sandbox up --argocd --clusters 3
        fracctl sandbox up --flux
        fracctl sandbox up --scenario examples/sandbox/helm-release.yaml
        eval "$(fracctl sandbox env)"
    """
    from fracctl.sandbox import flow as sandbox

    c = _context(ctx, state_dir)
    st = sandbox.up(
        c,
        root=_root(ctx, state_dir),
        scenario_file=scenario or sandbox.DEFAULT_SCENARIO,
        argocd=argocd,
        flux=flux,
        clusters=clusters,
    )
    _show_up(c, st)


def _show_up(c: Context, st: dict[str, Any]) -> None:
    """Where the sandbox runs, its files, Argo CD's or Flux's owner, and what to run next."""
    verb = "already running" if st.get("already_running") else "up"
    c.out.print(f"sandbox {verb}: {st['server']}", markup=False, soft_wrap=True)
    c.out.print(f"  kubeconfig: {st['kubeconfig']}", markup=False, soft_wrap=True)
    c.out.print(f"  config:     {st['config']}", markup=False, soft_wrap=True)
    if st.get("argocd"):
        a = st["argocd"]
        c.out.print(
            f"  argocd:     {a['server']} (Argo CD {a['version']})", markup=False, soft_wrap=True
        )
        c.out.print(
            f"  app:        {a['app']}, token file {a['token_file']}", markup=False, soft_wrap=True
        )
    if st.get("flux"):
        f = st["flux"]
        c.out.print(
            f"  flux:       {_flux_owner(f)}, git {f['git']}",
            markup=False,
            soft_wrap=True,
        )
    for m in st.get("members") or []:
        c.out.print(
            f"  member:     {m['name']} (step {m['step']}) "
            f"{m.get('server', '(stopped)')}, config {m['config']}",
            markup=False,
            soft_wrap=True,
        )
    if st.get("members"):
        c.out.print(
            f"  fleet git:  {st.get('fleet_git')} (commit to app/ there: the rollout)",
            markup=False,
            soft_wrap=True,
        )
        c.out.print(
            "  fleet:      fracctl fleet status --appset gpu-fractioning",
            markup=False,
            soft_wrap=True,
        )
    c.out.print('  next:       eval "$(fracctl sandbox env)"', markup=False, soft_wrap=True)


@app.command()
def down(ctx: typer.Context, state_dir: StateDir = None) -> None:
    """Stop the sandbox's processes and remove its state (safe to repeat).

    Reads no fracctl.yaml: what the sandbox started is stopped even when the configuration
    (the sandbox's own included) no longer loads.
    """
    from fracctl.sandbox import flow as sandbox

    found = sandbox.down(root=_root(ctx, state_dir))
    typer.echo("sandbox stopped" if found else "sandbox was not running")


@app.command()
def status(
    ctx: typer.Context,
    output: _app.Output = "table",
    state_dir: StateDir = None,
) -> None:
    """Show whether the sandbox runs, its processes, and its nodes' readiness.

    Exits 0 when running, 1 when not.
    """
    from fracctl.sandbox import flow as sandbox

    c = _context(ctx, state_dir)
    st = sandbox.status(c, root=_root(ctx, state_dir))
    if output == "json":
        _app.emit_json(st)
    elif not st["running"]:
        c.out.print(
            f"sandbox not running (state dir {st['state_dir']})", markup=False, soft_wrap=True
        )
    else:
        from rich.table import Table

        c.out.print(
            f"sandbox running: {st['server']}  pids {st['pids']}", markup=False, soft_wrap=True
        )
        c.out.print(
            f"operator simulation: {st['operator_simulation']}", markup=False, soft_wrap=True
        )
        c.out.print(
            f"{st['target']['name']} nodeSelector: {st['target']['nodeSelector']}",
            markup=False,
            soft_wrap=True,
        )
        if st.get("argocd"):
            a = st["argocd"]
            state = "running" if a["running"] else "stopped"
            c.out.print(
                f"Argo CD {a['version']}: {state} at {a['server']}", markup=False, soft_wrap=True
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
    raise typer.Exit(ExitCode.OK if st["running"] else ExitCode.FINDING)


@app.command()
def env(
    ctx: typer.Context,
    state_dir: StateDir = None,
    cluster: Annotated[
        str,
        typer.Option("--cluster", help="A member cluster of the fleet (up --clusters N)."),
    ] = "",
) -> None:
    """Print the export lines that point kubectl and fracctl at the sandbox."""
    from fracctl.sandbox import flow as sandbox

    for line in sandbox.env_lines(_root(ctx, state_dir), cluster=cluster):
        print(line)


@app.command("operator-sim", hidden=True)
def operator_sim(
    ctx: typer.Context,
    ready_file: Annotated[
        Path | None,
        typer.Option(help="Written once the first reconcile succeeded.", show_default=False),
    ] = None,
    run_pods: Annotated[
        bool, typer.Option("--run-pods", help="Run fracctl's pods too (the pod runner).")
    ] = False,
) -> None:
    """Run the gpu-fractioning operator SIMULATION in the foreground."""
    from fracctl.sandbox import flow as sandbox

    sandbox.run_operator_simulation(_app.context(ctx), ready_file=ready_file, run_pods=run_pods)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="sandbox")


def _flux_owner(f: dict[str, object]) -> str:
    """``Kustomization ns/name`` or, for an operator chart, ``HelmRelease ns/name``."""
    if "helmrelease" in f:
        return f"HelmRelease {f['helmrelease']}"
    return f"Kustomization {f['kustomization']}"
