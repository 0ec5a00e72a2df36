"""SIMULATION of the gpu-fractioning operator, for the sandbox and the tests.

This is not the operator. It does what the real one (kai-scheduler/gpu-fractioning,
``operator/internal/controller/gpufractioningconfig_controller.go``) visibly does to the
API, on a control plane whose DaemonSet controller, scheduler and KWOK nodes are real:

* adds its cleanup finalizer to the config object;
* creates the node agents' DaemonSets from the config (:mod:`.agents`: names, labels,
  the config's selector and tolerations, the config as controller owner) and keeps them
  in step; the DaemonSet controller makes their pods and KWOK runs them;
* sets the readiness condition on a node from the agent pods there: ``True``
  (``AllDaemonsReady``) once a Ready pod of every agent DaemonSet runs on it, else
  ``False`` with the operator's reason and message (``mpsd pod is not ready: Pending``);
  a node no longer selected loses the condition. As upstream, node conditions are
  written only while some selected node is not ready or on the pass after the config
  was not ready; in steady state a condition someone else wrote stands (a drain's
  fence). The real operator counts every
  ``managed-by`` pod on the node; the simulation counts only pods of the live
  DaemonSets that are not being deleted, so a node is not ready on an old pod's word;
* keeps the config's status conditions: ``Ready`` ``True`` (reason ``AllNodesReady``)
  once every selected node is ready, else ``False`` (``NodesNotReady``, naming them, or
  ``NoNodesSelected``), with ``observedGeneration``;
* on delete, removes the condition from the nodes it set it on, then releases the
  finalizer, so the object goes away, and the garbage collector deletes the DaemonSets
  it owned (and their pods).

A node annotated ``sandbox.fracctl.io/simulate: never-ready`` never becomes ready: where
agent pods run on it its condition is ``False`` with reason ``MPSDaemonCrashLoop``, as
when mpsd cannot start.

Like the real operator (a controller-runtime manager with leader election on, as the
upstream chart installs it) it also leads: it renews its leader-election Lease
(``cluster.operator_lease`` in ``cluster.agent_namespace``) every couple of seconds, and
keeps its Deployment (``cluster.operator_deployment``) there, whose pod the Deployment
controller and KWOK run. When the simulation stops, both stay as they were: the
Deployment still says available (as a real one does while its pod runs), and the Lease
goes stale once its duration has passed.
"""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timezone
from typing import Any

from fracctl.config import Config
from fracctl.core.clock import Clock, SystemClock, utc_timestamp
from fracctl.core.doctor import DAEMONSETS
from fracctl.core.kube.nodes import condition, labels_of, matches
from fracctl.core.kube.resources import DEPLOYMENTS, LEASES, NODES, PODS
from fracctl.errors import Conflict, FracctlError, NotFound
from fracctl.sandbox import agents
from fracctl.sandbox.node_conditions import clear_condition, set_condition

NEVER_READY = "sandbox.fracctl.io/simulate"
LEASE_DURATION = 15  # seconds, controller-runtime's default
IMAGE = "fracctl.local/operator-simulation:1"  # names what runs: this simulation
READY = ("True", "AllDaemonsReady", "all gpu-fractioning daemons are running")
CRASH_LOOP = ("False", "MPSDaemonCrashLoop", "mpsd: back-off restarting")
MICROTIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def _never_ready(node: dict[str, Any]) -> bool:
    return (node["metadata"].get("annotations") or {}).get(NEVER_READY) == "never-ready"


def _ready_status(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _names(nodes: list[dict[str, Any]]) -> list[str]:
    return sorted(n["metadata"]["name"] for n in nodes)


def _differs(have: dict[str, Any], want: dict[str, Any]) -> bool:
    """Whether the live DaemonSet's owner, labels or pod template differ from the rendering."""
    h_meta, w_meta = have.get("metadata") or {}, want["metadata"]
    h_tpl = (have.get("spec") or {}).get("template") or {}
    w_tpl = want["spec"]["template"]
    h_spec, w_spec = h_tpl.get("spec") or {}, w_tpl["spec"]
    return (
        agents.controller_uid(have) != w_meta["ownerReferences"][0]["uid"]
        or any((h_meta.get("labels") or {}).get(k) != v for k, v in w_meta["labels"].items())
        or any(h_spec.get(k) != w_spec.get(k) for k in ("nodeSelector", "tolerations"))
        or (h_tpl.get("metadata") or {}).get("annotations") != w_tpl["metadata"]["annotations"]
    )


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
        """Create the operator's Deployment unless it exists; its controller does the rest.

        Its pod tolerates every taint (it runs wherever a node has room) and KWOK starts
        it at once.
        """
        if self.kube.get_or_none(DEPLOYMENTS, name, namespace) is not None:
            return
        labels = {"app.kubernetes.io/name": "gpu-fractioning"}
        self.kube.create(
            DEPLOYMENTS,
            {
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels, "annotations": agents.kwok_delays(0)},
                        "spec": {
                            "tolerations": [{"operator": "Exists"}],
                            "terminationGracePeriodSeconds": 1,
                            "containers": [{"name": "manager", "image": IMAGE}],
                        },
                    },
                },
            },
            namespace=namespace,
        )

    def reconcile(self) -> None:
        """One pass."""
        t = self.config.target
        cond = self.config.condition
        obj = self.kube.get_or_none(self.ref, t.name)
        nodes = self.kube.list(NODES)
        if obj is not None and not obj["metadata"].get("deletionTimestamp"):
            obj = self._finalize(obj)
            selector = (obj.get("spec") or {}).get("nodeSelector") or {}
            live = self._daemonsets(obj)
            selected = [n for n in nodes if matches(selector, labels_of(n))]
            for node in nodes:
                if node not in selected and condition(node, cond) is not None:
                    clear_condition(self.kube, node["metadata"]["name"], cond)
            verdicts = self._verdicts(selected, live)
            ready = [name for name, v in verdicts.items() if v[0] == "True"]
            # Node conditions are written only while a daemon is not ready everywhere, or
            # on the pass after the config was not ready (upstream Reconcile's
            # `needsRequeue || wasUnhealthy`): in steady state a node is left alone.
            was_unhealthy = not _ready_status(obj)
            needs_requeue = len(ready) < len(selected)
            # The config first: whoever sees a node ready sees the config so.
            self._set_status(obj, _names(selected), sorted(ready))
            if not (was_unhealthy or needs_requeue):
                return
            for node in selected:
                verdict = verdicts.get(node["metadata"]["name"])
                if verdict is not None:
                    set_condition(self.kube, node, cond, verdict)
            return
        for node in nodes:
            if condition(node, cond) is not None:
                clear_condition(self.kube, node["metadata"]["name"], cond)
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

    def _finalize(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The config with the operator's cleanup finalizer on it."""
        t = self.config.target
        finalizers = obj["metadata"].get("finalizers") or []
        if t.finalizer in finalizers:
            return obj
        return dict(
            self.kube.patch(
                self.ref,
                t.name,
                {
                    "metadata": {
                        "finalizers": [*finalizers, t.finalizer],
                        "resourceVersion": obj["metadata"]["resourceVersion"],
                    }
                },
            )
        )

    def _daemonsets(self, obj: dict[str, Any]) -> dict[str, str]:
        """Create or update the agents' DaemonSets; the uids of those ``obj`` controls.

        A DaemonSet another config still controls is left to the garbage collector (the
        real operator's CreateOrUpdate fails on it until it is gone).
        """
        k = self.config.cluster
        self.kube.ensure_namespace(k.agent_namespace)
        uid = obj["metadata"]["uid"]
        live: dict[str, str] = {}
        for name in k.agent_daemonsets:
            want = agents.daemonset(name, k.agent_namespace, obj, delay=self.delay)
            have = self.kube.get_or_none(DAEMONSETS, name, k.agent_namespace)
            if have is None:
                have = self.kube.create(DAEMONSETS, want, namespace=k.agent_namespace)
            elif agents.controller_uid(have) not in (None, uid):
                continue
            elif _differs(have, want):
                body = {**have, "spec": {**have["spec"], "template": want["spec"]["template"]}}
                body["metadata"] = {
                    **have["metadata"],
                    "labels": {
                        **(have["metadata"].get("labels") or {}),
                        **want["metadata"]["labels"],
                    },
                    "ownerReferences": want["metadata"]["ownerReferences"],
                }
                have = self.kube.replace(DAEMONSETS, body)
            live[name] = str(have["metadata"]["uid"])
        return live

    def _verdicts(
        self, selected: list[dict[str, Any]], live: dict[str, str]
    ) -> dict[str, tuple[str, str, str]]:
        """The condition each selected node with agent pods gets: (status, reason, message)."""
        k = self.config.cluster
        pods = self.kube.list(PODS, namespace=k.agent_namespace, label_selector=agents.POD_SELECTOR)
        owners = set(live.values())
        by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            current = agents.controller_uid(pod) in owners
            if node and current and not pod["metadata"].get("deletionTimestamp"):
                by_node.setdefault(node, []).append(pod)
        verdicts: dict[str, tuple[str, str, str]] = {}
        for node in selected:
            name = node["metadata"]["name"]
            here = by_node.get(name)
            if not here:
                continue  # no agent pod yet: the operator's pass never visits the node
            if _never_ready(node):
                verdicts[name] = CRASH_LOOP
                continue
            lagging = [p for p in here if not agents.pod_ready(p)]
            if lagging:
                pod = lagging[0]
                reason = agents.failure_reason(pod)
                component = (pod["metadata"].get("labels") or {}).get(agents.COMPONENT, "")
                verdicts[name] = ("False", reason, f"{component} pod is not ready: {reason}")
            elif {agents.controller_uid(p) for p in here} >= owners and owners:
                verdicts[name] = READY
        return verdicts

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
