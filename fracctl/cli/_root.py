"""The root of the CLI: global options, and a root group that imports commands on use.

:mod:`fracctl.cli.main` lists the commands and runs them; this module holds what needs
typer, so ``fracctl --version`` (answered in ``main``) never imports it.

Start-up time is spent on imports, so the group that ``main`` runs does not import a
command's module until that command is looked up: ``fracctl drift`` imports the drift
command and nothing of the others, and ``fracctl --help`` lists every command from the
summaries in ``main.COMMANDS`` without importing any (``tests/cli/test_cli.py`` holds those
summaries, and the help output, equal to typer's rendering of the complete CLI).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from fracctl import __version__
from fracctl.errors import ExitCode

if TYPE_CHECKING:
    from typer import _click

#: The root's typer settings; a command loaded on its own is converted with the same.
SETTINGS: dict[str, Any] = {
    "pretty_exceptions_enable": False,
    "pretty_exceptions_show_locals": False,
}


def _version(value: bool) -> None:
    if value:
        print(f"fracctl {__version__}")
        raise typer.Exit(ExitCode.OK)


def _globals(
    ctx: typer.Context,
    config: Annotated[
        str | None, typer.Option("--config", "-c", help="Path to fracctl.yaml.", show_default=False)
    ] = None,
    kubeconfig: Annotated[
        str | None, typer.Option(help="Kubeconfig file (else $KUBECONFIG).", show_default=False)
    ] = None,
    context: Annotated[
        list[str] | None,
        typer.Option(
            "--context",
            metavar="NAME",
            help="Kubeconfig context; repeat it to address a fleet (drift, preflight, recreate).",
            show_default=False,
        ),
    ] = None,
    all_contexts: Annotated[
        bool,
        typer.Option(
            "--all-contexts",
            help="Address every context of the kubeconfig as a fleet (drift, preflight, recreate).",
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Global options."""
    from fracctl.cli import _app

    contexts = list(context or [])
    ctx.obj = _app.Globals(
        config=config,
        kubeconfig=kubeconfig,
        context=contexts[0] if len(contexts) == 1 else None,
        contexts=contexts,
        all_contexts=all_contexts,
        debug=debug,
    )


def new_app(cls: type[TyperGroup] | None = None) -> typer.Typer:
    """The root app with its global options and no command; ``cls`` is its group class."""
    app = typer.Typer(
        name="fracctl",
        help=(
            "GitOps safety for immutable-field changes and fractional GPU rollouts.\n\n"
            "Renders what git wants, compares it with what the cluster really has, refuses "
            "when it is unsafe, and performs delete -> recreate -> wait as one guarded, "
            "resumable operation."
        ),
        cls=cls,
        no_args_is_help=True,
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        **SETTINGS,
    )
    app.callback()(_globals)
    return app


# --- commands imported on use -----------------------------------------------------------

#: A command's name -> (its module under fracctl.cli, the summary ``--help`` lists). A
#: module name with a dot in it is a whole module path (a command that lives elsewhere).
Table = Mapping[str, tuple[str, str]]


def reflow(text: str) -> str:
    """A help text whose prose paragraphs are one line each, to wrap at the terminal's width.

    Docstrings are hard-wrapped for the source; typer's rich help keeps those line breaks
    and wraps each line again at the terminal's width, leaving a word or two on a line of
    its own wherever the two widths disagree (click's own formatter rewraps paragraphs, and
    keeps one that starts with a backspace character as written). So here each run of
    unindented lines becomes one line, and what is indented (a table, an Examples block)
    stays as written, line by line, as does a paragraph click would keep.
    """
    paragraphs = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        if paragraph.startswith("\b"):
            paragraphs.append(paragraph)
            continue
        lines: list[str] = []
        prose = False  # whether the last line is prose that the next one continues
        for line in paragraph.split("\n"):
            if prose and line and not line[0].isspace():
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
                prose = bool(line) and not line[0].isspace()
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def reflow_help(app: typer.Typer) -> None:
    """:func:`reflow` the help of every command and group registered on ``app``, at any depth.

    Run on the typer apps (the complete CLI's and each one a command is loaded on), so
    both render the same help. It can run twice: a reflowed text reflows to itself.
    """
    for command in app.registered_commands:
        text = command.help if command.help is not None else inspect.getdoc(command.callback)
        if text:
            command.help = reflow(text)
    for group in app.registered_groups:
        text = typer.main.solve_typer_info_help(group)
        if text:
            group.help = reflow(text)
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)


def module_path(module: str) -> str:
    """The module a command table names: ``render`` is ``fracctl.cli.render``."""
    return module if "." in module else f"fracctl.cli.{module}"


class LazyCommands(Mapping[str, "_click.Command"]):
    """The root's commands by name; a command's module is imported when it is looked up.

    A module registers itself on a root app (``register(root)``); it is registered on an
    app of its own, converted with the root's settings, and every command it registers
    is kept (``recreate`` also registers ``wait``).
    """

    def __init__(self, table: Table) -> None:
        self.table = table
        self.loaded: dict[str, _click.Command] = {}

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self.table:
            raise KeyError(name)
        if name not in self.loaded:
            module = importlib.import_module(module_path(self.table[name][0]))
            app = typer.Typer(**SETTINGS)
            module.register(app)
            reflow_help(app)
            group = typer.main.get_group(app)
            self.loaded.update(group.commands)
        return self.loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def summaries(self) -> dict[str, _click.Command]:
        """Stand-ins that carry only each command's summary, for listing them in help."""
        return {name: TyperCommand(name, help=summary) for name, (_, summary) in self.table.items()}


class LazyGroup(TyperGroup):
    """A root group over :class:`LazyCommands` (``table`` is set by :func:`lazy_app`)."""

    table: Table = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.lazy = LazyCommands(self.table)
        # Read-only (nothing adds a command to the root once built), so not a MutableMapping.
        self.commands = self.lazy  # type: ignore[assignment]

    def parse_args(self, ctx: _click.Context, args: list[str]) -> list[str]:
        """Parse the global options, coercing only those given (:class:`_CoerceWhenGiven`)."""
        _defer_coercion(self.get_params(ctx))  # with --help and the completion options
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        """The command to run, whose parameters are coerced only when given."""
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            _defer_command_coercion(command, ctx)
            if _stops_at_a_group(command, rest):  # its help is shown
                import_rich_help()
        return name, command, rest

    def list_commands(self, ctx: _click.Context) -> list[str]:
        """The command names, in the table's order, without importing any command."""
        return list(self.table)

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """Typer's rich help, listing each command from its summary in the table."""
        import_rich_help()
        commands = self.commands
        self.commands = self.lazy.summaries()
        try:
            super().format_help(ctx, formatter)
        finally:
            self.commands = commands


class _CoerceWhenGiven:
    """Typer's coercion of an option, built only when the option has a value.

    Typer builds an option's coercion (a pydantic ``TypeAdapter``; pydantic alone takes
    tens of milliseconds to import) for the first value it processes, even for an
    option not given, whose ``None`` it then passes on untouched: every parameter of the
    root and of each command on the way to a ``--help``, that help option included, is
    processed, and most are not given.
    """

    def coerce(self, value: Any, param: TyperOption | TyperArgument, ctx: _click.Context) -> Any:
        if value is None:  # what typer's coercion returns for a missing value
            return () if param.multiple or param.nargs == -1 else None
        param._runtime_param = None
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def _defer_coercion(params: Iterable[_click.Parameter]) -> None:
    for param in params:
        if isinstance(param, (TyperOption, TyperArgument)) and param._runtime_param is None:
            param._runtime_param = _CoerceWhenGiven()  # type: ignore[assignment]


def _defer_command_coercion(
    command: _click.Command, ctx: _click.Context, *, help_option: bool = True
) -> None:
    """:func:`_defer_coercion` for a command and its subcommands, help options included.

    Run with the root's context: a command's help option is created (once) from the help
    option names its context inherits from the root's, so it is created here as it would
    be later, unless the command or a group above it names its own.
    """
    params = list(command.params)
    help_option = help_option and "help_option_names" not in command.context_settings
    if help_option:
        option = command.get_help_option(ctx)
        if option is not None:
            params.append(option)
    _defer_coercion(params)
    for sub in getattr(command, "commands", {}).values():
        _defer_command_coercion(sub, ctx, help_option=help_option)


def _stops_at_a_group(command: _click.Command, args: list[str]) -> bool:
    """Whether ``args`` name no subcommand of a group (a guess; a wrong one costs time)."""
    while isinstance(command, TyperGroup):
        names = [a for a in args if not a.startswith("-")]
        if not names:
            return True
        sub = command.commands.get(names[0])
        if sub is None:
            return False
        command, args = sub, args[args.index(names[0]) + 1 :]
    return False


def lazy_app(table: Table) -> typer.Typer:
    """The root app whose commands are imported on use, as ``table`` lists them."""
    cls = type("FracctlGroup", (LazyGroup,), {"table": table})
    return new_app(cls=cls)


# --- typer's help renderer, without what it does not use here ------------------------------

#: Modules ``typer.rich_utils`` imports for what fracctl does not use: rich.markdown (and
#: markdown-it) for ``rich_markup_mode="markdown"`` (fracctl's is "rich"), rich.traceback
#: (and rich.pretty) for pretty exceptions (disabled). Together about half its import time.
_UNUSED_BY_HELP = ("rich.markdown", "rich.traceback")


class _Deferred(type):
    """A stand-in class for a class of a module not imported yet; it imports it on use."""

    _target: tuple[str, str]

    def _real(cls) -> Any:
        module, name = cls._target
        return getattr(importlib.import_module(module), name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(cls._real(), attr)


def _stand_in_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)

    def stand_in(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Deferred(attr, (), {"_target": (name, attr)})

    module.__getattr__ = stand_in  # type: ignore[method-assign]
    return module


def import_rich_help() -> None:
    """Import ``typer.rich_utils`` without the modules it imports but fracctl never uses.

    While it is imported, each of :data:`_UNUSED_BY_HELP` not yet imported is a stand-in
    whose classes import the real module when first used, so nothing is lost: only
    ``typer.rich_utils`` ever sees the stand-ins, which leave ``sys.modules`` at once.
    """
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins = {
        name: _stand_in_module(name) for name in _UNUSED_BY_HELP if name not in sys.modules
    }
    sys.modules.update(stand_ins)
    try:
        importlib.import_module("typer.rich_utils")
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def wants_help(args: list[str]) -> bool:
    """Whether these arguments probably show help (a guess; a wrong one costs only time)."""
    return not args or "--help" in args or "-h" in args
