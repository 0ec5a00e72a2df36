"""Where an Argo CD ApplicationSet's progressive sync (RollingSync) stands, as plain data.

Read from the objects Argo CD v3.2.11 writes (``applicationset/controllers/
applicationset_controller.go``, ``pkg/apis/application/v1alpha1/applicationset_types.go``):
``status.applicationStatus[]`` of the ApplicationSet holds each Application's rollout
state (``Waiting``, ``Pending``, ``Progressing``, ``Healthy``), its 1-based ``step``, a
message and when it last changed; each Application's ``status.operationState`` holds its
last sync, whose ``syncResult.resources[]`` carry each hook's ``hookPhase`` and message
(for a failed Pod hook, its container's termination message: gitops-engine
``pkg/health/health_pod.go``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

Obj = dict[str, Any]

FAILED_PHASES = ("Failed", "Error")
#: The fix part of each check in a fracctl refusal: "NAME: EVIDENCE -> FIX; NAME2: …".
_FIX = re.compile(r" -> (.*?)(?=; [\w-]+: |$)", re.S)


@dataclass
class HookFailure:
    """A sync hook that failed: which, in which phase, and what it said."""

    name: str
    kind: str
    hook_type: str
    phase: str
    message: str


@dataclass
class ClusterRollout:
    """One Application of the rollout: its cluster, step and state."""

    application: str
    cluster: str
    step: str
    status: str  # the rollout's: Waiting, Pending, Progressing, Healthy
    message: str
    since: str
    sync: str = ""
    health: str = ""
    operation: str = ""  # the last operation's phase
    operation_message: str = ""
    revision: str = ""
    hook: HookFailure | None = None
    fix: str = ""
    retries: int = 0  # Argo CD's retries of the current operation (``retryCount``)

    @property
    def retrying(self) -> bool:
        """A retry of a failed sync is running.

        Argo CD cleared the last attempt's results until it ends
        (``controller/appcontroller.go``, ``state.SyncResult = nil``).
        """
        return self.operation == "Running" and self.retries > 0 and self.hook is None

    @property
    def stopped(self) -> bool:
        """Its last sync failed (a hook refused, an apply failed): the rollout waits on it."""
        return (
            self.operation in FAILED_PHASES
            or self.hook is not None
            or self.health == "Degraded"
            or self.retrying
        )


@dataclass
class Rollout:
    """The ApplicationSet's rollout: its steps and every cluster's state."""

    appset: str
    strategy: str
    steps: list[str]
    clusters: list[ClusterRollout] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """Every cluster is Healthy."""
        return bool(self.clusters) and all(c.status == "Healthy" for c in self.clusters)

    @property
    def stopped(self) -> list[ClusterRollout]:
        """The clusters whose last sync failed."""
        return [c for c in self.clusters if c.stopped]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "appset": self.appset,
            "strategy": self.strategy,
            "steps": self.steps,
            "done": self.done,
            "stopped": [c.application for c in self.stopped],
            "clusters": [asdict(c) for c in self.clusters],
        }


def steps_of(appset: Obj) -> list[str]:
    """Each RollingSync step as a line: its label expressions (and maxUpdate)."""
    strategy = (appset.get("spec") or {}).get("strategy") or {}
    out = []
    for step in (strategy.get("rollingSync") or {}).get("steps") or []:
        parts = [f"{e.get('key')} {e.get('operator')} {','.join(e.get('values') or [])}"
                 for e in step.get("matchExpressions") or []]  # fmt: skip
        if "maxUpdate" in step:
            parts.append(f"maxUpdate {step['maxUpdate']}")
        out.append("; ".join(parts) or "every application")
    return out


def hook_failure(app: Obj) -> HookFailure | None:
    """The hook of the last sync that failed, if one did."""
    op = (app.get("status") or {}).get("operationState") or {}
    for r in (op.get("syncResult") or {}).get("resources") or []:
        if r.get("hookType") and r.get("hookPhase") in FAILED_PHASES:
            return HookFailure(str(r.get("name", "")), str(r.get("kind", "")),
                               str(r.get("hookType", "")), str(r.get("hookPhase", "")),
                               str(r.get("message", "")))  # fmt: skip
    return None


RETRYING_FIX = ("its last attempt failed and Argo CD is trying again; the hook's message "
                "shows once this attempt ends: run this again")  # fmt: skip


def fix_of(failure: HookFailure | None, app: str) -> str:
    """What to do: a fracctl refusal's own fixes, then how the rollout goes on."""
    if failure is None:
        return ""
    fixes = [f.strip() for f in _FIX.findall(failure.message)]
    then = f"then Argo CD's retry (syncPolicy.retry), or one `argocd app sync {app}`, goes on"
    return "; ".join([*fixes, then]) if fixes else f"see the hook's message; {then}"


def cluster_rollout(entry: Obj, app: Obj | None) -> ClusterRollout:
    """One ``status.applicationStatus[]`` entry with its Application (None: not found)."""
    name = str(entry.get("application", ""))
    status = (app or {}).get("status") or {}
    dest = ((app or {}).get("spec") or {}).get("destination") or {}
    op = status.get("operationState") or {}
    failure = hook_failure(app or {})
    cluster = ClusterRollout(
        application=name,
        cluster=str(dest.get("name") or dest.get("server") or ""),
        step=str(entry.get("step", "")),
        status=str(entry.get("status", "")),
        message=str(entry.get("message", "")),
        since=str(entry.get("lastTransitionTime", "")),
        sync=str((status.get("sync") or {}).get("status", "")),
        health=str((status.get("health") or {}).get("status", "")),
        operation=str(op.get("phase", "")),
        operation_message=str(op.get("message", "")),
        revision=", ".join(entry.get("targetRevisions") or []),
        hook=failure,
        fix=fix_of(failure, name),
        retries=int(op.get("retryCount") or 0),
    )
    if cluster.retrying:
        cluster.fix = RETRYING_FIX
    return cluster


def rollout(appset: Obj, applications: list[Obj]) -> Rollout:
    """The rollout of ``appset``, its Applications read beside it."""
    by_name = {a["metadata"]["name"]: a for a in applications}
    spec = appset.get("spec") or {}
    entries = (appset.get("status") or {}).get("applicationStatus") or []
    clusters = [cluster_rollout(e, by_name.get(str(e.get("application")))) for e in entries]
    clusters.sort(key=lambda c: (int(c.step) if c.step.isdigit() else 0, c.application))
    return Rollout(
        appset=appset["metadata"]["name"],
        strategy=str((spec.get("strategy") or {}).get("type") or "AllAtOnce"),
        steps=steps_of(appset),
        clusters=clusters,
    )
