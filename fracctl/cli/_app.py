"""Shared CLI plumbing: global options, the context, rendering helpers, registration."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
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


def context(
    ctx: typer.Context, *, env: Mapping[str, str] | None = None, **overrides: Any
) -> Context:
    """Build (once) the I/O context for this invocation.

    ``overrides`` are flag values as ``section__key=value`` (``None`` ignored); a flag
    declared with :func:`setting` is named in any error about its value. ``env`` replaces
    the environment the configuration is read from.
    """
    g: Globals = ctx.find_root().obj or Globals()
    if g.built is None:
        from fracctl import config as cfg
        from fracctl.flows.context import Context

        values = {k.replace("__", "."): v for k, v in overrides.items()}
        values.setdefault("kube.kubeconfig", g.kubeconfig)
        values.setdefault("kube.context", g.context)
        names = {"kube.kubeconfig": "--kubeconfig", "kube.context": "--context"}
        names.update(ctx.meta.get(_FLAGS, {}))
        g.built = Context.build(cfg.load(g.config, env=env, overrides=values, flags=names))
    return g.built


_FLAGS = "fracctl.setting-flags"

Callback = Callable[[typer.Context, typer.CallbackParam, Any], Any]


def checked(parse: Callable[[Any], object]) -> Callback:
    """The option callback that checks a flag's value with ``parse`` where it is parsed.

    ``parse`` raises ValueError for a bad value; it is reported as the flag's
    (``Invalid value for '--limit': …``, exit 2). The value itself is passed on as given.
    """

    def check(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if value is None or value == [] or value == ():
            return value
        try:
            parse(list(value) if isinstance(value, tuple) else value)
        except ValueError as e:
            hint = " / ".join(f"'{o}'" for o in param.opts)
            raise typer.BadParameter(str(e), ctx=ctx, param_hint=hint) from None
        return value

    return check


def setting(key: str) -> Callback:
    """The option callback for a flag that sets configuration ``key`` (``timeouts.ready``).

    The value is checked as the configuration checks that key, so a bad one is reported
    as this flag's wherever the command would otherwise have blamed the file; the flag
    is also remembered as the key's source, so a later complaint about the value (in
    combination with other keys) names the flag too.
    """

    def parse(value: Any) -> object:
        from fracctl.config import check_value

        return check_value(key, value)

    check = checked(parse)

    def remember(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        value = check(ctx, param, value)
        if value is not None:
            opts = param.secondary_opts if value is False and param.secondary_opts else param.opts
            ctx.meta.setdefault(_FLAGS, {})[key] = max(opts, key=len)
        return value

    return remember


def emit_json(data: Any) -> None:
    """Write JSON to stdout, with every registered secret masked."""
    from fracctl.redact import redact

    sys.stdout.write(redact(json.dumps(data, indent=2, sort_keys=False, default=str)) + "\n")


OUTPUT_HELP = "Output format: table or json."


def check_output(value: str, allowed: tuple[str, ...] = ("table", "json")) -> str:
    """Validate an ``-o`` value."""
    if value not in allowed:
        raise typer.BadParameter(
            f"must be one of {', '.join(allowed)}", param_hint="'-o' / '--output'"
        )
    return value


def not_blank(value: str | None) -> str | None:
    """Refuse an empty or blank value for an option that names something.

    Left alone, ``--name ''`` would read as "no filter" and ``--app ''`` as "no
    application": the command would quietly do something other than what was asked.
    """
    if value is not None and not value.strip():
        raise typer.BadParameter("cannot be empty")
    return value


def register(app: typer.Typer) -> None:
    """Add every command group to the root app (the one place commands are listed)."""
    from fracctl.cli import drift, node, nodes, preflight, probe, recreate, render, sandbox

    for module in (render, drift, preflight, recreate, nodes, node, probe, sandbox):
        module.register(app)
