"""A command: ``fracctl selector`` prints the immutable selector git wants, one line."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from fracctl.cli import _app
from fracctl.errors import UsageError


def selector(
    ctx: typer.Context,
    revision: Annotated[str, typer.Option("--revision", help="The git revision.")] = "HEAD",
) -> None:
    """Print git's spec.nodeSelector of the fractioning config as JSON."""
    from fracctl.flows.render import render_desired

    c = _app.context(ctx)
    t = c.config.target
    for obj in render_desired(c, revision=revision):
        if t.matches(obj):
            typer.echo(json.dumps((obj.get("spec") or {}).get("nodeSelector"), sort_keys=True))
            return
    raise UsageError(f"git has no {t.kind}/{t.name} at {revision}")


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("selector")(selector)
