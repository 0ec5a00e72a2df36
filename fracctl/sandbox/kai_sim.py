"""SIMULATION of the KAI scheduler, for the sandbox and the tests. It is not KAI.

kube-scheduler places every other pod; this does only what KAI visibly does to a pod
that names it in ``spec.schedulerName``:

* it considers the nodes the pod's ``nodeSelector`` matches and whose NoSchedule /
  NoExecute taints the pod tolerates (the pool);
* for a fractional pod (``gpu-fraction`` or ``gpu-memory`` annotation) it refuses
  every pool node whose readiness condition is not ``True``
  (``pkg/scheduler/plugins/gpusharingnodevalidation``): the pod's ``PodScheduled``
  condition becomes ``False`` / ``Unschedulable`` with KAI's words
  (:mod:`fracctl.core.fractions.kai_words`, read from KAI's source): ``no nodes with enough
  resources were found: 1 node is not ready for fractional GPU scheduling. Condition
  <type> is Unknown. Reason: ConditionNotFound. Message: .`` for a node without the
  condition;
* otherwise it binds the pod to the first eligible node (``POST pods/{name}/binding``;
  the API server marks it scheduled) and the node's kubelet (KWOK) runs it;
* a pool with no node at all gets KAI's summary of the node filters' reasons
  (``no nodes with enough resources were found: 3 node(s) didn't match Pod's node
  affinity/selector.``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.config import Config
from fracctl.core.fractions import kai_words as kai
from fracctl.core.kube.nodes import condition, is_ready, labels_of, matches
from fracctl.core.kube.resources import NODES, PODS
from fracctl.errors import Conflict, FracctlError, NotFound

SMP = "application/strategic-merge-patch+json"
STAMP = "2026-01-01T00:00:00Z"
FRACTION_KEYS = ("gpu-fraction", "gpu-memory")


def _tolerates(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(
            (not t.get("key") or t.get("key") == taint.get("key"))
            and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
            and (not t.get("effect") or t.get("effect") == taint.get("effect"))
            for t in tolerations
        ):
            return False
    return True


def not_ready_message(node: Mapping[str, Any], cond_type: str) -> str:
    """One node's refusal, as gpusharingnodevalidation.go words it."""
    c = condition(node, cond_type)
    if c is None:
        return kai.not_ready(cond_type, kai.MISSING_STATUS, kai.MISSING_REASON, "")
    reason = str(c.get("reason") or "") or kai.MISSING_REASON
    return kai.not_ready(cond_type, str(c.get("status")), reason, str(c.get("message") or ""))


class KaiSimulation:
    """Schedules pods that name ``kai-scheduler``, as KAI visibly would."""

    def __init__(self, kube: Kube, config: Config, *, scheduler_name: str = "kai-scheduler"):
        self.kube = kube
        self.config = config
        self.scheduler_name = scheduler_name
        self.seen: list[dict[str, Any]] = []  # every pod it looked at, as first seen

    def reconcile(self) -> None:
        """One pass over the unbound pods that name this scheduler."""
        pods = self.kube.list(
            PODS, field_selector=f"spec.schedulerName={self.scheduler_name},spec.nodeName="
        )
        if not pods:
            return
        nodes = self.kube.list(NODES)
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if not any(p["metadata"]["uid"] == pod["metadata"]["uid"] for p in self.seen):
                self.seen.append(pod)
            self._schedule(pod, nodes)

    def _schedule(self, pod: dict[str, Any], nodes: list[dict[str, Any]]) -> None:
        spec = pod.get("spec") or {}
        selector = spec.get("nodeSelector") or {}
        selected = [n for n in nodes if matches(selector, labels_of(n))]
        pool = [n for n in selected if _tolerates(pod, n)]
        annotations = pod["metadata"].get("annotations") or {}
        fractional = any(k in annotations for k in FRACTION_KEYS)
        cond = self.config.condition
        eligible = [n for n in pool if not fractional or is_ready(n, cond)]
        if not pool:
            missed, tainted = len(nodes) - len(selected), len(selected)
            reasons = [kai.NO_MATCH] * missed + [kai.UNTOLERATED] * tainted
            self._unschedulable(pod, kai.fit_errors(reasons))
        elif not eligible:
            self._unschedulable(pod, kai.fit_errors(not_ready_message(n, cond) for n in pool))
        else:
            self._bind(pod, eligible[0]["metadata"]["name"])

    def _unschedulable(self, pod: dict[str, Any], message: str) -> None:
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("message") == message:
                return
        self._status(
            pod,
            {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": message,
                        "lastTransitionTime": STAMP,
                    }
                ],
            },
        )

    def _bind(self, pod: dict[str, Any], node: str) -> None:
        meta = pod["metadata"]
        self.kube.request(
            "POST",
            PODS.path(namespace=meta["namespace"], name=meta["name"], subresource="binding"),
            body={
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": meta["name"], "uid": meta["uid"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            },
        )

    def _status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.kube.patch(
            PODS,
            meta["name"],
            {"status": status},
            namespace=meta["namespace"],
            content_type=SMP,
            subresource="status",
        )

    def run(self, stop: threading.Event, interval: float = 0.1) -> None:
        """Reconcile until ``stop`` is set; transient API errors are retried."""
        while not stop.is_set():
            try:
                self.reconcile()
            except (Conflict, NotFound):
                pass  # raced with a delete or another writer; the next pass sees it
            except FracctlError:
                if stop.wait(0.5):
                    return
            stop.wait(interval)


class KaiSimulationThread:
    """Run the simulation in a background thread for the duration of a ``with`` block."""

    def __init__(self, kube: Kube, config: Config) -> None:
        self.standin = KaiSimulation(kube, config)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.standin.run, args=(self.stop,), daemon=True)

    def __enter__(self) -> KaiSimulation:
        self.thread.start()
        return self.standin

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
