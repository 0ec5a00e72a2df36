"""What both halves of the gate share: the holder, the result, the sync 'backend'."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.core.kube.resources import LEASES
from fracctl.core.outcome import Outcome
from fracctl.core.recreate import plan as recreate_plan
from fracctl.errors import Refused, UsageError
from fracctl.flows.context import Context
from fracctl.flows.engines import BackendBase, Obj, Proof, clean_desired, dry_run_create

PRE_SYNC, POST_SYNC = "pre-sync", "post-sync"
#: The steps of ``recreate`` the PreSync half runs; the sync creates the object after them.
FIRST_HALF = (
    recreate_plan.PROVE,
    recreate_plan.GUARDS,
    recreate_plan.BACKUP,
    recreate_plan.ARM,  # an in-place change that rolls the daemons: the sync applies it
    recreate_plan.DELETE,
    recreate_plan.WAIT_GONE,
)


@dataclass
class GateResult:
    """What one half did: its outcome, and a line for each thing it did."""

    half: str
    outcome: Outcome
    reason: str  # the plan's reason (recreate, nothing-to-do, applies-in-place, ...)
    lines: list[str] = field(default_factory=list)
    locked: bool = False  # whether this half took the lock
    backup: str | None = None
    ready: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "half": self.half,
            "outcome": self.outcome,
            "reason": self.reason,
            "locked": self.locked,
            "backup": self.backup,
            "ready": self.ready,
            "lines": self.lines,
        }

    def summary(self) -> str:
        """One line: what the termination message says when the half succeeds."""
        return f"fracctl gate {self.half}: {self.outcome} ({self.reason})"


def gate_identity(ctx: Context) -> str:
    """The lock holder both halves (and every retry) name: one per lock Lease."""
    r = ctx.config.recreate
    run = hashlib.sha256(f"gate {r.lock_namespace}/{r.lock_name}".encode()).hexdigest()[:8]
    return f"fracctl gate (sync hooks) run {run}"


class SyncBackend(BackendBase):
    """The GitOps engine's sync phase creates the object; fracctl only proves it can."""

    name = "sync"
    claim = "the sync phase ran but the live object differs"

    def validate(self, ctx: Context) -> None:
        """Nothing to configure."""

    def check(self, ctx: Context, desired: Obj) -> Proof:
        """A dry-run create of git's object: the API server will admit what the sync applies."""
        dry_run_create(ctx, desired)
        line = "a dry-run create of the revision's object passes admission and validation"
        return Proof([line], clean_desired(desired))

    def recreate(self, ctx: Context, desired: Obj) -> str:
        """Never called: the sync phase between the two halves creates the object."""
        raise Refused("the gate's PreSync half does not create the object; the sync does")


@dataclass(frozen=True)
class SyncEngine:
    """The gate's engine, as the engine protocol's owner checks read it.

    The GitOps engine that runs the hooks syncs the object; the gate names no owner of its
    own, so the live object's marks are reported as evidence, as for a direct apply.
    """

    name: str = SyncBackend.name
    ownership: None = None


def sync_backend(ctx: Context) -> SyncBackend:
    """The sync phase as this run's backend, its engine known to the run (``select``)."""
    ctx.engines[SyncBackend.name] = SyncEngine()
    return SyncBackend()


def gate_lease_held(ctx: Context) -> bool:
    """Whether the lock Lease names the gate as its holder (a PreSync half handed it on)."""
    r = ctx.config.recreate
    lease = ctx.kube.get_or_none(LEASES, r.lock_name, r.lock_namespace)
    holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
    return holder == gate_identity(ctx)


def differences(desired: Obj, live: Obj, path: str = "spec") -> list[str]:
    """Where ``live`` differs from what ``desired`` writes under ``path``.

    A field the revision leaves out is the server's to default: only the revision's count.
    """
    want, got = desired.get(path.split(".")[-1]), live.get(path.split(".")[-1])
    return _differences(want, got, path)


def _differences(want: Any, got: Any, path: str) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out: list[str] = []
        for key, value in want.items():
            out += _differences(value, got.get(key), f"{path}.{key}")
        return out
    return [] if want == got else [f"{path}: live {got!r}, revision {want!r}"]


def read_desired(path: Path) -> list[dict[str, Any]]:
    """The objects of a YAML file, or of every ``*.yaml``/``*.yml`` file of a folder."""
    from fracctl.adapters.render.documents import manifests_of, parse_documents

    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    elif path.is_file():
        files = [path]
    else:
        raise UsageError(f"--desired {path}: no such file or folder")
    objects = []
    for file in files:
        docs = parse_documents(file.read_text(encoding="utf-8"), str(file), stream=True)
        objects += [d.obj for d in manifests_of(docs)]
    if not objects:
        raise UsageError(f"--desired {path}: no manifests in it")
    return objects
