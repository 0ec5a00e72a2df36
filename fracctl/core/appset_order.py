"""The order a RollingSync promises, and whether a cluster of the fleet runs a revision.

Argo CD v3.2's applicationset-controller starts a step's syncs once every Application of
the steps before is Healthy (``applicationset/controllers/applicationset_controller.go``
``isApplicationHealthy``: health Healthy, not OutOfSync, last operation Succeeded or
none). It judges that on whatever status the Applications last reported, and an
Application synced by hand, or refreshed before the canary saw the commit, syncs out of
turn (argo-cd#12325, #29347, #29410). fracctl keeps the promise itself: the gate's
PreSync half of a cluster refuses a change that restarts the daemons until every cluster
of every earlier step *runs the revision being synced* (:func:`behind`), read from the
Applications where Argo CD runs.

"Runs a revision" (:func:`not_at`) means: the Application compares against it and is
Synced and Healthy, and its last operation succeeded on it. With the gate installed that
operation's PostSync hook verified the live config against the revision and waited for
every node, so a Succeeded operation is the cluster's own word, not the sync status alone.

Revisions are read from Argo CD v3.2.12's Application status: ``status.sync.revision``
(what it compares against), ``status.operationState.syncResult.revision`` (the SHA a sync
resolved, written before its PreSync hooks run: ``controller/sync.go`` l.168-171),
``status.history[]`` (each successful deploy's ``revision``, ``deployStartedAt``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

#: Argo CD's resource tracking (annotation tracking, v3's default), on every object it
#: renders, hooks included: ``<instance>:<group>/<kind>:<namespace>/<name>``, the
#: instance being the Application's name, or ``<namespace>_<name>`` outside Argo CD's
#: own namespace (``util/argo/resource_tracking.go``, ``types.go`` ``InstanceName``).
TRACKING = "argocd.argoproj.io/tracking-id"
#: The check's name in a refusal ("NAME: EVIDENCE -> FIX").
CHECK = "rollout-order"
SHA = re.compile(r"^[0-9a-f]{40}$")


def short(revision: str) -> str:
    """A commit as people read it (the first 7 hex digits), or the text as it is."""
    return revision[:7] if SHA.match(revision) else (revision or "none")


def instance_of(tracking: str) -> tuple[str | None, str]:
    """(namespace or None, name) of the Application a tracking id names.

    Raises:
        ValueError: ``tracking`` is not a tracking id.
    """
    instance = tracking.split(":", 1)[0].strip()
    if not instance or ":" not in tracking:
        raise ValueError(f"not an Argo CD tracking id: {tracking!r}")
    if "_" in instance:  # Application names never hold one (DNS subdomains)
        namespace, name = instance.split("_", 1)
        return namespace, name
    return None, instance


def _status(app: Obj) -> Obj:
    return app.get("status") or {}


def _op(app: Obj) -> Obj:
    return _status(app).get("operationState") or {}


def syncing(app: Obj) -> str:
    """The SHA the Application's current (or last) sync operation syncs ("" if unresolved)."""
    op = _op(app)
    for value in (
        (op.get("syncResult") or {}).get("revision"),
        ((op.get("operation") or {}).get("sync") or {}).get("revision"),
    ):
        if value and SHA.match(str(value)):
            return str(value)
    return ""


def applied(app: Obj) -> str:
    """The revision the Application's last successful sync applied ("" if none)."""
    op = _op(app)
    if op.get("phase") == "Succeeded":
        return str((op.get("syncResult") or {}).get("revision") or "")
    history = _status(app).get("history") or []
    return str(history[-1].get("revision") or "") if history else ""


def not_at(app: Obj, revision: str) -> str:
    """Why the Application's cluster does not run ``revision`` ("" when it does)."""
    status, op = _status(app), _op(app)
    sync = status.get("sync") or {}
    compared = str(sync.get("revision") or "")
    if compared != revision:
        return f"Argo CD compares it with {short(compared)}"
    last = str((op.get("syncResult") or {}).get("revision") or "")
    if sync.get("status") != "Synced":
        if op.get("phase") == "Succeeded" and last == revision:  # the incident's pattern
            return (
                f"{sync.get('status')} at {short(revision)} although its last sync of it "
                "reported success: the live objects are not git's"
            )
        return f"{sync.get('status') or 'unknown sync status'} at {short(revision)}"
    health = (status.get("health") or {}).get("status") or "unknown"
    if health != "Healthy":
        return f"health {health}"
    if op.get("phase") != "Succeeded" or last != revision:
        return f"its last sync ({op.get('phase') or 'none'}) was of {short(last)}"
    return ""


@dataclass(frozen=True)
class Behind:
    """A cluster of an earlier step that does not run the revision yet."""

    application: str
    step: int
    why: str

    def __str__(self) -> str:
        return f"{self.application} (step {self.step}): {self.why}"


def steps_by_app(appset: Obj) -> dict[str, int]:
    """Each Application's step (1-based), as the applicationset-controller assigned it."""
    entries = _status(appset).get("applicationStatus") or []
    return {
        str(e.get("application")): int(e.get("step") or 0)
        for e in entries
        if str(e.get("step") or "").isdigit()
    }


def progressive(appset: Obj) -> bool:
    """Whether the ApplicationSet rolls out step by step (RollingSync)."""
    strategy = (appset.get("spec") or {}).get("strategy") or {}
    return strategy.get("type") == "RollingSync"


def behind(appset: Obj, applications: list[Obj], me: str, revision: str) -> list[Behind]:
    """The clusters of the steps before ``me``'s that do not run ``revision``.

    Raises:
        ValueError: the ApplicationSet's rollout status has no step for ``me``.
    """
    steps = steps_by_app(appset)
    if me not in steps:
        raise ValueError(f"the ApplicationSet's rollout status has no step for {me}")
    mine = steps[me]
    out = []
    for app in sorted(applications, key=lambda a: str(a["metadata"]["name"])):
        name = str(app["metadata"]["name"])
        step = steps.get(name, 0)
        if 0 < step < mine:
            why = not_at(app, revision)
            if why:
                out.append(Behind(name, step, why))
    return sorted(out, key=lambda b: (b.step, b.application))


def deployed_at(app: Obj, revision: str) -> tuple[str, str] | None:
    """(started, finished) of the Application's latest successful deploy of ``revision``."""
    for h in reversed(_status(app).get("history") or []):
        if h.get("revision") == revision:
            return str(h.get("deployStartedAt") or ""), str(h.get("deployedAt") or "")
    return None


def out_of_turn(appset: Obj, applications: list[Obj]) -> dict[str, Behind]:
    """The Applications whose last deploy began before an earlier step's cluster ran it.

    For each Application and the revision it last applied: every Application of an
    earlier step must have deployed that revision (its history), finished before this
    one's deploy began. Times are RFC 3339 UTC, compared as text.
    """
    steps = steps_by_app(appset)
    by_name = {str(a["metadata"]["name"]): a for a in applications}
    broken: dict[str, Behind] = {}
    for name, app in by_name.items():
        revision = applied(app)
        mine = deployed_at(app, revision) if revision else None
        if mine is None:
            continue
        for other, step in sorted(steps.items(), key=lambda kv: (kv[1], kv[0])):
            if not (0 < step < steps.get(name, 0)) or other not in by_name:
                continue
            theirs = deployed_at(by_name[other], revision)
            if theirs is None or not theirs[1] or theirs[1] > mine[0]:
                when = f"finished {theirs[1]}" if theirs and theirs[1] else "not deployed"
                broken[name] = Behind(
                    other, step, f"{short(revision)} {when}; this one began {mine[0]}"
                )
                break
    return broken
