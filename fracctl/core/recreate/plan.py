"""Pure decisions of ``fracctl recreate``: what to do, judged from the cluster as it is now.

Nothing here remembers an earlier run. Every decision takes what was just observed (the
drift verdict for the target, whether the live object is terminating, how the selected
nodes report) and returns the steps still needed, so a rerun after any partial failure
resumes where the cluster actually stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.drift import APPLIES_IN_PLACE, MISSING_LIVE, NEEDS_RECREATE, RESTARTS_DAEMONS

# Steps, in order. A plan is a suffix of this list (or empty).
PROVE = "prove"
GUARDS = "guards"
BACKUP = "backup"
DELETE = "delete"
WAIT_GONE = "wait-gone"
RECREATE = "recreate"
UPGRADE = "upgrade"  # a backend whose own run deletes and recreates (helm's hook)
ARM = "arm"  # an in-place change that rolls the daemons: the guard policy lets it through
UPDATE = "update"  # the backend applies git's object over the live one (no delete)
VERIFY = "verify"
WAIT_READY = "wait-ready"
RECORD = "record"


# Why a plan looks the way it does.
NOTHING_TO_DO = "nothing-to-do"
IN_PLACE = "applies-in-place"
FULL = "recreate"
RESUME_GONE = "resume-terminating"
RESUME_MISSING = "resume-missing"
RESUME_READY = "resume-wait-ready"
RESUME_UPGRADE = "resume-upgrade"
ROLL = "restarts-daemons"  # updated in place, guarded: the operator rolls the daemons


@dataclass(frozen=True)
class ReleaseState:
    """What the plan needs of a release whose upgrade recreates the object."""

    differs: bool  # git's chart would change it, or its newest revision is not deployed
    interrupted: bool  # its newest revision is pending, left by a stopped run


@dataclass
class Plan:
    """The steps still needed and why."""

    reason: str
    steps: list[str] = field(default_factory=list)
    summary: str = ""
    before: dict[str, str] | None = None
    after: dict[str, str] | None = None

    @property
    def changes_cluster(self) -> bool:
        """Whether any step deletes or creates the object."""
        return any(s in self.steps for s in (DELETE, RECREATE, UPGRADE, UPDATE))

    def to_dict(self, texts: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Plain data for JSON output; ``texts`` says what each step does."""
        texts = texts or {}
        return {
            "reason": self.reason,
            "summary": self.summary,
            "steps": [{"step": s, "what": texts.get(s, s)} for s in self.steps],
            "before": self.before,
            "after": self.after,
        }


# The plan for each verdict that decides it alone: its name, its steps, why.
_BY_VERDICT: dict[str, tuple[str, tuple[str, ...], str]] = {
    MISSING_LIVE: (
        RESUME_MISSING,
        (PROVE, GUARDS, RECREATE, VERIFY, WAIT_READY, RECORD),
        "the object is absent from the cluster: recreate it from git",
    ),
    NEEDS_RECREATE: (
        FULL,
        (PROVE, GUARDS, BACKUP, DELETE, WAIT_GONE, RECREATE, VERIFY, WAIT_READY, RECORD),
        "an immutable field differs: delete and recreate",
    ),
    RESTARTS_DAEMONS: (
        ROLL,
        (PROVE, GUARDS, BACKUP, ARM, UPDATE, VERIFY, WAIT_READY, RECORD),
        "restarts-daemons: a field the operator writes into its daemons' pod templates "
        "differs: update it in place, guarded, and wait until the daemons have rolled on "
        "every selected node",
    ),
    APPLIES_IN_PLACE: (
        IN_PLACE,
        (),
        "the live object differs only in fields that update in place: a normal sync applies them",
    ),
}


def decide(
    *,
    verdict: str,
    terminating: bool,
    live_selector: dict[str, str] | None,
    desired_selector: dict[str, str] | None,
    unready_nodes: list[str],
    release: ReleaseState | None = None,
    rolling: list[str] | None = None,
) -> Plan:
    """Choose the remaining steps from what the cluster shows now.

    Args:
        verdict: the drift verdict for the target (``in-sync``, ``needs-recreate``,
            ``applies-in-place``, ``missing-live``; ``missing-desired`` and
            ``rejected`` are refused by the caller before this).
        terminating: the live object has a deletion timestamp.
        live_selector: the live ``nodeSelector`` (None when absent).
        desired_selector: git's ``nodeSelector``.
        unready_nodes: nodes the live selector matches that are not ready.
        release: for a backend whose own run deletes and recreates the object (a
            chart's upgrade whose hook it is), the release's state: see
            :func:`decide_upgrade`.
        rolling: what of the daemons' rollout is not done yet (an update applied, the
            operator or the DaemonSet controller not yet through).
    """
    if release is not None:
        return decide_upgrade(
            verdict=verdict,
            terminating=terminating,
            live_selector=live_selector,
            desired_selector=desired_selector,
            release=release,
            unready_nodes=unready_nodes,
            rolling=rolling,
        )
    if terminating:
        return Plan(
            RESUME_GONE,
            [PROVE, GUARDS, WAIT_GONE, RECREATE, VERIFY, WAIT_READY, RECORD],
            "the object is already being deleted: wait for it to go, then recreate",
            live_selector,
            desired_selector,
        )
    if verdict in _BY_VERDICT:
        name, steps, why = _BY_VERDICT[verdict]
        live = None if verdict == MISSING_LIVE else live_selector
        return Plan(name, list(steps), why, live, desired_selector)
    if unready_nodes or rolling:
        return _waiting(unready_nodes, rolling or [], live_selector, desired_selector)
    return Plan(
        NOTHING_TO_DO,
        [],
        "the live object already matches git and every selected node is ready",
        live_selector,
        desired_selector,
    )


def _waiting(
    unready: list[str],
    rolling: list[str],
    live_selector: dict[str, str] | None,
    desired_selector: dict[str, str] | None,
) -> Plan:
    """The object matches git, and the nodes or the daemons' rollout are not there yet."""
    waits = [f"{len(unready)} selected node(s) not ready yet"] * bool(unready)
    waits += [f"the daemons' rollout is not done ({'; '.join(rolling)})"] * bool(rolling)
    return Plan(
        RESUME_READY,
        [WAIT_READY, RECORD],
        f"the object matches git; {' and '.join(waits)}: wait",
        live_selector,
        desired_selector,
    )


_UPGRADE_WHY = {
    NEEDS_RECREATE: "an immutable field differs",
    RESTARTS_DAEMONS: "a field that rolls the daemons differs",
    APPLIES_IN_PLACE: "the object differs from git",
}


def decide_upgrade(
    *,
    verdict: str,
    terminating: bool,
    live_selector: dict[str, str] | None,
    desired_selector: dict[str, str] | None,
    release: ReleaseState,
    unready_nodes: list[str],
    rolling: list[str] | None = None,
) -> Plan:
    """The remaining steps when the backend's own run deletes and recreates the object.

    A chart's upgrade whose hook is the object (``recreate.backend: helm``) recreates it
    whenever it runs, so it is needed when the object differs from git *or* the release
    does (its values, its templates, a revision that is not ``deployed``), and its
    window is paid either way.

    Args:
        verdict: the drift verdict for the target.
        terminating: the live object has a deletion timestamp (an upgrade was stopped
            while the hook's delete ran).
        live_selector: the live ``nodeSelector`` (None when absent).
        desired_selector: git's ``nodeSelector``.
        release: whether git's chart would change the release (or its newest revision
            is not deployed), and whether that revision is pending, left by a stopped run.
        unready_nodes: nodes the live selector matches that are not ready.
        rolling: what of the daemons' rollout is not done yet.
    """
    after = [VERIFY, WAIT_READY, RECORD]
    if terminating or release.interrupted or verdict == MISSING_LIVE:
        return Plan(
            RESUME_UPGRADE,
            [PROVE, GUARDS, UPGRADE, *after],
            "an upgrade was interrupted (the object is "
            + ("terminating" if terminating else "absent" if verdict == MISSING_LIVE else "there")
            + (", the release pending" if release.interrupted else "")
            + "): run it again, its hook creates the object",
            live_selector,
            desired_selector,
        )
    if verdict in (NEEDS_RECREATE, RESTARTS_DAEMONS, APPLIES_IN_PLACE) or release.differs:
        why = _UPGRADE_WHY.get(verdict, "the object matches git but the release does not")
        return Plan(
            FULL,
            [PROVE, GUARDS, BACKUP, UPGRADE, *after],
            f"{why}: the upgrade's hook deletes and recreates the object, so the MPS "
            "daemons restart on every fraction node even where the selector does not change",
            live_selector,
            desired_selector,
        )
    return decide(
        verdict=verdict,
        terminating=False,
        live_selector=live_selector,
        desired_selector=desired_selector,
        unready_nodes=unready_nodes,
        rolling=rolling,
    )
