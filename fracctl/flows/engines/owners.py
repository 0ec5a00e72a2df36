"""Who owns an object, asked of every engine; an engine refuses an object another owns.

Each engine reads its own marks (its registry entry's ``owner``, an :class:`Ownership` in
its package): the Helm release's annotations, a HelmRelease's or a Kustomization's labels,
an Application's tracking annotation. An engine asked to recreate an object that another
engine's owner marks refuses it before anything changes, on every path (the config and
``recreate KIND/NAME``), naming the owner and the backend that carries it: two owners would
undo each other's object, and a release upgraded behind its controller's back (``helm
upgrade`` of a HelmRelease's release) is taken from under it. A backend that reads no
owner (``apply``) creates the object itself, whoever marks it, and says whom it goes past.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from fracctl.core.gitops import backends
from fracctl.core.recreate.rehearsal import Owner, foreign_owners
from fracctl.errors import Refused

if TYPE_CHECKING:
    from fracctl.flows.context import Context

Obj = dict[str, Any]


class Ownership(Protocol):
    """How one engine reads who owns an object; every member required."""

    def owner_of(self, obj: Obj | None) -> Owner | None:
        """The owner this engine's marks on ``obj`` name, if any."""
        ...

    def configured(self, ctx: Context) -> Owner | None:
        """The owner the configuration names for the fractioning config, if any."""
        ...

    def state(self, ctx: Context, owner: Owner) -> str:
        """What ``owner`` says of itself, for drift's note ("" nothing to say)."""
        ...


class Engine(Protocol):
    """What the owner checks read of an engine (:class:`fracctl.flows.engines.Engine`)."""

    @property
    def name(self) -> str:
        """The engine's name in the registry."""
        ...

    @property
    def ownership(self) -> Ownership | None:
        """How it reads who owns an object; None: it creates objects whoever marks them."""
        ...


@cache
def ownership(ref: str) -> Ownership:
    """The :class:`Ownership` a registry entry's ``owner`` names (imported now)."""
    found: Ownership = backends.load(ref)()
    return found


def owners_of(obj: Obj | None) -> list[Owner]:
    """Every owner the engines read on ``obj``, less those another owner covers."""
    found = [o for e in backends.owned() if (o := ownership(e.owner).owner_of(obj)) is not None]
    covered = {tool for o in found for tool in o.covers}
    return [o for o in found if o.tool not in covered]


def foreign_owner(engine: Engine, obj: Obj | None) -> Owner | None:
    """The owner of ``obj`` that is another engine's; None for an engine that reads none."""
    if engine.ownership is None:
        return None
    return next((o for o in owners_of(obj) if o.tool != engine.name), None)


def refuse_foreign(engine: Engine, label: str, live: Obj | None) -> None:
    """Refuse ``recreate KIND/NAME`` of an object another engine's owner marks.

    Raises:
        Refused: naming the owner and the backend that carries it; nothing changed.
    """
    other = foreign_owner(engine, live)
    if other is not None:
        raise Refused(
            f"{label} is owned by {other}: use --backend {other.tool}; the {engine.name} "
            "backend would work behind its owner's back, nothing changed",
            hint=f"rerun with --backend {other.tool}, or remove {other}'s management first",
        )


def carrier_of(obj: Obj | None) -> tuple[str, Owner | None]:
    """The backend that must carry ``obj`` across, and its owner; else the direct one.

    Only an owner's engine carries the object where its release's upgrade would fail
    otherwise (a Helm release, a HelmRelease); any other object is created directly.
    """
    owner = next((o for o in owners_of(obj) if o.carries), None)
    return (owner.tool if owner else backends.DIRECT), owner


def said_by(ctx: Context, owner: Owner) -> str:
    """What ``owner`` says of itself (its engine reads it), for drift's note."""
    found = backends.entry(owner.tool)
    return ownership(found.owner).state(ctx, owner) if found and found.owner else ""


def check_owners(ctx: Context, engine: Engine, live: Obj | None) -> list[str]:
    """Refuse when the live config names another owner than the configured one.

    A direct apply configures no owner: whoever marks the object, the operator chose to
    apply it (the marks are reported in the evidence).
    """
    if live is None:
        return []
    t = ctx.config.target
    found = owners_of(live)
    expected = engine.ownership.configured(ctx) if engine.ownership is not None else None
    if expected is None:
        marked = ", ".join(map(str, found)) or "no GitOps owner"
        return [f"a direct apply: the live object names {marked}"]
    others = foreign_owners(live, expected, found)
    if others:
        other = others[0]
        raise Refused(
            f"{t.kind}/{t.name} is marked as managed by {', '.join(map(str, others))}, not "
            f"the configured {expected}: two owners would undo each other's object after "
            "the recreate",
            hint="recreate through the owner that manages it "
            + (f"(--backend {other.tool}, or " if other.tool != engine.name else "(")
            + "recreate.backend and its section in fracctl.yaml), or remove the other's "
            "management first",
        )
    return [f"the live object names no other GitOps owner than {expected}"]
