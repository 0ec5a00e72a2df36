"""Shared CLI plumbing: global options, the context, flag parsing, rendering helpers.

Every flag value is checked where typer parses it, by one of three means, so a bad value
is always reported as that flag's (``Invalid value for '--timeout': …``, exit 2) and in
the same words whichever command takes the flag:

- a choice is declared ``Literal[...]`` with ``parser=one_of(...)`` (:data:`Output`);
- a flag that sets a configuration key has ``callback=setting("section.key")``;
- any other parsed value (a size, a share, ``KEY=VALUE``) has ``callback=checked(parse)``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import FunctionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import typer

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.fleet import Member


@dataclass
class Globals:
    """Values of the global options, and the context built from them on first use."""

    config: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    debug: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    built: Context | None = None
    contexts: list[str] = field(default_factory=list)  # every --context, in order
    all_contexts: bool = False

    def address(self) -> list[str]:
        """The global options that name this run's clusters and configuration."""
        words = []
        for flag, value in (("--config", self.config), ("--kubeconfig", self.kubeconfig)):
            if value:
                words += [flag, value]
        if self.all_contexts:
            words.append("--all-contexts")
        for name in self.contexts:
            words += ["--context", name]
        return words


def keep_run_flags(c: Context, *, backend: str | None, **given: bool) -> None:
    """Keep a recreate's own flags for the reruns it prints.

    ``--backend``, and each of ``given`` that is on (``allow_active`` is
    ``--allow-active``); the context keeps its global options and git's source flags.
    """
    words = ["--backend", backend] if backend else []
    words += [f"--{name.replace('_', '-')}" for name, on in given.items() if on]
    c.run_flags = tuple(words)


def context(
    ctx: typer.Context,
    *,
    env: Mapping[str, str] | None = None,
    fleet_ok: bool = False,
    **overrides: Any,
) -> Context:
    """Build (once) the I/O context for this invocation.

    ``overrides`` are flag values as ``section__key=value`` (``None`` ignored); a flag
    declared with :func:`setting` is named in any error about its value. ``env`` replaces
    the environment the configuration is read from. Unless ``fleet_ok``, a fleet address
    (``--context`` twice, ``--all-contexts``) is refused.
    """
    g: Globals = ctx.find_root().obj or Globals()
    if not fleet_ok and (len(g.contexts) > 1 or g.all_contexts):
        from fracctl.errors import UsageError

        raise UsageError(
            f"{ctx.command_path} works on one cluster: give --context once",
            hint="--context more than once and --all-contexts address a fleet; "
            "drift, preflight and recreate take one",
        )
    if g.built is None:
        from fracctl import config as cfg
        from fracctl.flows.context import Context

        values = {k.replace("__", "."): v for k, v in overrides.items()}
        values.setdefault("kube.kubeconfig", g.kubeconfig)
        values.setdefault("kube.context", g.context)
        names = {"kube.kubeconfig": "--kubeconfig", "kube.context": "--context"}
        names.update(ctx.meta.get(_FLAGS, {}))
        g.built = Context.build(cfg.load(g.config, env=env, overrides=values, flags=names))
        ctx.find_root().call_on_close(g.built.close)  # its clients, however the command ends
        g.built.global_flags = tuple(g.address())  # a printed command names this cluster
        if g.built.err.is_terminal:
            from fracctl.cli.progress import LiveDrainTable, LiveNodeTable

            g.built.node_progress = LiveNodeTable
            g.built.drain_progress = LiveDrainTable
    return g.built


def fleet(ctx: typer.Context, **overrides: Any) -> tuple[Context, list[Member]] | None:
    """The context and the clusters of a fleet run, or ``None`` for one cluster.

    ``overrides`` as for :func:`context`; a single-cluster caller then calls
    :func:`context` with the same ones (the context is built once).
    """
    from fracctl.flows.fleet import members

    c = context(ctx, fleet_ok=True, **overrides)
    g: Globals = ctx.find_root().obj or Globals()
    found = members(c.config, contexts=g.contexts, all_contexts=g.all_contexts, env=c.env)
    return None if found is None else (c, found)


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


def one_of(choices: Any) -> Callable[[Any], str]:
    """The parser of a choice flag: its value must be one of ``choices``.

    ``choices`` is the flag's ``Literal[...]`` type (or the names themselves). Declare the
    flag as ``Annotated[Choice, typer.Option(..., parser=one_of(Choice))]``: typer lists
    the choices in ``--help`` and completes them, and a bad value is reported in the same
    words for every flag of every command (``Invalid value for '-o' / '--output': must be
    one of table, json; got 'yaml'``, exit 2). A callable ``choices`` is asked at each
    parse (a registry's names, which a test may extend).
    """

    def parse(value: Any) -> str:
        text = str(value)
        known = choices() if isinstance(choices, FunctionType) else choices
        allowed = tuple(str(c) for c in (get_args(known) or known))
        if text not in allowed:
            # Raised as is (typer names the flag); a ValueError would come back reworded.
            raise typer.BadParameter(f"must be one of {', '.join(allowed)}; got {text!r}")
        return text

    return parse


def literal(names: Iterable[str]) -> Any:
    """``Literal[...]`` of names known only at run time (a registry), for a choice flag."""
    return Literal.__getitem__(tuple(names))


Format = Literal["table", "json"]
OUTPUT_HELP = "Output format."
# The -o of every command that prints a table or JSON.
Output = Annotated[Format, typer.Option("-o", "--output", help=OUTPUT_HELP, parser=one_of(Format))]


def _not_blank(value: str) -> None:
    if not value.strip():
        raise ValueError("cannot be empty")


# For an option that names something: left alone, ``--name ''`` would read as "no filter"
# and ``--app ''`` as "no application", quietly doing something other than what was asked.
not_blank = checked(_not_blank)
