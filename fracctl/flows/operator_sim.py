"""SIMULATION of the gpu-fractioning operator, for the sandbox and the tests.

This is not the operator. It does only what the real one visibly does to the API:

* adds its cleanup finalizer to the config object;
* after a short delay (the daemons starting) sets the readiness condition ``True``
  (reason ``AllDaemonsReady``) on every node the current ``nodeSelector`` matches, and
  removes it from nodes no longer matched;
* on delete, removes the condition from the nodes it set it on, then releases the
  finalizer, so the object goes away.

A node annotated ``sandbox.fracctl.io/simulate: never-ready`` never becomes ready: its
condition stays ``False`` with reason ``MPSDaemonCrashLoop``, as when mpsd cannot start.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from typing import Any

from fracctl.config import Config
from fracctl.core.clock import Clock, SystemClock
from fracctl.core.nodes import condition, labels_of, matches
from fracctl.core.resources import NODES
from fracctl.errors import Conflict, FracctlError, NotFound

NEVER_READY = "sandbox.fracctl.io/simulate"
SMP = "application/strategic-merge-patch+json"


class OperatorSimulation:
    """Reconciles the config object and node conditions like the real operator."""

    def __init__(
        self, kube: Any, config: Config, *, delay: float = 1.0, clock: Clock | None = None
    ) -> None:
        self.kube = kube
        self.config = config
        self.delay = delay
        self.clock = clock or SystemClock()
        self.ref = config.target.ref
        self._seen: dict[str, float] = {}  # node -> when first matched

    def reconcile(self) -> None:
        """One pass."""
        t = self.config.target
        cond = self.config.condition
        obj = self.kube.get_or_none(self.ref, t.name)
        nodes = self.kube.list(NODES)
        if obj is not None and not obj["metadata"].get("deletionTimestamp"):
            finalizers = obj["metadata"].get("finalizers") or []
            if t.finalizer not in finalizers:
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
            selector = (obj.get("spec") or {}).get("nodeSelector") or {}
            now = self.clock.monotonic()
            for node in nodes:
                name = node["metadata"]["name"]
                if matches(selector, labels_of(node)):
                    first = self._seen.setdefault(name, now)
                    if now - first >= self.delay:
                        self._set_ready(node, cond)
                else:
                    self._seen.pop(name, None)
                    if condition(node, cond) is not None:
                        self._clear(name, cond)
            return
        self._seen.clear()
        for node in nodes:
            if condition(node, cond) is not None:
                self._clear(node["metadata"]["name"], cond)
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

    def _set_ready(self, node: dict[str, Any], cond: str) -> None:
        broken = (node["metadata"].get("annotations") or {}).get(NEVER_READY) == "never-ready"
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
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
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
