"""``fracctl config``: the effective configuration and the schema of fracctl.yaml."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from fracctl.cli import _app

if TYPE_CHECKING:
    from fracctl.config.view import Setting

app = typer.Typer(
    help="The effective configuration, where each value came from, and the file's schema.",
    no_args_is_help=True,
)
ViewFormat = Literal["table", "json", "yaml"]


@app.command("view")
def view(
    ctx: typer.Context,
    output: Annotated[
        ViewFormat,
        typer.Option("-o", "--output", help=_app.OUTPUT_HELP, parser=_app.one_of(ViewFormat)),
    ] = "table",
) -> None:
    """Show every setting's effective value and where it came from.

    Each key of every section (the backends' own included) with the value
    the commands would use and its source: a flag (--kubeconfig, --context),
    a FRACCTL_<SECTION>_<KEY> variable, a line of the file, or the default.
    Precedence is flags > environment > file > defaults. A key named for a
    secret (a token, a password) shows *** instead of its value. Reads no
    cluster; a bad file or value is the same error every command gives.

    Examples:
        fracctl config view
        fracctl --config fracctl.yaml config view -o yaml
        fracctl config view -o json | jq '.settings[] | select(.source != "default")'
    """
    from fracctl.config.view import effective

    c = _app.context(ctx)  # one cluster's; loads the configuration as every command does
    g: _app.Globals = ctx.find_root().obj or _app.Globals()
    found = effective(
        g.config,
        env=c.env,
        overrides={"kube.kubeconfig": g.kubeconfig, "kube.context": g.context},
        flags={"kube.kubeconfig": "--kubeconfig", "kube.context": "--context"},
    )
    if output == "json":
        _app.emit_json(found.to_dict())
    elif output == "yaml":
        import yaml

        from fracctl.redact import redact

        sys.stdout.write(redact(yaml.safe_dump(found.to_dict(), sort_keys=False)))
    else:
        from fracctl.cli import _table

        rows = [(s.key, cell(s), s.origin or s.source) for s in found.settings]
        _table.show(c.out, ("setting", "value", "source"), rows, env=c.env)
        given = sum(1 for s in found.settings if s.source != "default")
        where = f"file {found.file}" if found.file else "no file"
        c.out.print(
            f"{len(found.settings)} settings, {given} not default ({where})",
            markup=False,
            soft_wrap=True,
        )


def cell(setting: Setting) -> str:
    """A setting's value as a table shows it: one list entry a line, durations with units."""
    from fracctl.config import Duration

    if isinstance(setting.value, Duration) and not setting.secret:
        return _seconds(float(setting.value))
    return _cell(setting.shown)


def _cell(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return " ".join(f"{k}={_cell(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return "\n".join(_cell(v) for v in value) if value else "[]"
    if value == "":
        return '""'
    return str(value)


def _seconds(value: float) -> str:
    """Seconds as the file would write them: ``10m``, ``90s``, ``1h``, ``0.5s``."""
    for unit, size in (("h", 3600), ("m", 60)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    return f"{value:g}s"


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema (draft 2020-12) of fracctl.yaml.

    Made from the configuration's own definitions: every section and key,
    its type, its default, its choices, and its description. Unknown
    sections and keys are refused, as fracctl refuses them. The repository's
    schema/fracctl.schema.json is this output; point an editor at it with
    a first line "# yaml-language-server: $schema=<path or URL>".

    Examples:
        fracctl config schema > fracctl.schema.json
    """
    import json

    from fracctl.config.json_schema import schema as make

    sys.stdout.write(json.dumps(make(), indent=2) + "\n")


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.add_typer(app, name="config")
