"""``fracctl recreate KIND/NAME``: the plan, the confirmation and the result on screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from fracctl.cli import _app
from fracctl.errors import UsageError

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.kinds import ObjectResult

ONE_CLUSTER = "KIND/NAME and --all recreate on one cluster: give --context once"


def recreate_object(
    ctx: typer.Context, obj: str, *, namespace: str | None, yes: bool, dry_run: bool,
    backend: str | None, source: dict[str, str | None], output: str, allow_active: bool,
    allow_new_ip: bool, others: bool,
) -> None:  # fmt: skip
    """Run (or plan) one object's procedure and print what it did."""
    from fracctl.flows.kinds import recreate_object as flow

    if others:
        raise UsageError("KIND/NAME takes none of --drain, --force, --abort, --restore-from")
    c, confirm = _one_cluster(ctx, source)
    _app.keep_run_flags(c, backend=backend, yes=yes, allow_active=allow_active,
                        allow_new_ip=allow_new_ip)  # fmt: skip
    result = flow(
        c, obj, namespace=namespace, dry_run=dry_run, yes=yes, backend=backend,
        allow_active=allow_active, allow_new_ip=allow_new_ip, confirm=confirm,
    )  # fmt: skip
    if output == "json":
        _app.emit_json(result.to_dict())
        return
    _print(c, result, dry_run=dry_run)


def recreate_every(
    ctx: typer.Context, *, yes: bool, dry_run: bool, backend: str | None,
    source: dict[str, str | None], output: str, allow_active: bool, allow_new_ip: bool,
    others: bool,
) -> None:  # fmt: skip
    """``recreate --all``: every object drift finds needs recreating, one after another."""
    from fracctl.core.outcome import Outcome
    from fracctl.flows.kinds.every import recreate_every as flow

    if others:
        raise UsageError(
            "--all takes no KIND/NAME and none of --drain, --force, --abort, --restore-from"
        )
    c, confirm = _one_cluster(ctx, source)
    _app.keep_run_flags(c, backend=backend, yes=yes, allow_active=allow_active,
                        allow_new_ip=allow_new_ip)  # fmt: skip

    def each(result: ObjectResult) -> None:
        if output != "json":
            _print(c, result, dry_run=dry_run)

    every = flow(
        c, dry_run=dry_run, yes=yes, backend=backend, allow_active=allow_active,
        allow_new_ip=allow_new_ip, confirm=confirm, on_result=each,
    )  # fmt: skip
    if output == "json":
        _app.emit_json(every.to_dict())
    else:
        for note in every.notes:
            c.out.print(f"note: {note}", markup=False, soft_wrap=True)
        c.out.print(every.summary(), markup=False, soft_wrap=True)
    if every.refused:
        raise typer.Exit(Outcome.REFUSED.exit_code)


def _one_cluster(
    ctx: typer.Context, source: dict[str, str | None]
) -> tuple[Context, Callable[[ObjectResult], bool]]:
    """The one cluster's context, and the confirmation that shows a plan on stderr first."""
    from fracctl.cli.render import source_context, source_overrides

    if _app.fleet(ctx, **source_overrides(**source)) is not None:
        raise UsageError(ONE_CLUSTER)
    c = source_context(ctx, **source)

    def confirm(planned: ObjectResult) -> bool:
        show(c, planned, to_stderr=True)
        return typer.confirm("Proceed?", default=False, err=True)

    return c, confirm


def _print(c: Context, result: ObjectResult, *, dry_run: bool) -> None:
    """One object's account: its plan where nothing ran, what was done, the outcome."""
    if dry_run or result.procedure is None:
        show(c, result)
    for line in result.notes:
        c.out.print(line, markup=False, soft_wrap=True)
    if result.backup:
        c.out.print(f"backup: {result.backup}", markup=False, soft_wrap=True)
    c.out.print(f"outcome: {result.outcome}", markup=False, soft_wrap=True)


def show(c: Context, result: ObjectResult, *, to_stderr: bool = False) -> None:
    """The plan: the procedure's steps, what it costs, and the proofs."""
    console = c.err if to_stderr else c.out

    def say(line: str) -> None:
        console.print(line, markup=False, soft_wrap=True)

    proc = result.procedure
    if proc is None:
        refused = f": {result.refusal.reason} ({result.refusal.fix})" if result.refusal else ""
        say(f"Plan for {result.key}: {result.outcome}{refused}")
        return
    resumed = " (resumed)" if result.resumed else ""
    say(f"Plan for {result.key}: the {proc.name} procedure{resumed}")
    for i, step in enumerate(proc.steps, 1):
        say(f"  {i}. {step}")
    say(f"  it costs: {proc.loses or 'nothing: no pod restarts, no access is lost'}")
    for note in proc.notes:
        say(f"  note: {note}")
    for line in result.proofs:
        say(f"  proven: {line}")
