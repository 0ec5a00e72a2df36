"""Where a fleet's rollout on a Flux hub stands, from the hub's Kustomizations (pure).

``fracctl fleet render --flux`` (:mod:`fracctl.core.flux_fleet`) gives each cluster three
Kustomizations labelled ``fracctl.io/{fleet,cluster,wave,half}``; this reads them back as
kustomize-controller v1.9.6 writes their status (internal/controller/
kustomization_controller.go; the reasons are fluxcd/pkg/apis/meta's):

- ``Ready=True``, ``ReconciliationSucceeded``, ``Applied revision: <rev>`` and
  ``lastAppliedRevision`` once apply, prune and the health check passed (l.551-558);
  ``observedGeneration`` only then (``finalizeStatus``, l.1345-1348);
- ``Ready=False``, ``DependencyNotReady``, ``dependency '<ns>/<name>' is not ready`` (or
  ``revision is not up to date``) while a ``dependsOn`` waits (l.250-268, l.620-643):
  *waiting*, not a failure;
- ``Ready=Unknown``, ``Progressing`` and ``Reconciling=True`` while it applies or runs the
  health checks (``Running health checks for revision <rev> …``, l.331-332, l.1093-1095);
- ``Ready=False`` with ``HealthCheckFailed`` (a gate Job Failed: ``health check failed
  after …: failed early due to stalled resources: [Job/fracctl/… status: 'Failed']``,
  l.545-546, l.1111-1113), ``ReconciliationFailed``, ``BuildFailed``, ``PruneFailed``,
  ``ArtifactFailed``: *failed*; the rollout stops there.

Flux never carries the gate's refusal itself (only the Job's status): the fix says where
to read it in the cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.flux_fleet import HALVES, LABEL_CLUSTER, LABEL_HALF, LABEL_WAVE
from fracctl.core.kube.resources import ResourceRef

Obj = dict[str, Any]

KUSTOMIZATIONS = ResourceRef(
    "kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization", namespaced=True
)
GITREPOSITORIES = ResourceRef(
    "source.toolkit.fluxcd.io", "v1", "gitrepositories", "GitRepository", namespaced=True
)
WAITING_REASON = "DependencyNotReady"
FAILED_REASONS = frozenset(
    {
        "HealthCheckFailed",
        "ReconciliationFailed",
        "BuildFailed",
        "PruneFailed",
        "ArtifactFailed",
        "InvalidCELExpression",
        "AccessDenied",
    }
)
#: The gate's Job in each half (deploy/components/flux-gate).
JOBS = {"pre": "fracctl-gate-pre-sync", "post": "fracctl-gate-post-sync"}
_DEPENDENCY = re.compile(r"dependency '(?:[^/']*/)?([^']+)'")


def matches(applied: str, want: str) -> bool:
    """Whether Flux's revision ``applied`` (``main@sha1:<commit>``) is ``want``.

    ``applied`` may also be the older ``main/<commit>``; ``want`` may be the same string,
    its ``sha1:…`` part, or the commit or a prefix of it (7 characters or more).
    """
    if not applied or not want:
        return False
    if applied == want or applied.endswith("@" + want):
        return True
    wanted = want.rsplit(":", 1)[-1]
    return len(wanted) >= 7 and commit_of(applied).startswith(wanted)


def commit_of(revision: str) -> str:
    """The commit of a Flux source revision (``main@sha1:<commit>``, or ``main/<commit>``)."""
    return revision.rsplit(":", 1)[-1].rsplit("/", 1)[-1].rsplit("@", 1)[-1]


def short(revision: str) -> str:
    """``main@sha1:0123456789…`` as ``main@0123456``; anything else as it is."""
    ref, _, rest = revision.rpartition("@")
    commit = rest.rsplit(":", 1)[-1]
    return f"{ref}@{commit[:7]}" if ref else commit[:12]


@dataclass(frozen=True)
class Half:
    """One of a cluster's three Kustomizations, and what its status says."""

    name: str
    state: str  # ready | stale | applying | waiting | failed | suspended | pending
    reason: str = ""
    message: str = ""
    applied: str = ""  # lastAppliedRevision

    def to_dict(self) -> Obj:
        """The JSON form."""
        return {k: getattr(self, k) for k in ("name", "state", "reason", "message", "applied")}


def _ready(obj: Obj) -> Obj:
    conds = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conds if c.get("type") == "Ready"), {})


def half_state(obj: Obj, revision: str | None) -> Half:
    """What the Kustomization ``obj`` says, judged against ``revision`` (when known)."""
    st, ready = obj.get("status") or {}, _ready(obj)
    status, reason = ready.get("status", ""), ready.get("reason", "")
    applied = st.get("lastAppliedRevision", "")
    half = Half(obj["metadata"]["name"], "pending", reason, ready.get("message", ""), applied)
    if (obj.get("spec") or {}).get("suspend"):
        state = "suspended"
    elif status == "False" and reason == WAITING_REASON:
        state = "waiting"
    elif status == "False" and reason in FAILED_REASONS:
        state = "failed"
    elif status == "Unknown" or (status == "False" and reason):
        state = "applying"  # Progressing, or a retry in its course (HealthCheckCanceled)
    elif status == "True" and st.get("observedGeneration") == obj["metadata"].get("generation"):
        state = "ready" if revision is None or matches(applied, revision) else "stale"
    else:
        state = "pending"  # not reconciled yet, or its new generation not yet
    return Half(half.name, state, half.reason, half.message, half.applied)


@dataclass(frozen=True)
class ClusterRow:
    """One cluster: its wave, its three halves, and what holds it."""

    cluster: str
    wave: int
    halves: Mapping[str, Half | None]
    context: str = ""  # its kubeconfig context in fleet.clusters, if listed
    blocker: str = ""
    fix: str = ""

    @property
    def failed(self) -> Half | None:
        """The first half that failed, if one did."""
        return next((h for h in self._present() if h.state == "failed"), None)

    @property
    def applied(self) -> str:
        """The revision its config's Kustomization last applied."""
        config = self.halves.get("config")
        return config.applied if config else ""

    def done(self) -> bool:
        """Every half there and ready at the revision."""
        return all(h is not None and h.state == "ready" for h in self.halves.values())

    def _present(self) -> list[Half]:
        return [h for h in (self.halves.get(n) for n in HALVES) if h is not None]

    def to_dict(self, revision: str | None) -> Obj:
        """The JSON form."""
        return {
            "cluster": self.cluster,
            "wave": self.wave,
            "context": self.context or None,
            "applied": self.applied or None,
            "behind": bool(revision) and not matches(self.applied, revision or ""),
            "blocker": self.blocker or None,
            "fix": self.fix or None,
            "halves": {n: (h.to_dict() if h else None) for n, h in self.halves.items()},
        }


@dataclass(frozen=True)
class FluxRollout:
    """The rollout of one fleet on a hub, cluster by cluster, wave by wave."""

    fleet: str
    namespace: str
    source: str  # the GitRepository the Kustomizations share ("" when not one)
    revision: str | None  # what every cluster must run; None: unknown (see ``unknown``)
    unknown: str = ""
    clusters: list[ClusterRow] = field(default_factory=list)

    @property
    def waves(self) -> list[list[str]]:
        """The clusters wave by wave, lowest first."""
        numbers = sorted({r.wave for r in self.clusters})
        return [[r.cluster for r in self.clusters if r.wave == w] for w in numbers]

    @property
    def stopped(self) -> list[ClusterRow]:
        """The clusters where a half failed: the rollout waits on them."""
        return [r for r in self.clusters if r.failed is not None]

    @property
    def done(self) -> bool:
        """Every half of every cluster ready at the revision (which must be known)."""
        return bool(self.revision and self.clusters) and all(r.done() for r in self.clusters)

    def to_dict(self) -> Obj:
        """The JSON form."""
        return {
            "fleet": self.fleet,
            "namespace": self.namespace,
            "source": self.source or None,
            "revision": self.revision,
            "revision_unknown": self.unknown or None,
            "done": self.done,
            "stopped": [r.cluster for r in self.stopped],
            "waves": self.waves,
            "clusters": [r.to_dict(self.revision) for r in self.clusters],
        }


def rollout(
    fleet: str,
    namespace: str,
    kustomizations: Sequence[Obj],
    *,
    source: str,
    revision: str | None,
    unknown: str = "",
    contexts: Mapping[str, str] | None = None,
) -> FluxRollout:
    """The rollout from the fleet's Kustomizations (those of ``fracctl fleet render --flux``)."""
    contexts = contexts or {}
    grouped: dict[str, dict[str, Obj]] = {}
    waves: dict[str, int] = {}
    for obj in kustomizations:
        labels = obj["metadata"].get("labels") or {}
        cluster, half = labels.get(LABEL_CLUSTER), labels.get(LABEL_HALF)
        if not cluster or half not in HALVES:
            continue
        grouped.setdefault(cluster, {})[half] = obj
        waves[cluster] = _wave(labels.get(LABEL_WAVE))
    owners = {o["metadata"]["name"]: c for c, halves in grouped.items() for o in halves.values()}
    rows = []
    for cluster in sorted(grouped, key=lambda c: (waves[c], c)):
        halves = _halves(grouped[cluster], revision)
        row = ClusterRow(cluster, waves[cluster], halves, contexts.get(cluster, ""))
        blocker, fix = hold(row, owners, waves)
        rows.append(ClusterRow(row.cluster, row.wave, halves, row.context, blocker, fix))
    return FluxRollout(fleet, namespace, source, revision, unknown, rows)


def _halves(objs: Mapping[str, Obj], revision: str | None) -> dict[str, Half | None]:
    return {h: half_state(objs[h], revision) if h in objs else None for h in HALVES}


def _wave(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def hold(row: ClusterRow, owners: Mapping[str, str], waves: Mapping[str, int]) -> tuple[str, str]:
    """What holds ``row`` (blocker) and how to lift it (fix), or ``("", "")``."""
    failed = row.failed
    if failed is not None:
        return _failed(row, failed)
    for name in HALVES:
        h = row.halves.get(name)
        if h is None:
            return (
                f"no {name}-half Kustomization",
                "fracctl fleet render --flux, applied on the hub",
            )
        if h.state == "suspended":
            return f"{h.name} is suspended", f"flux resume kustomization {h.name}"
        if h.state == "waiting":
            return _waiting(row, h, owners, waves), ""
        if h.state in ("applying", "pending"):
            return f"{name}-half {h.state}", ""
    return "", ""


def _waiting(row: ClusterRow, h: Half, owners: Mapping[str, str], waves: Mapping[str, int]) -> str:
    m = _DEPENDENCY.search(h.message)
    dep = m.group(1) if m else ""
    cluster = owners.get(dep, "")
    if cluster and cluster != row.cluster:
        return f"waits for wave {waves[cluster]} ({cluster})"
    return f"waits for {dep}" if dep else "waits for a dependency"


def _failed(row: ClusterRow, h: Half) -> tuple[str, str]:
    half = next(n for n, x in row.halves.items() if x is h)
    blocker = f"{half}-half {h.name} failed ({h.reason})"
    job = JOBS.get(half)
    if job is None or h.reason != "HealthCheckFailed":
        return blocker, f"flux get kustomizations {h.name}: what it says; fix it in git"
    at = f"kubectl --context {row.context} -n fracctl" if row.context else "kubectl -n fracctl"
    fix = (
        f"the gate's refusal is in its output: {at} logs job/{job}; "
        "Flux runs the Job again by itself (the failed Job goes after its "
        "ttlSecondsAfterFinished, the next try within the Kustomization's retryInterval), "
        f"or now: {at} delete job {job}"
    )
    return blocker, fix
