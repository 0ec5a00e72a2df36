"""What a recreate of one object does: its procedure, or why none is safe.

A :class:`Procedure` is chosen per kind from the object's drift and what the cluster
holds around it (:class:`Facts`); a :class:`Refusal` says why no procedure is safe and
what to change instead. Both are pure data: the plan shows them, ``drift`` names them,
and the flow runs the procedure's steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fracctl.core.drift import FieldDiff, diff_paths

Obj = dict[str, Any]

#: The fractioning config's own guarded procedure (``fracctl recreate`` with no object).
GUARDED = "guarded-recreate"
#: Delete with ``propagationPolicy: Orphan``; the recreated object adopts what it owned.
ORPHAN_ADOPT = "orphan-and-adopt"
#: A Deployment whose pods cannot carry the new selector: orphan delete, the recreated
#: one rolls out new pods beside the old, a Service that selects both serves from either,
#: and the old ReplicaSets go once the new pods are available.
SURGE = "surge"
#: A Job deleted in the background and run again from git.
RERUN = "rerun"
#: A binding with the old role kept by a bridge binding while it is recreated.
BRIDGE = "bridge-binding"
#: A plain delete and create, for a Service given a new cluster IP.
NEW_IP = "delete-and-create"


@dataclass(frozen=True)
class Procedure:
    """The safe way to recreate one object, as the plan shows it."""

    name: str
    steps: tuple[str, ...]
    loses: str = ""  # what running it costs; "" when nothing (then no --yes is asked for it)
    expand: tuple[tuple[str, str, str], ...] = ()  # (claim, from size, to size) to patch first
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "procedure": self.name,
            "steps": list(self.steps),
            "loses": self.loses,
            "expand": [{"claim": c, "from": a, "to": b} for c, a, b in self.expand],
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        """One line for ``drift``: the name, and what it costs."""
        cost = f"; it costs {self.loses}" if self.loses else "; nothing restarts"
        return f"fracctl recreate runs the {self.name} procedure{cost}"


@dataclass(frozen=True)
class Refusal:
    """Why no procedure is safe for this change, and what to do instead."""

    reason: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {"refused": self.reason, "fix": self.fix}

    def summary(self) -> str:
        """One line for ``drift``."""
        return f"fracctl recreate refuses: {self.reason}; {self.fix}"


@dataclass
class Facts:
    """What the cluster holds around the object, read before choosing.

    Attributes:
        pods: the pods the live object's selector selects in its namespace (workloads).
        services: the Services in a Deployment's namespace (the surge needs one that
            selects both the running pods and git's template).
        claims: the StatefulSet's existing claims by name.
        storage_classes: StorageClasses by name.
        default_class: the cluster's default StorageClass, "" when none.
        allow_active: a running Job may be recreated (its pods are killed).
        allow_new_ip: a Service may be given a new cluster IP.
    """

    pods: list[Obj] = field(default_factory=list)
    services: list[Obj] = field(default_factory=list)
    claims: dict[str, Obj] = field(default_factory=dict)
    storage_classes: dict[str, Obj] = field(default_factory=dict)
    default_class: str = ""
    allow_active: bool = False
    allow_new_ip: bool = False


Choice = Procedure | Refusal


def leaves(fields: list[FieldDiff]) -> list[FieldDiff]:
    """Each differing field down to the values git sets (a whole-``spec`` rule opened)."""
    out: list[FieldDiff] = []
    for f in fields:
        if isinstance(f.live, dict) and isinstance(f.desired, dict):
            out += diff_paths(f.live, f.desired, f.path, subset=True) or [f]
        else:
            out.append(f)
    return out


@dataclass(frozen=True)
class Unfinished:
    """A procedure that stopped half-way: its open journal (``recreate.state_dir``/objects).

    Which object, how far its procedure got, and the command that finishes it.
    """

    key: str  # Kind/namespace/name
    procedure: str
    phase: str  # the last step done ("" before the first)
    path: str
    rerun: str  # the command that resumes it
    suspended: str = ""  # what the run holds suspended until its rerun releases it

    def said(self) -> str:
        """One sentence: what stopped where, and what it still holds."""
        held = f"; {self.suspended} is suspended until the rerun" if self.suspended else ""
        return (
            f"a fracctl recreate of it stopped in its {self.procedure} procedure (last step "
            f"done: {self.phase or 'journaled'}; journal {self.path}{held})"
        )


def rerun_of(key: str) -> str:
    """The plain command that resumes ``key``'s procedure, when its journal names none."""
    kind, _, rest = key.partition("/")
    namespace, _, name = rest.rpartition("/")
    return f"fracctl recreate {kind}/{name}" + (f" -n {namespace}" if namespace else "")
