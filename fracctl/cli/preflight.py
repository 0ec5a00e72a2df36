"""``fracctl preflight``: every guard a recreate must pass, in one table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fracctl.cli import _app
from fracctl.cli import fleet as fleet_cli
from fracctl.cli.render import (
    PathOption,
    RendererOption,
    RepoOption,
    RevisionOption,
    source_context,
    source_overrides,
)
from fracctl.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from fracctl.flows.guards.preflight import PreflightReport

SELECTOR_HELP = (
    "The desired selector as KEY=VALUE (repeatable); default: rendered from git (fracctl render)."
)


def _parse_selector(values: list[str]) -> dict[str, str]:
    from fracctl.core.fractions.policy import parse_selector

    return parse_selector(values)


# For a repeatable KEY=VALUE option: a bad value is reported as that flag's.
check_selector = _app.checked(_parse_selector)


def selector_option(values: list[str] | None) -> dict[str, str] | None:
    """Parse repeated ``KEY=VALUE`` flags into a selector (``None`` when not given).

    The option declares ``callback=check_selector``, which has already refused bad ones.
    """
    return _parse_selector(values) if values else None


def command(
    ctx: typer.Context,
    selector: Annotated[
        list[str] | None,
        typer.Option(
            "--selector", "-l", help=SELECTOR_HELP, show_default=False, callback=check_selector
        ),
    ] = None,
    repo: RepoOption = None,
    revision: RevisionOption = None,
    path: PathOption = None,
    renderer: RendererOption = None,
    output: _app.Output = "table",
    parallel: fleet_cli.Parallel = None,
) -> None:
    """Run every guard a recreate must pass, and show the blast radius.

    Guards: no fractional pod runs in any namespace (KAI reservation
    pods do not count); the opt-in label sits on every allowed-class
    node and on no denied one (denied by its class label or by its GPU
    product label, such as an H200); no class label contradicts the
    GPU product; the desired selector selects every opted-in node that
    is not denied, and no denied one.

    Exits 0 when every guard passes, 1 when any refuses, 3 when the
    cluster cannot be read.

    Over a fleet (--context more than once, --all-contexts, or fleet: in
    fracctl.yaml) each cluster runs its own guards, all at once: one row
    per cluster; the exit code is the worst cluster's.

    Examples:
        fracctl preflight
        fracctl preflight --selector example.org/gpu-fractions=enabled
        fracctl preflight -o json | jq '.checks[] | select(.ok | not)'
        fracctl --all-contexts preflight
    """
    from fracctl.flows.guards.preflight import preflight

    wanted = selector_option(selector)
    source = {"repo": repo, "revision": revision, "path": path, "renderer": renderer}
    if wanted is not None and any(v is not None for v in source.values()):
        raise UsageError(
            "--selector replaces git's selector: drop --repo/--revision/--path/--renderer"
        )
    found = _app.fleet(ctx, fleet__parallel=parallel, **source_overrides(**source))
    if found is not None:
        from fracctl.flows import fleet

        fc, clusters = found
        result = fleet.preflight(fc, clusters, selector=wanted, progress=fleet_cli.progress(fc))
        fleet_cli.preflight(fc, result, output)
        raise typer.Exit(result.exit_code)
    c = source_context(ctx, **source)
    report = preflight(c, selector=wanted)
    if output == "json":
        _app.emit_json(report.to_dict())
    else:
        render(c.out, report)
    raise typer.Exit(ExitCode.OK if report.ok else ExitCode.FINDING)


def render(out: Console, report: PreflightReport) -> None:
    """The checks as one table, then a one-line verdict."""
    from rich.text import Text

    from fracctl.cli import _table

    rows = [
        (
            Text(check.name),
            Text("pass", style="green") if check.ok else Text("REFUSED", style="bold red"),
            Text(check.evidence),
            Text(check.fix),
        )
        for check in report.checks
    ]
    _table.show(out, ("check", "result", "evidence", "what to do"), rows, keys=2)
    failed = report.failed
    if failed:
        out.print(f"preflight refused: {len(failed)} check(s) failed", markup=False, soft_wrap=True)
        # Unwrapped, so the commands can be copied.
        for check in failed:
            out.print(f"  {check.name}: {check.fix}", markup=False, soft_wrap=True)
    else:
        out.print("preflight passed: safe to recreate", markup=False, soft_wrap=True)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("preflight")(command)
