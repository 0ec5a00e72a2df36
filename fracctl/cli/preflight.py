"""``fracctl preflight``: every guard a recreate must pass, in one table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fracctl.cli import _app

if TYPE_CHECKING:
    from rich.console import Console

    from fracctl.flows.preflight import PreflightReport

SELECTOR_HELP = (
    "The desired selector as KEY=VALUE (repeatable); default: rendered from git (fracctl render)."
)


def selector_option(ctx: typer.Context, values: list[str] | None) -> dict[str, str] | None:
    """Parse repeated ``KEY=VALUE`` flags into a selector (``None`` when not given)."""
    if not values:
        return None
    from fracctl.core.policy import parse_selector

    try:
        return parse_selector(values)
    except ValueError as e:
        raise typer.BadParameter(str(e), ctx=ctx) from None


def command(
    ctx: typer.Context,
    selector: Annotated[
        list[str] | None,
        typer.Option("--selector", "-l", help=SELECTOR_HELP, show_default=False),
    ] = None,
    output: Annotated[str, typer.Option("-o", "--output", help=_app.OUTPUT_HELP)] = "table",
) -> None:
    """Run every guard a recreate must pass, and show the blast radius.

    Guards: no fractional pod runs in any namespace (KAI reservation
    pods do not count); the opt-in label sits on every allowed-class
    node and on no denied one; the desired selector selects every
    opted-in node and no denied one.

    Exits 0 when every guard passes, 1 when any refuses, 3 when the
    cluster cannot be read.

    Examples:
        fracctl preflight
        fracctl preflight --selector example.org/gpu-fractions=enabled
        fracctl preflight -o json | jq '.checks[] | select(.ok | not)'
    """
    from fracctl.flows.preflight import preflight

    _app.check_output(output)
    wanted = selector_option(ctx, selector)
    c = _app.context(ctx)
    report = preflight(c, selector=wanted)
    if output == "json":
        _app.emit_json(report.to_dict())
    else:
        render(c.out, report)
    raise typer.Exit(0 if report.ok else 1)


def render(out: Console, report: PreflightReport) -> None:
    """The checks as one table, then a one-line verdict."""
    from rich.table import Table
    from rich.text import Text

    table = Table("check", "result", "evidence", "what to do", show_lines=False)
    for check in report.checks:
        table.add_row(
            Text(check.name),
            Text("pass", style="green") if check.ok else Text("REFUSED", style="bold red"),
            Text(check.evidence),
            Text(check.fix),
        )
    out.print(table)
    failed = report.failed
    if failed:
        out.print(f"preflight refused: {len(failed)} check(s) failed", markup=False)
        # Unwrapped, so the commands can be copied.
        for check in failed:
            out.print(f"  {check.name}: {check.fix}", markup=False, soft_wrap=True)
    else:
        out.print("preflight passed: safe to recreate", markup=False)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("preflight")(command)
