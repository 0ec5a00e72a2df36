"""What must hold after the delete for the next calls to succeed, judged on what was read.

Pure decisions for the rehearsal of a recreate (:mod:`fracctl.flows.engines.rehearse` reads):

* every finalizer on the live object has something that releases it: only the
  gpu-fractioning operator's is known, so any other refuses (the delete would leave the
  object terminating with nothing to release it);
* no other GitOps owner marks the live object: a Flux Kustomization or an Argo CD
  Application other than the configured one would apply its own version after fracctl's;
* what the wait waits for is written: the readiness condition fracctl.yaml names is the
  one the operator writes on the nodes the live object selects, and each node of the new
  selection can run the agents (its kubelet reports Ready, and it has no taint the
  agents' DaemonSets do not tolerate).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fracctl.core.kube.nodes import condition

Obj = Mapping[str, Any]

#: The tolerations the DaemonSet controller adds to every DaemonSet pod, whatever its
#: template says (kubernetes ``pkg/controller/daemon/util/daemonset_util.go``,
#: ``AddOrUpdateDaemonPodTolerations``): the node life-cycle taints.
DAEMONSET_TOLERATIONS: tuple[tuple[str, str], ...] = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)

#: The labels Flux's kustomize-controller sets on every object it applies
#: (fluxcd/kustomize-controller ``internal/controller``: ``<group>/name``, ``/namespace``).
FLUX_NAME = "kustomize.toolkit.fluxcd.io/name"
FLUX_NAMESPACE = "kustomize.toolkit.fluxcd.io/namespace"
#: Argo CD's annotation tracking (the default since v3): ``<app>:<group>/<kind>:<ns>/<name>``,
#: ``<app-namespace>_<app>`` for an application outside Argo CD's own namespace.
ARGOCD_TRACKING = "argocd.argoproj.io/tracking-id"
KUSTOMIZATION, APPLICATION = "Flux Kustomization", "Argo CD Application"


@dataclass(frozen=True)
class Owner:
    """A GitOps owner named by an object's marks: the engine that recreates through it.

    Two owners are the same when their engine, name and namespace are; ``kind`` says what
    it is (``Flux Kustomization``), ``carries`` that only its engine can carry the object
    across (a release's upgrade would fail otherwise), ``covers`` the engines whose marks
    its objects carry too (a HelmRelease's objects carry a Helm release's).
    """

    tool: str  # the engine's name in the backend registry
    name: str
    namespace: str = ""
    kind: str = field(default="", compare=False)
    carries: bool = field(default=False, compare=False)
    covers: tuple[str, ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind or self.tool} {where}{self.name}"


def owners(obj: Obj) -> list[Owner]:
    """The Kustomization and Argo CD Application an object's labels and annotations name."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    notes = meta.get("annotations") or {}
    out: list[Owner] = []
    if labels.get(FLUX_NAME):
        name, namespace = str(labels[FLUX_NAME]), str(labels.get(FLUX_NAMESPACE) or "")
        out.append(Owner("flux", name, namespace, kind=KUSTOMIZATION))
    tracking = str(notes.get(ARGOCD_TRACKING) or "")
    if tracking:
        app = tracking.split(":", 1)[0]
        ns, _, name = app.rpartition("_")
        out.append(Owner("argocd", name, ns, kind=APPLICATION))
    return out


def foreign_owners(
    obj: Obj, expected: Owner | None, found: list[Owner] | None = None
) -> list[Owner]:
    """The owners an object names (``found``, else :func:`owners`) other than ``expected``.

    An Application named without a namespace matches the expected one by name alone.
    """
    out = []
    for o in owners(obj) if found is None else found:
        if expected is not None and same(o, expected):
            continue
        out.append(o)
    return out


def same(o: Owner, expected: Owner) -> bool:
    """Whether ``o`` is ``expected`` (a namespace left out matches any; so does a kind)."""
    return (
        o.tool == expected.tool
        and o.name == expected.name
        and (not o.kind or not expected.kind or o.kind == expected.kind)
        and (o.namespace in ("", expected.namespace) or not expected.namespace)
    )


def unknown_finalizers(obj: Obj, known: Iterable[str]) -> list[str]:
    """The finalizers on ``obj`` that nothing fracctl knows of releases."""
    keep = set(known)
    return [f for f in (obj.get("metadata") or {}).get("finalizers") or [] if f not in keep]


def condition_written(nodes: Sequence[Obj], kind: str) -> tuple[bool, list[str]]:
    """Whether any of ``nodes`` carries the condition ``kind``; else the like-named ones."""
    if any(condition(n, kind) is not None for n in nodes):
        return True, []
    suffix = kind.rsplit("/", 1)[-1]
    seen = sorted(
        {
            str(c.get("type"))
            for n in nodes
            for c in (n.get("status") or {}).get("conditions") or []
            if "/" in str(c.get("type")) and str(c.get("type")).endswith("/" + suffix)
        }
    )
    return False, seen


def tolerated(taint: Obj, tolerations: Iterable[Obj]) -> bool:
    """Whether a taint is tolerated (Kubernetes' rules: key, operator, value, effect)."""
    key, value, effect = taint.get("key"), taint.get("value") or "", taint.get("effect")
    for t in tolerations:
        if t.get("effect") not in (None, "", effect):
            continue
        operator = t.get("operator") or "Equal"
        if not t.get("key"):
            if operator == "Exists":
                return True
            continue
        if t.get("key") != key:
            continue
        if operator == "Exists" or (t.get("value") or "") == value:
            return True
    return False


def cannot_run_agents(node: Obj, tolerations: Sequence[Obj]) -> list[str]:
    """Why the agents' pods cannot run on ``node`` (empty: they can).

    The kubelet must report Ready, and every NoSchedule or NoExecute taint must be
    tolerated by the agents' DaemonSets (their templates' tolerations and what the
    DaemonSet controller adds to each of their pods).
    """
    out: list[str] = []
    ready = condition(node, "Ready")
    if ready is None:
        out.append("its kubelet reports no Ready condition")
    elif ready.get("status") != "True":
        why = ready.get("reason") or ready.get("message") or "no reason"
        out.append(f"its kubelet reports Ready={ready.get('status')} ({why})")
    every = [*tolerations, *({"key": k, "operator": "Exists", "effect": e}
                            for k, e in DAEMONSET_TOLERATIONS)]  # fmt: skip
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not tolerated(taint, every):
            value = f"={taint.get('value')}" if taint.get("value") else ""
            out.append(
                f"taint {taint.get('key')}{value}:{taint.get('effect')} is not tolerated by "
                "the agents"
            )
    return out
