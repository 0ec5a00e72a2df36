"""``fracctl drift``: live versus git on immutable fields, with the API server's verdict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from fracctl.cli import _app
from fracctl.cli import fleet as fleet_cli
from fracctl.cli.render import PathOption, RendererOption, RepoOption, RevisionOption
from fracctl.errors import ExitCode, UsageError
from fracctl.redact import redact

if TYPE_CHECKING:
    from rich.text import Text

    from fracctl.core.drift import DriftReport
    from fracctl.flows.context import Context

DriftFormat = Literal["table", "json", "junit", "github", "prometheus"]


def _default_format(env: dict[str, str]) -> DriftFormat:
    if not sys.stdout.isatty() and env.get("GITHUB_ACTIONS") == "true":
        return "github"
    return "table"


AllOption = Annotated[
    bool, typer.Option("--all", help="Check every rendered object, not only the target.")
]
AppOption = Annotated[
    str | None,
    typer.Option(
        "--app",
        metavar="APP",
        help="Check every resource of this Argo CD application (desired from Argo CD).",
        show_default=False,
        callback=_app.not_blank,
    ),
]
FluxOption = Annotated[
    bool,
    typer.Option(
        "--flux",
        help="Desired state from Flux: the commit the Kustomization's source holds, at its "
        "path (flux.namespace, flux.kustomization).",
    ),
]
KindOption = Annotated[
    str | None,
    typer.Option(
        help="Only objects of this kind (with --all or --app).",
        show_default=False,
        callback=_app.not_blank,
    ),
]
NameOption = Annotated[
    str | None,
    typer.Option(
        help="Only objects of this name (with --all or --app).",
        show_default=False,
        callback=_app.not_blank,
    ),
]
OutputOption = Annotated[
    DriftFormat | None,
    typer.Option(
        "-o",
        "--output",
        help="Output format (default: table; github inside GitHub Actions).",
        show_default=False,
        parser=_app.one_of(DriftFormat),
    ),
]
JunitOption = Annotated[
    Path | None,
    typer.Option(
        "--junit-file",
        help="Also write the JUnit XML report to this file (a CI artifact).",
        show_default=False,
    ),
]
MetricsOption = Annotated[
    Path | None,
    typer.Option(
        "--metrics-file",
        help="Also write the Prometheus metrics (-o prometheus) to this file, atomically "
        "(for the node-exporter textfile collector or a Pushgateway push).",
        show_default=False,
    ),
]


#: ``fracctl drift --help``, given to typer at :func:`register` (the command takes many
#: options: its signature and this text are kept apart).
HELP = """Compare the live cluster with git on immutable fields; ask the API server to judge.

By default checks the configured object (target.kind/target.name); --all checks
every rendered object, --app every resource of an Argo CD application, --flux
what Flux would apply (its source's commit at its Kustomization's path). Every
desired object is first validated by the API server as a whole object (a dry-run
create, dryRun=All: nothing changes); where live and desired differ, it is then sent
as a server-side dry-run apply. The API server's answers are the verdict:

  in-sync            live matches git
  needs-recreate     refused as immutable: only a delete + recreate applies it
  restarts-daemons   the config differs where a sync applies it in place, but
                     the operator then rolls the MPS daemons on every node it
                     selects: carry it guarded (fracctl recreate --yes)
  applies-in-place   differs, and a sync would apply it
  missing-live       in git, not in the cluster
  missing-desired    in the cluster (or configured), not in git
  hook               a chart's hook live, not rendered: never prune it
  rejected           the API server rejects the desired object (a missing
                     required field, a schema or CEL rule): nothing applies it

With argocd.app configured, also shows what Argo CD claims and flags
"Argo CD reports Synced but the live object differs".

-o prometheus prints metrics in the Prometheus text format (objects per
verdict, each object's verdict and differing immutable fields, the run's
timestamp); --metrics-file writes them beside any other format
(runbooks/drift-check-in-ci.md).

Two documents in git (or in Argo CD's manifests) for one object are refused,
naming both places.

Exits 0 when in sync, 1 on any drift, 2 for bad options or two documents for one
object, 3 when the cluster, git or Argo CD cannot be read.

Over a fleet (--context more than once, --all-contexts, or fleet: in
fracctl.yaml) every cluster is checked at once (--parallel at a time):
one summary row per cluster, -o json keyed by cluster, one JUnit test
suite per cluster, GitHub annotations naming the cluster. The exit code
is the worst cluster's; a cluster that cannot be reached is reported as
unreachable (3) beside the others' results.

Examples:
    fracctl drift
    fracctl drift --all -o junit > drift.xml
    fracctl drift --all --junit-file drift.xml
    fracctl drift --all -o prometheus
    fracctl drift --metrics-file textfile/fracctl_drift.prom
    fracctl drift --all --kind Deployment -o github
    fracctl drift --app gpu-fractioning -o json
    fracctl drift --flux
    fracctl --context eu-1 --context us-1 --context ap-1 drift -o json
    fracctl --all-contexts drift --parallel 8 --junit-file drift.xml
"""


def command(
    ctx: typer.Context,
    all_objects: AllOption = False,
    app: AppOption = None,
    flux: FluxOption = False,
    repo: RepoOption = None,
    revision: RevisionOption = None,
    path: PathOption = None,
    renderer: RendererOption = None,
    kind: KindOption = None,
    name: NameOption = None,
    output: OutputOption = None,
    junit_file: JunitOption = None,
    metrics_file: MetricsOption = None,
    parallel: fleet_cli.Parallel = None,
) -> None:
    """Compare the live cluster with git on immutable fields (the help: :data:`HELP`)."""
    what: dict[str, Any] = {
        "all_objects": all_objects,
        "app": app,
        "repo": repo,
        "revision": revision,
        "path": path,
        "renderer": renderer,
        "kind": kind,
        "name": name,
        "flux": flux,
    }
    files = {"junit": junit_file, "metrics": metrics_file}
    raise typer.Exit(_run(ctx, what, output, files, parallel))


def _run(
    ctx: typer.Context,
    what: dict[str, Any],
    output: DriftFormat | None,
    files: dict[str, Path | None],
    parallel: int | None,
) -> ExitCode:
    """Check one cluster or a fleet, write the report; the exit code."""
    from fracctl.flows import drift as flow

    found = _app.fleet(ctx, fleet__parallel=parallel)
    if found is not None:
        from fracctl.flows import fleet

        c, clusters = found
        fmt = output or _default_format(c.env)
        result = fleet.drift(c, clusters, progress=fleet_cli.progress(c), **what)
        fleet_cli.drift(c, result, fmt, files["junit"])
        if files["metrics"] is not None:
            write_metrics(files["metrics"], fleet_cli.drift_metrics(c, result))
        return ExitCode(result.exit_code)
    c = _app.context(ctx)
    if not what["app"]:  # a "Next:" command reads git where this drift did
        from fracctl.cli.render import source_flags

        c.source_flags = source_flags(**{k: what[k] for k in ("repo", "revision", "path")})
    fmt = output or _default_format(c.env)
    start = c.clock.monotonic()
    report = flow.run(c, **what)
    summary = flow.summary_line(report)
    junit_file, metrics_file = files["junit"], files["metrics"]
    if junit_file is not None:
        _write_junit(junit_file, report)
    if metrics_file is not None or fmt == "prometheus":
        from fracctl.core.prometheus import drift_metrics

        seconds = c.clock.monotonic() - start
        metrics = redact(drift_metrics(report, now=c.clock.now(), seconds=seconds))
        if metrics_file is not None:
            write_metrics(metrics_file, metrics)
        if fmt == "prometheus":
            sys.stdout.write(metrics)
            return flow.exit_code(report)
    if fmt == "json":
        _app.emit_json(report.to_dict())
    elif fmt == "junit":
        from fracctl.core.drift.report import to_junit

        sys.stdout.write(to_junit(report))
    elif fmt == "github":
        from fracctl.core.drift.report import to_github

        sys.stdout.write(to_github(report, summary))
    else:
        _show(c, report, summary)
    return flow.exit_code(report)


def _write_junit(path: Path, report: DriftReport) -> None:
    """``--junit-file``: the report as JUnit XML."""
    from fracctl.core.drift.report import to_junit

    try:
        path.write_text(redact(to_junit(report)), encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--junit-file {path}: cannot write: {e.strerror}") from None


def write_metrics(path: Path, text: str) -> None:
    """Write ``--metrics-file`` whole or not at all: a textfile collector never reads half.

    The text goes to a hidden file beside it (not ending in ``.prom``, which the
    collector would read), then is renamed over it.
    """
    import os

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"--metrics-file {path}: cannot write: {e.strerror}") from None


def _show(c: Context, report: DriftReport, summary: str) -> None:
    from rich.text import Text

    from fracctl.cli import _table
    from fracctl.core.drift.report import describe

    _show_source(c, report.source)
    fold = "fold"
    columns = [
        _table.Column("OBJECT", overflow=fold),
        _table.Column("VERDICT", no_wrap=True),
        _table.Column("FIELD", overflow=fold),
        _table.Column("LIVE", overflow=fold),
        _table.Column("DESIRED", overflow=fold),
    ]
    _table.show(c.out, columns, _rows(report))
    for o in report.objects:
        if o.drifted or o.hook:  # a hook fracctl carries is said, though not drift
            c.out.print(describe(o), markup=False, highlight=False, soft_wrap=True)
            c.out.print("")
    if report.argocd:
        a = report.argocd
        op = a.get("operation") or {}
        last = f"; last operation {op.get('phase')}" if op.get("phase") else ""
        msg = f": {op.get('message')}" if op.get("message") else ""
        c.out.print(
            f"Argo CD {a['app']}: {a['sync']}, {a['health']}{last}{msg}",
            markup=False,
            soft_wrap=True,
        )
    for w in report.warnings:
        c.out.print(Text(f"!! {w}", style="bold red"), soft_wrap=True)
    c.out.print(summary, markup=False, soft_wrap=True)


def _show_source(c: Context, src: dict[str, Any]) -> None:
    """Where the desired state came from: an Argo CD application, or git's commit."""
    if src.get("argocd_app"):
        c.out.print(
            f"desired: Argo CD application {src['argocd_app']}", markup=False, soft_wrap=True
        )
    elif src:
        commit = str(src.get("commit", ""))[:12]
        c.out.print(
            f"desired: {src.get('repo')} @ {src.get('revision')} ({commit}) "
            f"path {src.get('path')} [{src.get('renderer')}]",
            markup=False,
            soft_wrap=True,
        )


def _rows(report: DriftReport) -> list[tuple[Text, ...]]:
    """A row per differing field of each object (one for an object with none)."""
    from rich.text import Text

    from fracctl.core.drift.report import value_text

    styles = {"in-sync": "green", "applies-in-place": "yellow"}
    rows: list[tuple[Text, ...]] = []
    for o in report.objects:
        verdict = Text(o.verdict, style=styles.get(o.verdict, "bold red"))
        fields = o.fields or o.changes[:3]
        if not fields:
            rows.append((Text(o.key), verdict, Text(o.note), Text(""), Text("")))
            continue
        for i, f in enumerate(fields):
            rows.append(
                (
                    Text(o.key if i == 0 else ""),
                    verdict if i == 0 else Text(""),
                    Text(f.path),
                    Text(value_text(f.live, 80)),
                    Text(value_text(f.desired, 80)),
                )
            )
    return rows


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("drift", help=HELP)(command)
