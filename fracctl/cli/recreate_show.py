"""How ``fracctl recreate`` shows its plan, its drain and its result on a terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fracctl.cli import _app

if TYPE_CHECKING:
    from fracctl.core.drain import DrainPlan
    from fracctl.flows.context import Context
    from fracctl.flows.recreate import RecreateResult


def show_plan(c: Context, result: RecreateResult, *, to_stderr: bool = False) -> None:
    """The plan, the proofs, the blast radius and the guards (with preflight's table)."""
    from fracctl.cli.preflight import render
    from fracctl.core.recreate.blast import Effect
    from fracctl.flows.recreate import STEP_TEXT

    t = c.config.target
    plan, report = result.plan, result.guards
    console = c.err if to_stderr else c.out
    # Unwrapped: a terminal wraps a long line itself; a log keeps it whole (a uid, a name).
    console.print(f"Plan for {t.kind}/{t.name}: {plan.summary}", markup=False, soft_wrap=True)
    console.print(f"  nodeSelector now: {plan.before}", markup=False, soft_wrap=True)
    console.print(f"  nodeSelector git: {plan.after}", markup=False, soft_wrap=True)
    for i, step in enumerate(plan.steps, 1):
        console.print(f"  {i}. {STEP_TEXT.get(step, step)}", markup=False, soft_wrap=True)
    for line in result.proofs:
        console.print(f"  proven: {line}", markup=False, soft_wrap=True)
    if result.expected_window:
        console.print(f"  {result.expected_window}", markup=False, soft_wrap=True)
    if result.drain is not None:
        show_drain(console, result.drain)
    if report is not None:
        for effect in (Effect.RESTART, Effect.STOP, Effect.START):
            names = [n.name for n in report.blast_radius.nodes if n.effect == effect]
            if names:
                line = f"  MPS daemons {effect.value} on: {', '.join(names)}"
                console.print(line, markup=False, soft_wrap=True)
        render(console, report)


def show_drain(console: Any, drain: DrainPlan) -> None:
    """The drain's part of the plan: fence, groups with their pods and owners, budgets."""

    def say(line: str) -> None:
        console.print(line, markup=False, soft_wrap=True)

    pods = drain.pods
    say(f"  drain (run {drain.run_id}{', resumed' if drain.resumed else ''}): fence "
        f"{len(drain.nodes)} node(s): {', '.join(drain.nodes) or 'none'}")  # fmt: skip
    say(f"  evict {len(pods)} pod(s) in {len(drain.groups)} group(s):")
    for g in drain.groups:
        say(f"    {g.label}:")
        for p in g.pods:
            tags = "" if p.fractional else " (not fractional: a member of the group)"
            say(f"      {p.name} on {p.node}, owner {p.owner or 'none (bare pod)'}{tags}")
    for b in drain.budgets:
        say(f"  budget {b.namespace}/{b.name}: allows {b.allowed}, the drain needs {b.needs}"
            f" ({'ok' if b.ok else 'too tight'})")  # fmt: skip
    for why in drain.refusals:
        say(f"  drain refused: {why}")


def print_result(c: Context, result: RecreateResult, *, output: str, dry_run: bool) -> None:
    """The run's result: JSON, or the plan (dry run), backup, readiness and outcome."""
    if output == "json":
        _app.emit_json(result.to_dict())
        return
    if dry_run or not result.plan.steps:
        show_plan(c, result)
    if result.backup:
        c.out.print(f"backup: {result.backup}", markup=False, soft_wrap=True)
    if result.ready is not None:
        c.out.print(
            f"ready: {len(result.ready.nodes)} node(s) in {result.ready.seconds:.0f}s",
            markup=False,
            soft_wrap=True,
        )
    c.out.print(f"outcome: {result.outcome}", markup=False, soft_wrap=True)
