"""``fracctl probe``: send a probe pod at a pool and report what KAI did with it."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from fracctl.cli import _app
from fracctl.cli.preflight import check_selector, selector_option

# What --expect accepts: fracctl.flows.guards.probe.EXPECT (a test keeps the two in step).
Expect = Literal["any", "running", "not-ready"]


def _memory(value: str) -> int:
    from fracctl.flows.guards.probe_pod import memory_mib

    return memory_mib(value)


def _fraction(value: float) -> float:
    from fracctl.flows.guards.probe_pod import check_fraction

    return check_fraction(value)


MemoryOption = Annotated[
    str | None,
    typer.Option(
        "--memory",
        help="GPU memory to ask for, e.g. 4Gi.",
        show_default=False,
        callback=_app.checked(_memory),
    ),
]
FractionOption = Annotated[
    float | None,
    typer.Option(
        "--fraction",
        help="Share of a GPU to ask for, e.g. 0.25.",
        show_default=False,
        callback=_app.checked(_fraction),
    ),
]
PoolOption = Annotated[
    list[str] | None,
    typer.Option(
        "--pool",
        help="Node selector KEY=VALUE (repeatable); default: the opt-in label.",
        show_default=False,
        callback=check_selector,
    ),
]
TimeoutOption = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        help="How long to watch (default timeouts.probe).",
        show_default=False,
        callback=_app.setting("timeouts.probe"),
    ),
]
ExpectOption = Annotated[
    Expect,
    typer.Option(
        "--expect",
        help="The answer to expect: exit 1 when it differs.",
        parser=_app.one_of(Expect),
    ),
]


def command(
    ctx: typer.Context,
    memory: MemoryOption = None,
    fraction: FractionOption = None,
    pool: PoolOption = None,
    timeout: TimeoutOption = None,
    expect: ExpectOption = "any",
    output: _app.Output = "table",
) -> None:
    """Send a fractional probe pod at a pool; report what KAI did with it.

    The probe is a tiny non-root pod for the KAI scheduler. Two answers
    are good news: it ran (on which node), or it stayed Pending because
    the node "is not ready for fractional GPU scheduling" (the readiness
    gate holds on a pool whose daemons do not run yet). The probe is
    deleted afterwards on every path, Ctrl-C included. A pool that
    selects a denied node (by its class label or its GPU product label)
    is refused before anything is created.

    Exits 0 on a good (or the --expect'ed) answer, 1 on another
    scheduling failure or a refused pool, 4 when no decision came in
    time.

    Examples:
        fracctl probe --memory 4Gi --pool example.org/gpu-class=b200
        fracctl probe --fraction 0.25 --expect running
    """
    from fracctl.flows.guards.probe import probe

    wanted = selector_option(pool)
    c = _app.context(ctx, timeouts__probe=timeout)
    result = probe(c, memory=memory, fraction=fraction, pool=wanted)
    if output == "json":
        _app.emit_json(result.to_dict())
    else:
        c.out.print(
            f"probe {result.namespace}/{result.name}: {result.outcome.value}",
            markup=False,
            soft_wrap=True,
        )
        c.out.print(result.summary(), markup=False, soft_wrap=True)
        if result.message and result.outcome.value != "unschedulable":
            c.out.print(
                f"scheduler: {result.reason}: {result.message}", markup=False, soft_wrap=True
            )
        c.out.print(
            "probe deleted" if result.deleted else "warning: the probe may still exist",
            markup=False,
            soft_wrap=True,
        )
    raise typer.Exit(int(result.exit_code(expect)))


def register(root: typer.Typer) -> None:
    """Attach to the root app."""
    root.command("probe")(command)
