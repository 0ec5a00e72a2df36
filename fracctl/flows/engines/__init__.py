"""The ways ``recreate`` can bring the object back, each proven read-only before a delete.

A backend has a name, a :meth:`~Backend.validate` of its configuration, a
:meth:`~Backend.check` that proves with read-only calls that it can recreate the object
(the same credentials, permissions and objects the recreate will use),
:meth:`~Backend.recreate`, and the claim its success makes about the live object (which
:func:`fracctl.flows.recreate.live_object.verify` never trusts). Adding a GitOps engine is
one package here (its config backend, its object creator, its proofs, who owns an object)
and one entry in :data:`fracctl.core.gitops.backends.REGISTRY`; :func:`select` is how every
flow finds it, and what a flow asks of an engine is a member of :class:`Engine` or
:class:`Backend`, answered in its package, never a comparison of its name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fracctl.core.gitops.backends import BackendEntry, choices, entry, load
from fracctl.core.kube.resources import ResourceRef
from fracctl.core.recreate.plan import ReleaseState
from fracctl.errors import Conflict, FracctlError, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines.desired import clean_desired as clean_desired
from fracctl.flows.engines.owners import Ownership, ownership, refuse_foreign

if TYPE_CHECKING:
    from fracctl.core.recreate.sync_target import SyncTarget
    from fracctl.flows.engines.steps import Creator

Obj = dict[str, Any]
_BUILDING = threading.RLock()  # drift judges in threads: each run's engine built once


class Backend(Protocol):
    """What ``recreate`` needs from a way of creating the object.

    Every member, none optional: :class:`BackendBase` holds the defaults a backend keeps.
    """

    name: str
    claim: str  # what the backend's success says, for "… but the live object differs"

    def for_config(self, ctx: Context) -> Backend:
        """The backend this configuration runs (Flux: a HelmRelease's, when one is named)."""
        ...

    def rendering(self, ctx: Context, objects: list[Obj]) -> list[Obj]:
        """Git's objects as this backend renders them (the plan judges the live one by it)."""
        ...

    def hook(self) -> HookCarrier | None:
        """The chart's upgrade that recreates the config (its hook); None: it runs none."""
        ...

    def release_state(self, ctx: Context, desired: Obj) -> ReleaseState | None:
        """The release the backend's own run upgrades, for the plan; None: no release."""
        ...

    def before_delete(self, ctx: Context) -> list[str]:
        """What it must do after the guards and any confirmation, right before the delete.

        Argo CD stops its own failing automated sync, then dry-runs the sync; the lines
        are said as done.
        """
        ...

    def deletes_as(self, ctx: Context) -> str:
        """The identity whose delete the lock is armed for beside fracctl's ("" none)."""
        ...

    def doctor_settings(self, ctx: Context) -> dict[str, Any]:
        """What doctor's settings say of this backend (the release its upgrade guards)."""
        ...

    def validate(self, ctx: Context) -> None:
        """Check the configuration alone (no I/O); a usage error when it cannot work."""
        ...

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """Rehearse :meth:`recreate` read-only: the evidence, and what it will create.

        What it will create is the backend's own rendering where it has one (Argo CD's
        manifests at the application's revision, Flux's source artifact), so that
        ``verify`` holds the live object to what was proven, not to a local render.

        Raises:
            Refused: the backend would create something other than git's object, or
                would not run now (a sync window, a suspended Kustomization).
            FracctlError: it cannot (wrong token, missing permission, missing object).
        """
        ...

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Have the object created; returns a one-line account of what was said."""
        ...


class BackendBase:
    """The defaults of :class:`Backend`'s members that most backends keep."""

    def for_config(self, ctx: Context) -> Backend:
        """This backend itself."""
        return self  # type: ignore[return-value]

    def rendering(self, ctx: Context, objects: list[Obj]) -> list[Obj]:
        """Git's objects, as git renders them."""
        return objects

    def hook(self) -> HookCarrier | None:
        """No chart: the backend creates the object itself."""
        return None

    def release_state(self, ctx: Context, desired: Obj) -> ReleaseState | None:
        """No release: the backend creates the object itself."""
        return None

    def before_delete(self, ctx: Context) -> list[str]:
        """Nothing to do before the delete."""
        return []

    def deletes_as(self, ctx: Context) -> str:
        """Only fracctl deletes."""
        return ""

    def doctor_settings(self, ctx: Context) -> dict[str, Any]:
        """Nothing: the backend guards no release's upgrade."""
        return {}


@dataclass(frozen=True)
class Proof:
    """What a rehearsal showed: the evidence, and the object the backend will create."""

    evidence: list[str]
    creates: Obj


class BackendCheckFailed(FracctlError):
    """A backend's read-only proof failed; nothing was changed. Keeps the cause's exit code."""

    def __init__(self, backend: str, cause: FracctlError, *, what: str = "") -> None:
        what = what or f"the {backend} backend cannot recreate the object"
        super().__init__(
            f"{what}, so nothing was deleted or changed: {cause.message}", hint=cause.hint
        )
        self.exit_code = cause.exit_code
        self.cause = cause


def dry_run_create(ctx: Context, obj: Obj, *, ref: ResourceRef | None = None) -> None:
    """The API server would admit ``obj`` as the target (or in ``ref``): a dry-run create.

    Authorisation, admission and validation all run before the existence check, so
    ``AlreadyExists`` (the live object is still there) means it passed them.
    """
    try:
        ctx.kube.create(ref or ctx.config.target.ref, clean_desired(obj), dry_run=True)
    except Conflict as e:
        if e.status.reason != "AlreadyExists":
            raise


class HookCarrier(Protocol):
    """A backend that recreates the config by running its chart's upgrade (the hook)."""

    def carries(self, ctx: Context, desired: Obj) -> tuple[list[str], Obj]:
        """The proofs that the upgrade recreates git's object, whoever runs it.

        Returns the evidence and the object the hook creates; raises what recreate's
        proofs raise.
        """
        ...

    def left(self, ctx: Context, desired: Obj) -> tuple[str, bool]:
        """What of the release the upgrade still has to do, and whether it stopped.

        "" when it is settled; stopped: an upgrade began and its newest revision is not
        deployed.
        """
        ...

    def carried_by(self, ctx: Context, desired: Obj) -> tuple[str, str, bool]:
        """Who runs the upgrade under fracctl's guard (drift's words); what is left.

        What is left is :meth:`left`'s answer as drift reports it ("", False: none).
        """
        ...


class Stuck(Protocol):
    """The keys of ``objects`` that git changes on an immutable field (drift's judgement)."""

    def __call__(self, ctx: Context, objects: list[Obj], namespace: str) -> list[str]:
        """Judge ``objects`` (their namespace when they name none) against the cluster."""
        ...


class Engine(Protocol):
    """One way of bringing objects back, both halves; every member required.

    :meth:`config` is the backend that recreates the fractioning config, for this
    configuration; :meth:`objects` the creator that ``recreate KIND/NAME`` uses for one
    object. An engine without the second half refuses it (exit 2) before anything is read.
    """

    @property
    def name(self) -> str:
        """The engine's name (``--backend``, ``recreate.backend``)."""
        ...

    @property
    def ownership(self) -> Ownership | None:
        """How it reads who owns an object; None: it creates objects whoever marks them."""
        ...

    def backend(self, ctx: Context) -> Backend:
        """The config's backend for this configuration, built once per run; not checked."""
        ...

    def runs_chart(self, ctx: Context) -> bool:
        """Whether this configuration has it recreate the config by a chart's upgrade."""
        ...

    def config(self, ctx: Context) -> Backend:
        """The config's backend for this configuration, its settings checked (exit 2).

        An engine may hand the run to another backend for this configuration (Flux: a
        HelmRelease's upgrade, when ``flux.helmrelease`` names one).
        """
        ...

    def require_objects(self) -> None:
        """A usage error, before anything is read, where it has no ``KIND/NAME`` creator."""
        ...

    def objects(
        self,
        ctx: Context,
        target: SyncTarget,
        *,
        live: Obj | None,
        holds: bool,
        suspended: bool,
        stuck: Stuck,
    ) -> Creator:
        """The creator for one object.

        ``live`` is the object as found; ``holds``: its procedure creates it held;
        ``suspended``: a journal says an earlier run suspended the engine's reconciler;
        ``stuck``: drift's judgement of other objects (a release's).
        """
        ...


@dataclass(frozen=True)
class RegisteredEngine:
    """An engine as its registry entry in :mod:`fracctl.core.gitops.backends` declares it.

    One per run (:func:`select`): its config's backend is built once, so what that reads
    (a release's state, helm's dry run) is read once per run.
    """

    entry: BackendEntry
    built: list[Backend] = field(default_factory=list, compare=False, repr=False)

    @property
    def name(self) -> str:
        """The backend's name in the registry."""
        return self.entry.name

    @property
    def ownership(self) -> Ownership | None:
        """The entry's :class:`~fracctl.flows.engines.owners.Ownership`, if it declares one."""
        return ownership(self.entry.owner) if self.entry.owner else None

    def backend(self, ctx: Context) -> Backend:
        """The entry's backend (its module imported now), handed on; built once."""
        with _BUILDING:
            if not self.built:
                factory: Callable[[], Backend] = load(self.entry.implementation)
                self.built.append(factory().for_config(ctx))
            return self.built[0]

    def runs_chart(self, ctx: Context) -> bool:
        """Whether its backend for this configuration runs a chart's upgrade (a hook)."""
        return self.backend(ctx).hook() is not None

    def config(self, ctx: Context) -> Backend:
        """The entry's backend, its settings checked (a usage error)."""
        chosen = self.backend(ctx)
        chosen.validate(ctx)
        return chosen

    def require_objects(self) -> None:
        """Refuse, before anything is read, an engine that has no creator for KIND/NAME."""
        if not self.entry.objects:
            from fracctl.core.gitops.backends import object_names

            raise UsageError(
                f"backend {self.name!r} recreates the fractioning config only: recreate "
                f"KIND/NAME takes {', '.join(sorted(object_names()))}; nothing changed"
            )

    def objects(
        self,
        ctx: Context,
        target: SyncTarget,
        *,
        live: Obj | None,
        holds: bool,
        suspended: bool,
        stuck: Stuck,
    ) -> Creator:
        """The entry's creator; a usage error where it declares none.

        Refused before anything is read where another engine's owner marks ``live``
        (:func:`~fracctl.flows.engines.owners.refuse_foreign`).
        """
        self.require_objects()
        refuse_foreign(self, target.label, live)
        make = load(self.entry.objects)
        creator: Creator = make(
            ctx, target, live=live, holds=holds, suspended=suspended, stuck=stuck
        )
        return creator


def select(ctx: Context, name: str = "") -> Engine:
    """The engine called ``name``; by default this run's; a usage error if unknown.

    This run's is ``ctx.backend`` (``--backend``, set by :func:`for_run`), else
    ``recreate.backend``. Each engine is built once per run: drift, doctor, ``recreate``
    and ``recreate KIND/NAME`` all ask this one function, and get the same engine.
    """
    name = name or ctx.backend or ctx.config.recreate.backend
    with _BUILDING:
        found = ctx.engines.get(name)
        if found is None:
            registered = entry(name)
            if registered is None:
                raise UsageError(f"unknown backend {name!r} (use {choices()})")
            found = ctx.engines[name] = RegisteredEngine(registered)
    return found


def for_run(ctx: Context, name: str | None) -> Engine:
    """A run starts: its engine is ``name`` (``--backend``), else ``recreate.backend``.

    Every later :func:`select` of the run without a name gets it. The engines an earlier
    run on this context built are dropped, and what they read with them: a fleet plans
    each cluster, then runs it on the same context, and the run reads the release anew.
    """
    with _BUILDING:
        ctx.backend = name or ""
        ctx.engines.clear()
    return select(ctx)
