"""``fracctl lint``: GPU scheduling rules over rendered manifests, for CI."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from fracctl.cli import _app
from fracctl.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from fracctl.core.lint import LintReport

LintFormat = Literal["table", "json", "sarif", "github"]


PathsArgument = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="PATH",
        help="Manifest files or folders (read recursively); '-' reads standard input.",
        show_default=False,
    ),
]
OutputOption = Annotated[
    LintFormat,
    typer.Option("-o", "--output", help=_app.OUTPUT_HELP, parser=_app.one_of(LintFormat)),
]
ListRulesOption = Annotated[bool, typer.Option("--list-rules", help="List the rules and exit.")]


def command(
    ctx: typer.Context,
    paths: PathsArgument = None,
    output: OutputOption = "table",
    list_rules: ListRulesOption = False,
) -> None:
    """Check rendered manifests for GPU scheduling mistakes, offline.

    Rules (runbooks/lint-rules.md): the optional-GPU trap, vendor GPU
    resources in multi-vendor workloads, gpu-fraction and gpu-memory values,
    fractions on several containers, fractional pods that may run as root,
    GPU workloads without the GPU taint's toleration, the fractioning
    config's name, selector and count, and unpinned node-agent images.

    Silence a rule for one object with the annotation
    'fracctl.io/ignore: "FL007 reviewed: runs a root init step"'; a
    reason is required.

    Exits 0 when no error-level finding remains (warnings do not fail),
    1 on any, 2 for bad options, 3 when an input is unreadable, not YAML, or
    holds no Kubernetes object (nothing was checked).

    Examples:
        fracctl lint manifests/
        fracctl render | fracctl lint -
        fracctl lint -o sarif deploy/ > fracctl.sarif
        fracctl lint --list-rules
    """
    if list_rules:
        _list_rules(output)
        return
    if not paths:
        raise UsageError("give one or more PATHs, or '-' to read standard input")

    from fracctl.flows.lint import lint

    c = _app.context(ctx)
    report = lint(c.config, paths=paths, stdin=sys.stdin)
    if not report.objects:
        from fracctl.errors import ExternalError

        raise ExternalError(
            "no Kubernetes objects in the input: nothing was checked",
            hint="when a renderer's output is piped in (helm template, kustomize build), "
            "check that it ran: its error is above, on its standard error",
        )
    _emit(c.out, report, output)
    raise typer.Exit(ExitCode.OK if report.ok else ExitCode.FINDING)


def _list_rules(output: LintFormat) -> None:
    """``--list-rules``: every rule, as JSON or one line each."""
    from fracctl.core.lint import rules

    if output == "json":
        _app.emit_json([r.to_dict() for r in rules()])
    else:
        for r in rules():
            sys.stdout.write(f"{r.id}  {r.severity:<7}  {r.name}: {r.summary}\n")


def _emit(out: Console, report: LintReport, output: LintFormat) -> None:
    """The report in the ``output`` format, on standard output."""
    if output == "json":
        _app.emit_json(report.to_dict())
    elif output == "sarif":
        from fracctl import __version__
        from fracctl.core.lint import to_sarif

        _app.emit_json(to_sarif(report, version=__version__))
    elif output == "github":
        from fracctl.core.lint import to_github

        sys.stdout.write(to_github(report))
    else:
        render(out, report)


def render(out: Console, report: LintReport) -> None:
    """One block per finding, as compilers print them (``file:line: rule``), then a summary."""
    from fracctl.core.lint import summary

    for f in report.findings:
        level = f.rule.severity
        if f.finding.suppressed is not None:
            level = f"suppressed ({f.finding.suppressed})"
        out.print(
            f"{f.file}:{f.line}: {f.rule.id} {f.rule.name} [{level}] {f.object}",
            markup=False,
            soft_wrap=True,
        )
        out.print(f"    {f.finding.message}", markup=False, soft_wrap=True)
    out.print(f"lint: {summary(report)}", markup=False, soft_wrap=True)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("lint")(command)
