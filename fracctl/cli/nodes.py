"""``fracctl nodes``: check and label GPU nodes for fractions (the node-join step)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from fracctl.cli import _app
from fracctl.errors import ExitCode

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.nodes import LabelReport

app = typer.Typer(
    help="Check and label GPU nodes for fractions (opt-in label; denied classes such as H200).",
    no_args_is_help=True,
)

Nodes = Annotated[list[str], typer.Argument(help="Node names.", show_default=False)]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Ask the API server to validate, change nothing.")
]


@app.command()
def check(ctx: typer.Context, output: _app.Output = "table") -> None:
    """Show every GPU node's standing under the opt-in label policy.

    A GPU node carries the class label, a GPU product label
    (nvidia.com/gpu.product) or nvidia.com/gpu.present=true.
    Allowed-class nodes should carry the opt-in label, denied nodes
    never, and no opted-in node may be of an unknown class. A node is
    denied by its class label or by its GPU product label (H200 by
    default), whichever says so; a class label that contradicts the
    product is a finding of its own.

    Exits 0 when every node follows the policy, 1 when not.

    Examples:
        fracctl nodes check
        fracctl nodes check -o json
    """
    from fracctl.flows.nodes import check as run

    c = _app.context(ctx)
    report = run(c)
    if output == "json":
        _app.emit_json(report.to_dict())
        raise typer.Exit(ExitCode.OK if report.ok else ExitCode.FINDING)

    from rich.text import Text

    from fracctl.cli import _table

    rows = []
    for row in report.rows:
        s = row.standing
        rows.append(
            (
                Text(s.name),
                Text(s.gpu_class or "-"),
                Text(s.product or "-"),
                Text("yes" if s.opted_in else "no"),
                Text(s.verdict.value, style="bold red" if s.verdict.problem else "green"),
                Text("-" if row.selected is None else "yes" if row.selected else "no"),
                Text(row.readiness),
            )
        )
    headers = ("node", "class", "product", "opt-in", "policy", "selected now", "readiness")
    _table.show(c.out, headers, rows)
    if report.live_selector is None:
        c.out.print(
            "no live fractioning config: 'selected now' is unknown", markup=False, soft_wrap=True
        )
    for f in report.findings:
        c.out.print(f"{f.rule.value}: {f.message}", markup=False, soft_wrap=True)
        c.out.print(f"  fix: {f.fix}", markup=False, soft_wrap=True)
    if report.ok:
        c.out.print(
            f"{len(report.rows)} GPU node(s) follow the policy", markup=False, soft_wrap=True
        )
    raise typer.Exit(ExitCode.OK if report.ok else ExitCode.FINDING)


def _show(c: Context, report: LabelReport, output: str) -> None:
    if output == "json":
        _app.emit_json(report.to_dict())
        return
    prefix = "(dry run) " if report.dry_run else ""
    for change in report.changes:
        verb = {"labelled": "would label", "unlabelled": "would unlabel"}.get(change.action)
        action = verb if report.dry_run and verb else change.action
        c.out.print(
            f"{prefix}{change.node}: {action} ({change.detail})", markup=False, soft_wrap=True
        )
    for note in report.notes:
        c.out.print(f"note: {note}", markup=False, soft_wrap=True)


@app.command()
def label(
    ctx: typer.Context, nodes: Nodes, dry_run: DryRun = False, output: _app.Output = "table"
) -> None:
    """Put the opt-in label on nodes of an allowed GPU class.

    Refuses (exit 1, nothing changed) if any named node is of a denied
    class, of a class that is not allowed, has no class label, or has a
    denied GPU product (nvidia.com/gpu.product) whatever its class label
    says.
    Labelling a labelled node changes nothing; --dry-run asks the API
    server to validate the change without making it.

    Examples:
        fracctl nodes label b200-0
        fracctl nodes label b200-0 b200-1 --dry-run
    """
    from fracctl.flows.nodes import label as run

    c = _app.context(ctx)
    _show(c, run(c, nodes=nodes, dry_run=dry_run), output)


@app.command()
def unlabel(
    ctx: typer.Context,
    nodes: Nodes,
    dry_run: DryRun = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Unlabel even where running fractional pods would lose their daemon."
        ),
    ] = False,
    output: _app.Output = "table",
) -> None:
    """Remove the opt-in label from nodes (the fix for a denied node carrying it).

    When the live config selects by the opt-in label, removing it stops
    the node's daemons at once; if fractional pods run there this is
    refused unless --force.

    Examples:
        fracctl nodes unlabel h200-0
        fracctl nodes unlabel h200-0 --dry-run
    """
    from fracctl.flows.nodes import unlabel as run

    c = _app.context(ctx)
    _show(c, run(c, nodes=nodes, dry_run=dry_run, force=force), output)


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="nodes")
