"""Shared CLI plumbing: global options, the context, rendering helpers, registration."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from fracctl.flows.context import Context


@dataclass
class Globals:
    """Values of the global options, and the context built from them on first use."""

    config: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    debug: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    built: Context | None = None


def context(ctx: typer.Context, **overrides: Any) -> Context:
    """Build (once) the I/O context for this invocation.

    ``overrides`` are flag values as ``section__key=value`` (``None`` ignored).
    """
    g: Globals = ctx.find_root().obj or Globals()
    if g.built is None:
        from fracctl import config as cfg
        from fracctl.flows.context import Context

        flags = {k.replace("__", "."): v for k, v in overrides.items()}
        flags.setdefault("kube.kubeconfig", g.kubeconfig)
        flags.setdefault("kube.context", g.context)
        g.built = Context.build(cfg.load(g.config, overrides=flags))
    return g.built


def emit_json(data: Any) -> None:
    """Write JSON to stdout."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


OUTPUT_HELP = "Output format: table or json."


def check_output(value: str, allowed: tuple[str, ...] = ("table", "json")) -> str:
    """Validate an ``-o`` value."""
    if value not in allowed:
        raise typer.BadParameter(
            f"must be one of {', '.join(allowed)}", param_hint="'-o' / '--output'"
        )
    return value


def register(app: typer.Typer) -> None:
    """Add every command group to the root app (the one place commands are listed)."""
    from fracctl.cli import drift, node, nodes, preflight, probe, recreate, render, sandbox

    for module in (render, drift, preflight, recreate, nodes, node, probe, sandbox):
        module.register(app)
