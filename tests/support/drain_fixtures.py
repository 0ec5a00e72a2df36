"""A busy cluster for the drain: fractional pods in PodGroups, whole-GPU and CPU pods.

On the shared control plane with its controllers and KWOK nodes: the incident (the live
config selects the two rtx-pro-6000 nodes, git the opt-in label), the operator and KAI
simulations running, KAI's Config in NvFractions mode, and Deployments whose pods KAI
(fractional ones) or kube-scheduler (the others) place and KWOK runs.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.doctor import KAI_CONFIG
from fracctl.core.drain import FENCE_REASON, POD_GROUP
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import CONFIGMAPS, DEPLOYMENTS, NODES, PDBS, PODS
from fracctl.errors import Conflict, FracctlError, NotFound
from fracctl.sandbox.agents import kwok_delays
from fracctl.sandbox.kai_sim import KaiSimulationThread
from fracctl.sandbox.seed import install_kai_config_crd
from tests.support.helpers import Cluster
from tests.support.recreate_fixtures import Incident, make_incident
from tests.support.waiting import until

FRACTION_NODES = ("rtx-pro-6000-0", "rtx-pro-6000-1")
JOURNAL = "fracctl-recreate-drain"  # the lock Lease's name, with -drain
LOCK_NS = "fracctl-test"


def deployment(name: str, labels: dict[str, str], replicas: int, **pod: Any) -> dict[str, Any]:
    annotations = {**kwok_delays(0), **pod.pop("annotations", {})}
    spec = {"terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "busybox", **pod.pop("container", {})}],
            **pod}  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec},
        },
    }


def ready_pods(kube: Kube, ns: str, selector: str) -> list[dict[str, Any]]:
    """The selected pods bound, Running and Ready (none terminating)."""
    out = []
    for p in kube.list(PODS, namespace=ns, label_selector=selector):
        conds = (p.get("status") or {}).get("conditions") or []
        ok = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
        if ok and not p["metadata"].get("deletionTimestamp") and p["spec"].get("nodeName"):
            out.append(p)
    return out


@dataclass
class Busy:
    """The busy cluster: where its workloads are, and what to read back."""

    incident: Incident
    ns: str
    groups: int
    per_group: int
    kai: Any = None

    @property
    def kube(self) -> Kube:
        return self.incident.cluster.kube

    def pods(self, selector: str) -> list[dict[str, Any]]:
        return self.kube.list(PODS, namespace=self.ns, label_selector=selector)

    def uids(self, selector: str) -> dict[str, str]:
        return {p["metadata"]["uid"]: p["metadata"]["name"] for p in self.pods(selector)}

    def fences(self) -> dict[str, str]:
        """Nodes whose readiness condition is a fracctl fence: name -> message."""
        cond = self.incident.cluster.config.condition
        out = {}
        for node in self.kube.list(NODES):
            c = condition(node, cond) or {}
            if c.get("reason") == FENCE_REASON:
                out[node["metadata"]["name"]] = str(c.get("message"))
        return out

    def journal(self) -> dict[str, Any] | None:
        return self.kube.get_or_none(CONFIGMAPS, JOURNAL, LOCK_NS)

    def budget(self, name: str, **spec: Any) -> None:
        body = {"metadata": {"name": name},
                "spec": {"selector": {"matchLabels": {"app": "frac"}}, **spec}}  # fmt: skip
        self.kube.create(PDBS, body, namespace=self.ns)

    def budget_settled(self, name: str, allowed: int) -> None:
        def settled() -> bool:
            b = self.kube.get(PDBS, name, self.ns)
            s = b.get("status") or {}
            return (
                s.get("observedGeneration") == b["metadata"]["generation"]
                and s.get("disruptionsAllowed") == allowed
            )

        until(f"budget {name} allows {allowed}", settled, timeout=30)


@dataclass
class EvictionWitness:
    """Every pod of a namespace the API server marked evicted (its DisruptionTarget
    condition, reason ``EvictionByEvictionAPI``), and every pod deleted, from a watch."""

    kube: Kube
    ns: str
    evicted: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self, resource_version: str) -> None:
        rv = resource_version
        while not self.stop.is_set():
            try:
                for kind, obj in self.kube.watch(PODS, namespace=self.ns, resource_version=rv,
                                                 timeout_seconds=2):  # fmt: skip
                    rv = obj["metadata"].get("resourceVersion") or rv
                    if kind == "BOOKMARK":
                        continue
                    uid = obj["metadata"]["uid"]
                    for c in (obj.get("status") or {}).get("conditions") or []:
                        if c.get("type") == "DisruptionTarget" and c.get("status") == "True":
                            if c.get("reason") == "EvictionByEvictionAPI":
                                self.evicted.add(uid)
                    if kind == "DELETED" or obj["metadata"].get("deletionTimestamp"):
                        self.deleted.add(uid)
            except FracctlError:
                continue


@contextlib.contextmanager
def witness(kube: Kube, ns: str) -> Iterator[EvictionWitness]:
    w = EvictionWitness(kube, ns)
    rv = kube.request("GET", PODS.path(namespace=ns), query={"limit": 1})["metadata"][
        "resourceVersion"
    ]
    t = threading.Thread(target=w.run, args=(rv,), daemon=True)
    t.start()
    try:
        yield w
    finally:
        w.stop.set()
        t.join(timeout=10)


def kai_config(kube: Kube, mode: str = "NvFractions") -> None:
    install_kai_config_crd(kube)
    body = {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"},
            "spec": {"global": {"gpuSharingMode": mode}}}  # fmt: skip
    try:
        kube.create(KAI_CONFIG, body)
    except Conflict:
        kube.patch(KAI_CONFIG, "kai-config", {"spec": {"global": {"gpuSharingMode": mode}}})


def remove_leftovers(kube: Kube) -> None:
    for ref, name, ns in ((CONFIGMAPS, JOURNAL, LOCK_NS), (KAI_CONFIG, "kai-config", None)):
        with contextlib.suppress(NotFound):
            kube.delete(ref, name, ns)


@contextlib.contextmanager
def busy_cluster(
    cluster: Cluster, root: Path, *, groups: int = 6, per_group: int = 4, budget: bool = True
) -> Iterator[Busy]:
    """The busy cluster, its simulations running for the ``with`` block; cleaned after."""
    kube = cluster.kube
    remove_leftovers(kube)
    incident = make_incident(cluster, root)
    cluster.node("rtx-pro-6000-1", gpu_class="rtx-pro-6000", opt_in=True)
    cluster.node("cpu-0")
    kai_config(kube)
    ns = cluster.namespace(f"busy-{uuid.uuid4().hex[:6]}")
    busy = Busy(incident, ns, groups, per_group)
    cond = cluster.config.condition
    try:
        with (
            incident.operator(),
            KaiSimulationThread(Kube.connect(kubeconfig=cluster.kubeconfig), cluster.config) as kai,
        ):
            busy.kai = kai

            def fraction_nodes_ready() -> bool:
                nodes = [kube.get(NODES, n) for n in FRACTION_NODES]
                return all((condition(n, cond) or {}).get("status") == "True" for n in nodes)

            until("both fraction nodes ready", fraction_nodes_ready, timeout=30)
            for i in range(groups):
                labels = {"app": "frac", "group": f"g{i}"}
                body = deployment(
                    f"frac-g{i}", labels, per_group, schedulerName="kai-scheduler",
                    annotations={"gpu-fraction": "0.25", POD_GROUP: f"g{i}"},
                    nodeSelector={"kubernetes.io/hostname": FRACTION_NODES[i % 2]},
                )  # fmt: skip
                kube.create(DEPLOYMENTS, body, namespace=ns)
            whole = deployment(
                "whole", {"app": "whole"}, 2,
                nodeSelector={cluster.config.labels.class_key: "rtx-pro-6000"},
                container={"resources": {"limits": {"nvidia.com/gpu": "1"}}},
            )  # fmt: skip
            kube.create(DEPLOYMENTS, whole, namespace=ns)
            cpu = deployment("cpu", {"app": "cpu"}, 2,
                             nodeSelector={"kubernetes.io/hostname": "cpu-0"})  # fmt: skip
            kube.create(DEPLOYMENTS, cpu, namespace=ns)
            total = groups * per_group
            until(f"{total} fractional pods ready",
                  lambda: len(ready_pods(kube, ns, "app=frac")) == total, timeout=60)  # fmt: skip
            until("whole-GPU and CPU pods ready",
                  lambda: len(ready_pods(kube, ns, "app in (whole,cpu)")) == 4)  # fmt: skip
            if budget:
                busy.budget("frac", minAvailable=0)
                busy.budget_settled("frac", total)
            yield busy
    finally:
        for d in kube.list(DEPLOYMENTS, namespace=ns):
            with contextlib.suppress(NotFound):
                kube.delete(DEPLOYMENTS, d["metadata"]["name"], ns)
        for b in kube.list(PDBS, namespace=ns):
            with contextlib.suppress(NotFound):
                kube.delete(PDBS, b["metadata"]["name"], ns)
        remove_leftovers(kube)


def admit_without_deleting(busy: Busy, names: list[str], at: float | None = None) -> None:
    """What a client killed mid-eviction leaves: the budget lists the pods as admitted
    (``status.disruptedPods``, at ``at`` or now), and they were never deleted."""
    from datetime import datetime, timezone

    when = datetime.fromtimestamp(time.time() if at is None else at, timezone.utc)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    busy.kube.patch(PDBS, "frac", {"status": {"disruptedPods": dict.fromkeys(names, stamp)}},
                    namespace=busy.ns, subresource="status",
                    content_type="application/merge-patch+json")  # fmt: skip
