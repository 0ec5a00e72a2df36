"""SIMULATION of the gpu-fractioning operator, for the sandbox and the tests.

This is not the operator. It does only what the real one visibly does to the API:

* adds its cleanup finalizer to the config object;
* after a short delay (the daemons starting) sets the readiness condition ``True``
  (reason ``AllDaemonsReady``) on every node the current ``nodeSelector`` matches, and
  removes it from nodes no longer matched;
* keeps the config's status conditions: ``Ready`` ``True`` (reason ``AllNodesReady``)
  once every selected node is ready, else ``False`` (``NodesNotReady``, naming them, or
  ``NoNodesSelected``), with ``observedGeneration``;
* keeps the node-agent DaemonSets it finds (``cluster.agent_daemonsets`` in
  ``cluster.agent_namespace``; it does not create them) in step with the config: their
  pod template selects the config's nodes. Standing in for the DaemonSet controller and
  the kubelets as well (neither runs in the sandbox), it writes their status: one pod
  scheduled per selected node, ready where the node's daemons are;
* on delete, removes the condition from the nodes it set it on, then releases the
  finalizer, so the object goes away (the DaemonSets then schedule nothing).

A node annotated ``sandbox.fracctl.io/simulate: never-ready`` never becomes ready: its
condition stays ``False`` with reason ``MPSDaemonCrashLoop``, as when mpsd cannot start.

Like the real operator (a controller-runtime manager with leader election on, as the
upstream chart installs it) it also leads: it renews its leader-election Lease
(``cluster.operator_lease`` in ``cluster.agent_namespace``) every couple of seconds, and,
standing in for the Deployment controller, keeps its Deployment
(``cluster.operator_deployment``) there with one available replica. When the simulation
stops, both stay as they were: the Deployment still says available (stale, as a real
one is for a while), and the Lease goes stale once its duration has passed.
"""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timezone
from typing import Any

from fracctl.config import Config
from fracctl.core.clock import Clock, SystemClock, utc_timestamp
from fracctl.core.doctor import DAEMONSETS
from fracctl.core.nodes import condition, labels_of, matches
from fracctl.core.resources import DEPLOYMENTS, LEASES, NODES
from fracctl.errors import Conflict, FracctlError, NotFound

NEVER_READY = "sandbox.fracctl.io/simulate"
SMP = "application/strategic-merge-patch+json"
LEASE_DURATION = 15  # seconds, controller-runtime's default
IMAGE = "fracctl.local/operator-simulation:1"  # names what runs: this simulation
MICROTIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def _never_ready(node: dict[str, Any]) -> bool:
    return (node["metadata"].get("annotations") or {}).get(NEVER_READY) == "never-ready"


def _names(nodes: list[dict[str, Any]]) -> list[str]:
    return sorted(n["metadata"]["name"] for n in nodes)


class OperatorSimulation:
    """Reconciles the config object and node conditions like the real operator."""

    def __init__(
        self,
        kube: Any,
        config: Config,
        *,
        delay: float = 1.0,
        clock: Clock | None = None,
        lease_duration: int = LEASE_DURATION,
    ) -> None:
        self.kube = kube
        self.config = config
        self.delay = delay
        self.clock = clock or SystemClock()
        self.ref = config.target.ref
        self._seen: dict[str, float] = {}  # node -> when first matched
        self.lease_duration = lease_duration
        self.identity = f"operator-sim_{uuid.uuid4()}"
        self._renewed_at: float | None = None  # monotonic time of the last renewal

    def lead(self) -> None:
        """Renew the leader-election Lease when due; keep the Deployment available."""
        now = self.clock.monotonic()
        renew_every = min(2.0, self.lease_duration / 3)
        if self._renewed_at is not None and now - self._renewed_at < renew_every:
            return
        k = self.config.cluster
        self.kube.ensure_namespace(k.agent_namespace)
        if k.operator_lease:
            self._renew(k.operator_lease, k.agent_namespace)
        self._deployment(k.operator_deployment, k.agent_namespace)
        self._renewed_at = now

    def _renew(self, name: str, namespace: str) -> None:
        stamp = datetime.fromtimestamp(self.clock.now(), timezone.utc).strftime(MICROTIME)
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease_duration,
            "renewTime": stamp,
        }
        lease = self.kube.get_or_none(LEASES, name, namespace)
        if lease is None:
            body = {"metadata": {"name": name}, "spec": {**spec, "acquireTime": stamp}}
            self.kube.create(LEASES, body, namespace=namespace)
            return
        if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            spec = {**spec, "acquireTime": stamp}
        self.kube.patch(LEASES, name, {"spec": spec}, namespace=namespace)

    def _deployment(self, name: str, namespace: str) -> None:
        deploy = self.kube.get_or_none(DEPLOYMENTS, name, namespace)
        if deploy is None:
            labels = {"app.kubernetes.io/name": "gpu-fractioning"}
            deploy = self.kube.create(
                DEPLOYMENTS,
                {
                    "metadata": {"name": name, "labels": labels},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {"containers": [{"name": "manager", "image": IMAGE}]},
                        },
                    },
                },
                namespace=namespace,
            )
        status = deploy.get("status") or {}
        if status.get("availableReplicas") == 1:
            return
        stamp = utc_timestamp()
        self.kube.patch(
            DEPLOYMENTS,
            name,
            {
                "status": {
                    "observedGeneration": deploy["metadata"].get("generation"),
                    "replicas": 1,
                    "readyReplicas": 1,
                    "availableReplicas": 1,
                    "updatedReplicas": 1,
                    "conditions": [
                        {
                            "type": "Available",
                            "status": "True",
                            "reason": "MinimumReplicasAvailable",
                            "message": "Deployment has minimum availability.",
                            "lastTransitionTime": stamp,
                            "lastUpdateTime": stamp,
                        }
                    ],
                }
            },
            namespace=namespace,
            subresource="status",
        )

    def reconcile(self) -> None:
        """One pass."""
        t = self.config.target
        cond = self.config.condition
        obj = self.kube.get_or_none(self.ref, t.name)
        nodes = self.kube.list(NODES)
        if obj is not None and not obj["metadata"].get("deletionTimestamp"):
            finalizers = obj["metadata"].get("finalizers") or []
            if t.finalizer not in finalizers:
                obj = self.kube.patch(
                    self.ref,
                    t.name,
                    {
                        "metadata": {
                            "finalizers": [*finalizers, t.finalizer],
                            "resourceVersion": obj["metadata"]["resourceVersion"],
                        }
                    },
                )
            selector = (obj.get("spec") or {}).get("nodeSelector") or {}
            now = self.clock.monotonic()
            selected: list[dict[str, Any]] = []
            started: list[dict[str, Any]] = []  # selected, and the daemons had time to start
            for node in nodes:
                name = node["metadata"]["name"]
                if matches(selector, labels_of(node)):
                    selected.append(node)
                    first = self._seen.setdefault(name, now)
                    if now - first >= self.delay:
                        started.append(node)
                else:
                    self._seen.pop(name, None)
                    if condition(node, cond) is not None:
                        self._clear(name, cond)
            ready = [n for n in started if not _never_ready(n)]
            # The DaemonSets and the config first: whoever sees a node ready sees them so.
            self._daemonsets(selector, len(selected), len(ready))
            self._set_status(obj, _names(selected), _names(ready))
            for node in started:
                self._set_ready(node, cond)
            return
        self._seen.clear()
        for node in nodes:
            if condition(node, cond) is not None:
                self._clear(node["metadata"]["name"], cond)
        self._daemonsets(None, 0, 0)
        if obj is not None:
            finalizers = [f for f in obj["metadata"].get("finalizers") or [] if f != t.finalizer]
            if len(finalizers) != len(obj["metadata"].get("finalizers") or []):
                self.kube.patch(
                    self.ref,
                    t.name,
                    {
                        "metadata": {
                            "finalizers": finalizers or None,
                            "resourceVersion": obj["metadata"]["resourceVersion"],
                        }
                    },
                )

    def _set_status(self, obj: dict[str, Any], selected: list[str], ready: list[str]) -> None:
        """The config's ``Ready`` condition, written only when it changes."""
        meta = obj["metadata"]
        generation = meta.get("generation")
        lagging = [n for n in selected if n not in ready]
        if not selected:
            status, reason = "False", "NoNodesSelected"
            message = "spec.nodeSelector matches no node"
        elif lagging:
            status, reason = "False", "NodesNotReady"
            message = (
                f"{len(ready)} of {len(selected)} selected node(s) ready; not ready: "
                + ", ".join(lagging)
            )
        else:
            status, reason = "True", "AllNodesReady"
            message = f"{len(ready)} of {len(selected)} selected node(s) ready"
        have = (obj.get("status") or {}).get("conditions") or []
        current: dict[str, Any] = next((c for c in have if c.get("type") == "Ready"), {})
        want = {"status": status, "reason": reason, "message": message}
        if (
            all(current.get(k) == v for k, v in want.items())
            and current.get("observedGeneration") == generation
        ):
            return
        since = current.get("lastTransitionTime") if current.get("status") == status else None
        stamp = since or utc_timestamp()
        self.kube.patch(
            self.ref,
            meta["name"],
            {
                "metadata": {"resourceVersion": meta["resourceVersion"]},
                "status": {
                    "observedGeneration": generation,
                    "conditions": [
                        {
                            "type": "Ready",
                            **want,
                            "observedGeneration": generation,
                            "lastTransitionTime": stamp,
                        }
                    ],
                },
            },
            subresource="status",
        )

    def _daemonsets(self, selector: dict[str, str] | None, desired: int, ready: int) -> None:
        """Keep the node-agent DaemonSets in step: template selector and status.

        ``selector`` None: no config (the pod template is left as it is).
        """
        k = self.config.cluster
        for name in k.agent_daemonsets:
            ds = self.kube.get_or_none(DAEMONSETS, name, k.agent_namespace)
            if ds is None:
                continue
            spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
            have = spec.get("nodeSelector") or {}
            if selector is not None and have != selector:
                # A merge patch merges maps: keys that go are set to null.
                patch = {**dict.fromkeys(have), **selector}
                ds = self.kube.patch(
                    DAEMONSETS,
                    name,
                    {"spec": {"template": {"spec": {"nodeSelector": patch}}}},
                    namespace=k.agent_namespace,
                )
            status = {
                "observedGeneration": ds["metadata"].get("generation"),
                "desiredNumberScheduled": desired,
                "currentNumberScheduled": desired,
                "updatedNumberScheduled": desired,
                "numberMisscheduled": 0,
                "numberReady": ready,
                "numberAvailable": ready,
                "numberUnavailable": desired - ready,
            }
            live = ds.get("status") or {}
            if all(live.get(key, 0) == value for key, value in status.items()):
                continue
            self.kube.patch(
                DAEMONSETS,
                name,
                {"status": status},
                namespace=k.agent_namespace,
                subresource="status",
            )

    def _set_ready(self, node: dict[str, Any], cond: str) -> None:
        """Set the node's condition as its daemons are."""
        broken = _never_ready(node)
        want = (
            ("False", "MPSDaemonCrashLoop", "mpsd: back-off restarting")
            if broken
            else (
                "True",
                "AllDaemonsReady",
                "all gpu-fractioning daemons are ready",
            )
        )
        have = condition(node, cond)
        if have and (have.get("status"), have.get("reason")) == want[:2]:
            return
        stamp = utc_timestamp()
        self.kube.patch(
            NODES,
            node["metadata"]["name"],
            {
                "status": {
                    "conditions": [
                        {
                            "type": cond,
                            "status": want[0],
                            "reason": want[1],
                            "message": want[2],
                            "lastHeartbeatTime": stamp,
                            "lastTransitionTime": stamp,
                        }
                    ]
                }
            },
            content_type=SMP,
            subresource="status",
        )

    def _clear(self, name: str, cond: str) -> None:
        self.kube.patch(
            NODES,
            name,
            {"status": {"conditions": [{"type": cond, "$patch": "delete"}]}},
            content_type=SMP,
            subresource="status",
        )

    def run(self, stop: threading.Event, *, interval: float = 0.3) -> None:
        """Reconcile until ``stop`` is set; transient API errors are retried."""
        while not stop.is_set():
            try:
                self.lead()
                self.reconcile()
            except (Conflict, NotFound):
                pass  # raced with a writer; the next pass sees the new state
            except FracctlError:
                if stop.wait(1.0):
                    return
            stop.wait(interval)


class SimulationThread:
    """Run the simulation in a background thread (tests)."""

    def __init__(self, sim: OperatorSimulation, *, interval: float = 0.2) -> None:
        self.sim = sim
        self.stop_event = threading.Event()
        self.thread = threading.Thread(
            target=sim.run, args=(self.stop_event,), kwargs={"interval": interval}, daemon=True
        )

    def __enter__(self) -> SimulationThread:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(timeout=10)
