"""``fracctl recreate KIND/NAME``: the plan, the confirmation and the result on screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from fracctl.cli import _app
from fracctl.cli.recreate_request import Request
from fracctl.errors import UsageError

if TYPE_CHECKING:
    from fracctl.flows.context import Context
    from fracctl.flows.kinds import ObjectResult

ONE_CLUSTER = "KIND/NAME and --all recreate on one cluster: give --context once"


def recreate_object(ctx: typer.Context, obj: str, req: Request) -> None:
    """Run (or plan) one object's procedure and print what it did."""
    from fracctl.flows.kinds import recreate_object as flow

    if req.config_flags:
        raise UsageError("KIND/NAME takes none of --drain, --force, --abort, --restore-from")
    c, confirm = _one_cluster(ctx, req)
    result = flow(
        c,
        obj,
        namespace=req.namespace,
        dry_run=req.dry_run,
        yes=req.yes,
        backend=req.backend,
        allow_active=req.allow_active,
        allow_new_ip=req.allow_new_ip,
        confirm=confirm,
    )
    if req.output == "json":
        _app.emit_json(result.to_dict())
        return
    _print(c, result, dry_run=req.dry_run)


def recreate_every(ctx: typer.Context, req: Request) -> None:
    """``recreate --all``: every object drift finds needs recreating, one after another."""
    from fracctl.core.outcome import Outcome
    from fracctl.flows.kinds.every import recreate_every as flow

    if req.obj is not None or req.config_flags:
        raise UsageError(
            "--all takes no KIND/NAME and none of --drain, --force, --abort, --restore-from"
        )
    c, confirm = _one_cluster(ctx, req)

    def each(result: ObjectResult) -> None:
        if req.output != "json":
            _print(c, result, dry_run=req.dry_run)

    every = flow(
        c,
        dry_run=req.dry_run,
        yes=req.yes,
        backend=req.backend,
        allow_active=req.allow_active,
        allow_new_ip=req.allow_new_ip,
        confirm=confirm,
        on_result=each,
    )
    if req.output == "json":
        _app.emit_json(every.to_dict())
    else:
        for note in every.notes:
            c.out.print(f"note: {note}", markup=False, soft_wrap=True)
        c.out.print(every.summary(), markup=False, soft_wrap=True)
    if every.refused:
        raise typer.Exit(Outcome.REFUSED.exit_code)


def _one_cluster(
    ctx: typer.Context, req: Request
) -> tuple[Context, Callable[[ObjectResult], bool]]:
    """The one cluster's context and the confirmation that shows a plan on stderr first.

    The context keeps the run's flags, for the reruns it prints.
    """
    from fracctl.cli.render import source_context, source_overrides

    if _app.fleet(ctx, **source_overrides(**req.source)) is not None:
        raise UsageError(ONE_CLUSTER)
    c = source_context(ctx, **req.source)
    _app.keep_run_flags(
        c,
        backend=req.backend,
        yes=req.yes,
        allow_active=req.allow_active,
        allow_new_ip=req.allow_new_ip,
    )

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
