"""Rendering a fleet's results: one summary for every cluster, in each output format.

Not a command group: ``drift``, ``preflight`` and ``recreate`` call into it when their
run addresses several clusters (see :func:`fracctl.cli._app.fleet`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from fracctl.cli import _app

if TYPE_CHECKING:
    from fracctl.core.flux_fleet import RenderOptions
    from fracctl.flows.context import Context
    from fracctl.flows.fleet import ClusterResult, FleetProgress, FleetResult

# The --parallel of every command that takes a fleet.
Parallel = Annotated[
    int | None,
    typer.Option(
        "--parallel",
        metavar="N",
        help="With a fleet: clusters at a time (default fleet.parallel).",
        show_default=False,
        callback=_app.setting("fleet.parallel"),
    ),
]


def progress(c: Context) -> FleetProgress | None:
    """A live table of the clusters on a terminal; plain lines otherwise (``None``)."""
    if c.err.is_terminal:
        from fracctl.cli.progress import LiveFleetTable

        return LiveFleetTable(c)
    return None


def _style(code: int) -> str:
    return "green" if code == 0 else ("yellow" if code == 1 else "bold red")


def summary(
    c: Context,
    result: FleetResult,
    detail: Callable[[ClusterResult], str],
    *,
    waves: bool = False,
) -> None:
    """One table, cluster x verdict, then one line with the counts and the exit code."""
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False)
    table.add_column("CLUSTER", no_wrap=True)
    table.add_column("CONTEXT", overflow="fold")
    if waves:
        table.add_column("WAVE", justify="right")
    table.add_column("VERDICT", no_wrap=True)
    table.add_column("DETAIL", overflow="fold")
    table.add_column("EXIT", justify="right")
    for r in result.results:
        row = [Text(r.name), Text(r.member.context or "")]
        if waves:
            row.append(Text(str(r.member.wave)))
        row += [
            Text(r.state, style=_style(r.exit_code)),
            Text(r.error or detail(r)),
            Text(str(r.exit_code)),
        ]
        table.add_row(*row)
    c.out.print(table)
    c.out.print(counts_line(result), markup=False, soft_wrap=True)


def counts_line(result: FleetResult) -> str:
    """``3 clusters: 1 in-sync, 1 drifted, 1 unreachable; exit 3 (4.2s)``."""
    counts: dict[str, int] = {}
    for r in result.results:
        counts[r.state] = counts.get(r.state, 0) + 1
    parts = ", ".join(f"{n} {state}" for state, n in counts.items())
    n = len(result.results)
    return (
        f"{n} cluster{'s' if n != 1 else ''}: {parts}; exit {result.exit_code} "
        f"({result.seconds:.1f}s)"
    )


# --- drift ------------------------------------------------------------------------------


def drift_metrics(c: Context, result: FleetResult) -> str:
    """The fleet's drift as Prometheus metrics, one ``cluster`` label per cluster."""
    from fracctl.core.prometheus import fleet_drift_metrics
    from fracctl.redact import redact

    reports = [(r.name, r.value) for r in result.results]
    return redact(fleet_drift_metrics(reports, now=c.clock.now(), seconds=result.seconds))


def drift(c: Context, result: FleetResult, fmt: str, junit_file: Any) -> None:
    """``fracctl drift`` over a fleet in ``fmt`` (table, json, junit, github, prometheus)."""
    from fracctl.core.drift.report import annotation, fleet_junit, to_github
    from fracctl.errors import UsageError
    from fracctl.flows.drift import summary_line
    from fracctl.redact import redact

    if junit_file is not None or fmt == "junit":
        xml = fleet_junit([(r.name, r.value, r.error) for r in result.results])
        if junit_file is not None:
            try:
                junit_file.write_text(redact(xml), encoding="utf-8")
            except OSError as e:
                raise UsageError(f"--junit-file {junit_file}: cannot write: {e.strerror}") from None
        if fmt == "junit":
            sys.stdout.write(xml)
    if fmt == "prometheus":
        sys.stdout.write(drift_metrics(c, result))
    elif fmt == "json":
        _app.emit_json(result.to_dict())
    elif fmt == "github":
        lines = []
        for r in result.results:
            if r.value is not None:
                lines.append(to_github(r.value, summary_line(r.value), cluster=r.name).rstrip())
            else:
                title = f"fracctl drift [{r.name}]: {r.state}"
                lines.append(annotation("error", r.error or r.state, title=title))
        lines.append(annotation("notice", counts_line(result), title="fracctl drift: fleet"))
        sys.stdout.write("\n".join(lines) + "\n")
    elif fmt == "table":
        from fracctl.core.drift.report import describe

        summary(c, result, lambda r: summary_line(r.value) if r.value is not None else "")
        for r in result.results:
            drifted = [o for o in r.value.objects if o.drifted] if r.value is not None else []
            for o in drifted:
                c.out.print("")
                c.out.print(f"[{r.name}] {describe(o)}", markup=False, soft_wrap=True)
            for w in r.value.warnings if r.value is not None else []:
                c.out.print(f"[{r.name}] !! {w}", markup=False, soft_wrap=True)


# --- preflight --------------------------------------------------------------------------


def preflight(c: Context, result: FleetResult, fmt: str) -> None:
    """``fracctl preflight`` over a fleet: one row per cluster, then what to fix where."""
    if fmt == "json":
        _app.emit_json(result.to_dict())
        return

    def detail(r: ClusterResult) -> str:
        report = r.value
        if report is None:
            return ""
        if report.ok:
            return f"{len(report.checks)} checks passed"
        return "; ".join(f"{ch.name}: {ch.evidence}" for ch in report.failed)

    summary(c, result, detail)
    for r in result.results:
        if r.value is not None and not r.value.ok:
            for ch in r.value.failed:
                c.out.print(f"  [{r.name}] {ch.name}: {ch.fix}", markup=False, soft_wrap=True)


# --- recreate ---------------------------------------------------------------------------


def recreate(
    c: Context,
    result: FleetResult,
    fmt: str,
    *,
    dry_run: bool,
    show_plan: Callable[[Context, Any], None],
) -> None:
    """``fracctl recreate`` over a fleet: the plans (dry run), then the wave summary."""
    from fracctl.core.outcome import Outcome

    if fmt == "json":
        _app.emit_json(result.to_dict())
        return
    if dry_run:
        for r in result.results:
            if r.value is not None:
                c.out.print(f"== {r.name} (wave {r.member.wave}) ==", markup=False, soft_wrap=True)
                show_plan(c, r.value)
                c.out.print("")

    def detail(r: ClusterResult) -> str:
        value = r.value
        if value is None:
            return ""
        if value.ready is not None:
            return f"{len(value.ready.nodes)} node(s) ready in {value.ready.seconds:.0f}s"
        return str(value.plan.summary)

    summary(c, result, detail, waves=True)
    if dry_run:
        return
    done = [
        r.name
        for r in result.results
        if r.exit_code == 0 and r.state not in (Outcome.NOT_STARTED, Outcome.DRY_RUN)
    ]
    waiting = [r.name for r in result.results if r.state is Outcome.NOT_STARTED]
    c.out.print(f"done: {', '.join(done) or 'none'}", markup=False, soft_wrap=True)
    if result.stopped:
        c.out.print(f"stopped: {result.stopped}", markup=False, soft_wrap=True)
        c.out.print(f"not started: {', '.join(waiting) or 'none'}", markup=False, soft_wrap=True)
    if result.resume:
        c.out.print(f"resume: {result.resume}", markup=False, soft_wrap=True)


# --- fleet render --flux ----------------------------------------------------------------

RenderFormat = Literal["yaml", "json"]


def _option(*flags: str, text: str, shown: bool = False, blank: bool = False, **kw: Any) -> Any:
    """A flag of ``fleet render``; a name or path (``blank`` False) cannot be empty."""
    if not blank:
        kw.setdefault("callback", _app.not_blank)
    return typer.Option(*flags, help=text, show_default=shown, **kw)


FluxFlag = Annotated[
    bool, _option("--flux", text="Write a Flux hub's objects (the one engine).", blank=True)
]
FleetName = Annotated[
    str, _option("--fleet", text="The names' prefix and fracctl.io/fleet label.", shown=True)
]
HubNamespace = Annotated[
    str | None, _option("--namespace", "-n", text="On the hub. Default: flux.namespace.")
]
SourceName = Annotated[
    str | None, _option("--source", text="The GitRepository's name. Default: --fleet's.")
]
GitUrl = Annotated[
    str | None, _option("--url", text="Git's URL (http(s)/ssh). Default: git.repo when a URL.")
]
Existing = Annotated[
    bool,
    _option("--existing-source", text="Name a GitRepository the hub has; write none.", blank=True),
]
Branch = Annotated[str, _option("--branch", text="The branch to follow.", shown=True)]
GatePath = Annotated[
    str | None, _option("--path", text="The folder of pre/, config/, post/. Default: git.path.")
]
Interval = Annotated[str, _option("--interval", text="Each Kustomization's interval.", shown=True)]
Retry = Annotated[str, _option("--retry-interval", text="Its retry after a failure.", shown=True)]
RenderOutput = Annotated[
    RenderFormat,
    _option(
        "-o",
        "--output",
        text=_app.OUTPUT_HELP,
        shown=True,
        blank=True,
        parser=_app.one_of(RenderFormat),
    ),
]


def render_command(
    ctx: typer.Context,
    flux: FluxFlag = False,
    fleet: FleetName = "gpu-fractioning",
    namespace: HubNamespace = None,
    source: SourceName = None,
    url: GitUrl = None,
    existing: Existing = False,
    branch: Branch = "main",
    path: GatePath = None,
    interval: Interval = "10m",
    retry: Retry = "1m",
    output: RenderOutput = "yaml",
) -> None:
    """Write the hub's objects of a fleet rollout on Flux, from fleet.clusters.

    For each cluster of fleet.clusters, three Kustomizations on one
    GitRepository, applied to the cluster through spec.kubeConfig (the
    hub's Secret kubeconfig_secret, default fracctl-fleet-NAME, key value):
    the gate's pre-half (PATH/pre, wait and force), the config's (PATH/config,
    dependsOn the pre-half, never force) and the post-half (PATH/post,
    dependsOn the config's). PATH is the cluster's path, else --path, else
    git.path; deploy/components/flux-gate and examples/flux/gate hold them.

    The waves run in order: each pre-half dependsOn every post-half of the
    wave before, so a wave starts only when the one before ran the gate at
    the source's revision, and a gate's refusal stops the chain. Reads no
    cluster; apply the output on the hub.

    Examples:
        fracctl fleet render --flux --url https://git.example.org/gitops.git
        fracctl fleet render --flux --existing-source --source flux-system
        fracctl fleet render --flux --path clusters/gate | kubectl apply -f -
    """
    from fracctl.core import flux_fleet
    from fracctl.errors import UsageError

    if not flux:
        raise UsageError("fleet render writes Flux's objects only: give --flux")
    if existing and url is not None:
        raise UsageError("--url and --existing-source exclude each other")
    c = _app.context(ctx)
    opts = flux_fleet.RenderOptions(
        fleet=fleet,
        namespace=namespace or c.config.flux.namespace,
        source=source or "",
        url=None if existing else _git_url(c, url),
        branch=branch,
        interval=interval,
        retry_interval=retry,
    )
    _write(_flux_objects(c, opts, path), output)


def _git_url(c: Context, url: str | None) -> str:
    """``--url``, else git.repo when it is a URL a GitRepository takes."""
    from fracctl.core.flux_fleet import is_git_url
    from fracctl.errors import UsageError

    if url is None and is_git_url(c.config.git.repo):
        url = c.config.git.repo
    if url is None:
        raise UsageError(
            "no git URL for the GitRepository",
            hint="give --url, or set git.repo to the repository's URL; or "
            "--existing-source --source NAME for one the hub has",
        )
    return url


def _flux_objects(c: Context, opts: RenderOptions, path: str | None) -> list[dict[str, Any]]:
    """The render of fleet.clusters: each cluster's path, else ``path``, else git.path."""
    from fracctl.core import flux_fleet

    cfg = c.config
    members = [
        flux_fleet.Member(
            name=m.name,
            wave=m.wave,
            path=m.path or path or cfg.git.path,
            secret=m.kubeconfig_secret,
        )
        for m in cfg.fleet.clusters
    ]
    return flux_fleet.render(members, opts)


def _write(objects: list[dict[str, Any]], output: str) -> None:
    from fracctl.flows.render import to_yaml
    from fracctl.redact import redact

    if output == "json":
        _app.emit_json(objects)
    else:
        sys.stdout.write(redact(to_yaml(objects)))
