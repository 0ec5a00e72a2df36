"""``fracctl wait``."""

from __future__ import annotations

from typing import Annotated

import typer

from fracctl.cli import _app

Output = _app.Output


def wait(
    ctx: typer.Context,
    timeout: Annotated[
        str | None,
        typer.Option(
            help="How long to wait, e.g. 10m (default timeouts.ready).",
            show_default=False,
            callback=_app.setting("timeouts.ready"),
        ),
    ] = None,
    output: Output = "table",
) -> None:
    """Wait until every node the live config selects reports the readiness condition.

    Watches the nodes (no polling); exits 4 on timeout naming each node with its
    condition status, reason and message.

    Examples:
        fracctl wait
        fracctl wait --timeout 15m
    """
    from fracctl.flows.recreate.wait import wait_for_target

    c = _app.context(ctx, timeouts__ready=timeout)
    result = wait_for_target(c)
    if output == "json":
        _app.emit_json(result.to_dict())
    else:
        c.out.print(
            f"{len(result.nodes)} node(s) ready in {result.seconds:.0f}s: "
            + ", ".join(result.nodes),
            markup=False,
            soft_wrap=True,
        )


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("wait")(wait)
