"""Choosing how to recreate an object git cannot change in place, or refusing to.

:func:`choose` looks at an object's drift (the immutable fields that differ) and the
:class:`Facts` around it, and returns the kind's :class:`Procedure` or a
:class:`Refusal`. Before any kind's own rules, three refusals hold for every object but
the fractioning config (whose guarded procedure has its own proofs):

* a controller owns it: its controller would recreate it first;
* two GitOps owners mark it: they would undo each other's object;
* the difference comes from defaulting: git sets a field empty and the cluster filled it
  in, so nothing really changes and the fix is a line in git.

Adding a kind is one function in :mod:`.kinds` and one entry in its ``CHOOSERS``.
"""

from __future__ import annotations

from fracctl.core.drift import FieldDiff, ObjectDrift
from fracctl.core.procedures.kinds import CHOOSERS, not_known
from fracctl.core.procedures.model import (
    BRIDGE,
    GUARDED,
    NEW_IP,
    ORPHAN_ADOPT,
    RERUN,
    SURGE,
    Choice,
    Facts,
    Obj,
    Procedure,
    Refusal,
    leaves,
)
from fracctl.core.recreate.rehearsal import owners

__all__ = [
    "BRIDGE",
    "GUARDED",
    "NEW_IP",
    "ORPHAN_ADOPT",
    "RERUN",
    "SURGE",
    "Choice",
    "Facts",
    "Procedure",
    "Refusal",
    "choose",
    "leaves",
    "next_step",
]

_GUARDED_STEPS = (
    "prove the backend, run the preflight guards, back up, delete, recreate from git, "
    "verify, and wait until every selected node is ready (fracctl recreate)",
)


def choose(o: ObjectDrift, facts: Facts, *, target: tuple[str, str, str]) -> Choice:
    """The procedure for a ``needs-recreate`` object, or why there is none.

    Args:
        o: the object's drift, with its live and desired objects and differing fields.
        facts: what the cluster holds around it (pods, claims, StorageClasses).
        target: the fractioning config's (group, kind, name).
    """
    if (o.group, o.kind, o.name) == target and not o.namespace:
        return Procedure(
            GUARDED,
            _GUARDED_STEPS,
            loses="a restart of the MPS daemons on every fraction node",
        )
    live = o.live or {}
    refusal = _controlled(o, live) or _two_owners(o, live) or _defaulted(o, leaves(o.fields))
    if refusal is not None:
        return refusal
    chooser = CHOOSERS.get((o.group, o.kind), not_known)
    return chooser(o, facts)


def _controlled(o: ObjectDrift, live: Obj) -> Refusal | None:
    for ref in (live.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            owner = f"{ref.get('kind')}/{ref.get('name')}"
            return Refusal(
                f"it is controlled by {owner}, which would recreate it first",
                f"change it through {owner}",
            )
    return None


def _two_owners(o: ObjectDrift, live: Obj) -> Refusal | None:
    marked = owners(live)
    if len(marked) > 1:
        names = " and ".join(map(str, marked))
        return Refusal(
            f"it is marked as managed by {names}: two owners would undo each "
            "other's object after the recreate",
            "remove one owner's management first",
        )
    return None


def _defaulted(o: ObjectDrift, fields: list[FieldDiff]) -> Refusal | None:
    """Git sets a field empty and the cluster filled it in: defaulting, not a change."""
    filled = [f for f in fields if f.desired in ("", None) and f.live not in ("", None)]
    if not filled or len(filled) < len(fields):
        return None
    f = filled[0]
    return Refusal(
        f"{f.path} differs only by defaulting: git leaves it empty and the cluster set {f.live!r}",
        f"add `{f.path.rsplit('.', 1)[-1]}: {f.live}` at {f.path} in git (or drop the "
        "empty value), and nothing needs recreating",
    )


def next_step(o: ObjectDrift, choice: Choice, source: str = "", backend: str = "apply") -> str:
    """What ``drift`` says to do about a ``needs-recreate`` object.

    ``source`` is the flags that named git's objects (`` --path shop``): the command
    named must read the same objects to find this one; ``backend`` the one that brings
    it back (``helm`` for an object of a Helm release).
    """
    if isinstance(choice, Refusal):
        return f"no safe recreate: {choice.reason}; {choice.fix}"
    if choice.name == GUARDED:
        return f"only delete + recreate can change it (fracctl recreate{source} runs it guarded)"
    where = f" -n {o.namespace}" if o.namespace else ""
    cost = f"; it costs {choice.loses}" if choice.loses else "; no pod restarts"
    return (
        f"only delete + recreate can change it: fracctl recreate {o.kind}/{o.name}{where}"
        f"{source} --backend {backend} runs the {choice.name} procedure{cost}"
    )
