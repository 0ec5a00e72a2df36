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

from fracctl.core.appset_order import applied, not_at, out_of_turn

Obj = dict[str, Any]
#: The label the example ApplicationSet's template gives each Application: its cluster's
#: name (the cluster generator's ``{{name}}``, as ``fracctl sandbox env --cluster`` knows it).
CLUSTER_LABEL = "fracctl.io/cluster"
#: Argo CD's message while a deny window holds an operation (``controller/sync.go``
#: l.141-149: the phase stays Running).
WINDOW = "Sync operation blocked by sync window"

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
    applied: str = ""  # the revision its last successful sync applied
    behind: str = ""  # why it does not run git's revision ("" when it does)
    out_of_turn: str = ""  # an earlier step's cluster that had not run what this one applied

    @property
    def windowed(self) -> bool:
        """A sync window holds its operation (the last hook's message is stale then)."""
        return self.operation == "Running" and self.operation_message.startswith(WINDOW)

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
            or self.windowed
        )

    @property
    def blocker(self) -> str:
        """What holds this cluster now, in a few words ("" when nothing does)."""
        if self.windowed:
            return "a sync window holds its sync"
        if self.retrying:
            return f"Argo CD retries a failed sync (attempt #{self.retries})"
        if self.hook:
            h = self.hook
            return f"{h.hook_type} hook {h.kind}/{h.name} {h.phase.lower()}"
        if self.operation in FAILED_PHASES or self.health == "Degraded":
            return f"its sync {self.operation.lower() or 'failed'}"
        return ""


@dataclass
class Rollout:
    """The ApplicationSet's rollout: its steps and every cluster's state."""

    appset: str
    strategy: str
    steps: list[str]
    clusters: list[ClusterRollout] = field(default_factory=list)
    revision: str = ""  # git's: what every cluster must run ("" when unknown)
    unknown: str = ""  # why git's revision is unknown

    @property
    def done(self) -> bool:
        """Every cluster runs git's revision.

        Its Application is Synced and Healthy at it, and its last sync (the gate's PostSync
        included, which verified the live config) applied it.
        """
        return bool(self.clusters and self.revision) and not any(c.behind for c in self.clusters)

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
            "revision": self.revision,
            "revision_unknown": self.unknown,
            "done": self.done,
            "stopped": [c.application for c in self.stopped],
            "clusters": [{**asdict(c), "blocker": c.blocker} for c in self.clusters],
        }


def steps_of(appset: Obj) -> list[str]:
    """Each RollingSync step as a line: its label expressions (and maxUpdate)."""
    strategy = (appset.get("spec") or {}).get("strategy") or {}
    out = []
    for step in (strategy.get("rollingSync") or {}).get("steps") or []:
        parts = [
            f"{e.get('key')} {e.get('operator')} {','.join(e.get('values') or [])}"
            for e in step.get("matchExpressions") or []
        ]
        if "maxUpdate" in step:
            parts.append(f"maxUpdate {step['maxUpdate']}")
        out.append("; ".join(parts) or "every application")
    return out


def hook_failure(app: Obj) -> HookFailure | None:
    """The hook of the last sync that failed, if one did."""
    op = (app.get("status") or {}).get("operationState") or {}
    for r in (op.get("syncResult") or {}).get("resources") or []:
        if r.get("hookType") and r.get("hookPhase") in FAILED_PHASES:
            return HookFailure(
                str(r.get("name", "")),
                str(r.get("kind", "")),
                str(r.get("hookType", "")),
                str(r.get("hookPhase", "")),
                str(r.get("message", "")),
            )
    return None


WINDOW_FIX = (
    "the window's end (or `argocd app sync {app}` where the window allows manual "
    "syncs) lets it run; fracctl's gate guards it then"
)
RETRYING_FIX = (
    "its last attempt failed and Argo CD is trying again; the hook's message "
    "shows once this attempt ends: run this again"
)


def fix_of(failure: HookFailure | None, app: str) -> str:
    """What to do: a fracctl refusal's own fixes, then how the rollout goes on."""
    if failure is None:
        return ""
    fixes = [f.strip() for f in _FIX.findall(failure.message)]
    then = f"then Argo CD's retry (syncPolicy.retry), or one `argocd app sync {app}`, goes on"
    return "; ".join([*fixes, then]) if fixes else f"see the hook's message; {then}"


def cluster_rollout(entry: Obj, app: Obj | None, revision: str = "") -> ClusterRollout:
    """One ``status.applicationStatus[]`` entry with its Application (None: not found).

    Judged against git's ``revision`` ("" when unknown).
    """
    name = str(entry.get("application", ""))
    status = (app or {}).get("status") or {}
    dest = ((app or {}).get("spec") or {}).get("destination") or {}
    labels = ((app or {}).get("metadata") or {}).get("labels") or {}
    op = status.get("operationState") or {}
    failure = hook_failure(app or {})
    if failure and op.get("phase") == "Running" and str(op.get("message", "")).startswith(WINDOW):
        failure = None  # the last attempt's, not what holds it now
    cluster = ClusterRollout(
        application=name,
        cluster=str(labels.get(CLUSTER_LABEL) or dest.get("name") or dest.get("server") or ""),
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
        applied=applied(app or {}),
        behind=(not_at(app, revision) if app else "no Application") if revision else "",
    )
    if cluster.retrying:
        cluster.fix = RETRYING_FIX
    if cluster.windowed:
        cluster.fix = WINDOW_FIX.format(app=name)
    return cluster


def rollout(appset: Obj, applications: list[Obj], revision: str = "", unknown: str = "") -> Rollout:
    """The rollout of ``appset``, its Applications read beside it.

    Judged against git's ``revision`` (``unknown`` says why there is none).
    """
    by_name = {a["metadata"]["name"]: a for a in applications}
    spec = appset.get("spec") or {}
    entries = (appset.get("status") or {}).get("applicationStatus") or []
    clusters = [
        cluster_rollout(e, by_name.get(str(e.get("application"))), revision) for e in entries
    ]
    clusters.sort(key=lambda c: (int(c.step) if c.step.isdigit() else 0, c.application))
    broken_at = out_of_turn(appset, applications)
    for c in clusters:
        broken = broken_at.get(c.application)
        c.out_of_turn = str(broken) if broken else ""
    return Rollout(
        appset=appset["metadata"]["name"],
        strategy=str((spec.get("strategy") or {}).get("type") or "AllAtOnce"),
        steps=steps_of(appset),
        clusters=clusters,
        revision=revision,
        unknown=unknown,
    )


def source_of(appset: Obj) -> tuple[str, str]:
    """(repoURL, targetRevision) of the template's single source.

    Both "" where either is a template expression, or there are several sources.
    """
    source = (((appset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("source")
    if not isinstance(source, dict):
        return "", ""
    url, ref = str(source.get("repoURL") or ""), str(source.get("targetRevision") or "HEAD")
    return ("", "") if "{{" in url + ref else (url, ref)
