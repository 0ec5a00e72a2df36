"""``fracctl recreate --all``: every object ``drift --all`` finds needs recreating.

Git is rendered and judged once; each object that needs a recreate, and each whose
procedure a journal on this machine says began and has not ended, then goes through
:func:`~fracctl.flows.kinds.recreate_object` in git's order, under its own lock, plan,
rehearsal and confirmation. A refused object is reported and changes nothing; the
others go on. A failure stops the run: what follows it has not started, and a rerun
resumes the one that failed from its journal.

The fractioning config has its own guarded flow (``fracctl recreate``): ``--all``
names it and leaves it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fracctl.core import drift as d
from fracctl.core.outcome import Outcome
from fracctl.core.procedures import Refusal
from fracctl.errors import Refused
from fracctl.flows.context import Context
from fracctl.flows.kinds.result import ObjectResult

Obj = dict[str, Any]


@dataclass
class EveryResult:
    """What ``recreate --all`` did (or would do), object by object."""

    results: list[ObjectResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def refused(self) -> list[ObjectResult]:
        """The objects refused (nothing changed for them)."""
        return [r for r in self.results if r.outcome == Outcome.REFUSED]

    def summary(self) -> str:
        """One line: how many objects ended how."""
        if not self.results:
            return "no object needs a recreate"
        counts: dict[str, int] = {}
        for r in self.results:
            counts[str(r.outcome)] = counts.get(str(r.outcome), 0) + 1
        said = ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
        return f"{len(self.results)} object(s): {said}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "objects": [r.to_dict() for r in self.results],
            "notes": self.notes,
            "summary": self.summary(),
        }


def recreate_every(
    ctx: Context,
    *,
    dry_run: bool = False,
    yes: bool = False,
    backend: str | None = None,
    allow_active: bool = False,
    allow_new_ip: bool = False,
    confirm: Callable[[ObjectResult], bool] | None = None,
    on_result: Callable[[ObjectResult], None] | None = None,
) -> EveryResult:
    """Run (or plan) the procedure of every object that needs one.

    Raises:
        FracctlError: an object's procedure failed (the objects after it did not start).
    """
    from fracctl.flows.drift import check_objects
    from fracctl.flows.engines import journal as journals
    from fracctl.flows.kinds import recreate_object
    from fracctl.flows.render import render_desired

    objects = render_desired(ctx)
    report = check_objects(ctx, objects)
    t = ctx.config.target
    begun = {j.key for j in journals.pending(ctx)}
    every = EveryResult()
    for o in report.objects:
        if o.kind == t.kind and o.name == t.name and not o.namespace:
            if o.verdict == d.NEEDS_RECREATE:
                every.notes.append(
                    f"{o.key} needs a recreate too: it has its own guarded flow, `fracctl recreate`"
                )
            continue
        if o.verdict != d.NEEDS_RECREATE and o.key not in begun:
            continue
        try:
            result = recreate_object(
                ctx, f"{o.kind}/{o.name}", namespace=o.namespace or None, dry_run=dry_run,
                yes=yes, backend=backend, allow_active=allow_active,
                allow_new_ip=allow_new_ip, confirm=confirm, desired_objects=objects,
            )  # fmt: skip
        except Refused as e:
            result = ObjectResult(o.key, Outcome.REFUSED, refusal=Refusal(e.message, e.hint or ""))
        every.results.append(result)
        if on_result is not None:
            on_result(result)
    return every
