"""The session's cluster behaves like one: real controllers, a real scheduler, KWOK nodes.

What the drain and the built-in kinds' procedures build on, observed on the real parts:
a PodDisruptionBudget's status follows its pods and the Eviction API honours it; a pod
stays Terminating for its grace period; deletes propagate (Background, Orphan); a
StatefulSet created again adopts the pods an orphaning delete left; the agents'
DaemonSet pods run on exactly the nodes the config selects and the readiness condition
follows them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import DAEMONSETS, NODES, PODS, ResourceRef
from fracctl.errors import ApiError
from fracctl.sandbox.agents import POD_SELECTOR, kwok_delays
from fracctl.sandbox.controllers import SLOW_DELETE
from fracctl.sandbox.operator_sim import OperatorSimulation, SimulationThread
from tests.support.helpers import Cluster
from tests.support.waiting import until

PDBS = ResourceRef("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
STATEFULSETS = ResourceRef("apps", "v1", "statefulsets", "StatefulSet", True)
FAST = kwok_delays(0)  # KWOK starts these pods at once


@pytest.fixture
def ns(cluster: Cluster) -> Iterator[str]:
    """A namespace of the test's own; its workloads are deleted by the test."""
    name = f"ctl-{uuid.uuid4().hex[:8]}"
    cluster.namespace(name)
    yield name


def running(kube: Any, ns: str, selector: str, count: int) -> list[dict[str, Any]]:
    pods = kube.list(PODS, namespace=ns, label_selector=selector)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    ready = [p for p in live if (p.get("status") or {}).get("phase") == "Running"]
    return ready if len(ready) == count and len(live) == count else []


def pod_body(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels, "annotations": dict(FAST)},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def workload(kind: str, name: str, labels: dict[str, str], replicas: int) -> dict[str, Any]:
    template = {"metadata": {"labels": labels, "annotations": dict(FAST)},
                "spec": {"terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip
    spec: dict[str, Any] = {"selector": {"matchLabels": labels}, "template": template}
    if kind == "StatefulSet":
        spec |= {"replicas": replicas, "serviceName": name, "podManagementPolicy": "Parallel"}
    elif kind == "Deployment":
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


def evict(cluster: Cluster, ns: str, pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return cluster.kube.request(
        "POST",
        PODS.path(namespace=ns, name=meta["name"], subresource="eviction"),
        body={
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": meta["name"], "namespace": ns},
            "deleteOptions": {"preconditions": {"uid": meta["uid"]}},
        },
    )


def test_a_budget_follows_its_pods_and_the_eviction_api_honours_it(
    cluster: Cluster, ns: str
) -> None:
    from fracctl.core.kube.resources import DEPLOYMENTS

    cluster.node("cpu-0")
    kube = cluster.kube
    labels = {"app": "web"}
    kube.create(DEPLOYMENTS, workload("Deployment", "web", labels, 2), namespace=ns)
    budget = {"metadata": {"name": "web"},
              "spec": {"minAvailable": 2, "selector": {"matchLabels": labels}}}  # fmt: skip
    kube.create(PDBS, budget, namespace=ns)
    try:
        pods = until("two web pods Running", lambda: running(kube, ns, "app=web", 2))

        def status(allowed: int) -> Callable[[], bool]:
            def probe() -> bool:
                got = kube.get(PDBS, "web", ns).get("status") or {}
                return got.get("currentHealthy") == 2 and got.get("disruptionsAllowed") == allowed

            return probe

        until("the budget counts two healthy pods, none to spare", status(0))
        with pytest.raises(ApiError) as refused:
            evict(cluster, ns, pods[0])
        assert refused.value.status.code == 429, refused.value.message
        assert "violate the pod's disruption budget" in refused.value.message
        assert (
            kube.get(PODS, pods[0]["metadata"]["name"], ns)["metadata"]["uid"]
            == (pods[0]["metadata"]["uid"])
        )

        kube.patch(PDBS, "web", {"spec": {"minAvailable": 1}}, namespace=ns)
        until("the budget allows one disruption", status(1))
        evict(cluster, ns, pods[0])
        gone = kube.get_or_none(PODS, pods[0]["metadata"]["name"], ns)
        assert gone is None or gone["metadata"].get("deletionTimestamp")
        until(
            "the budget spends the disruption",
            lambda: (kube.get(PDBS, "web", ns).get("status") or {}).get("disruptionsAllowed") == 0,
        )
    finally:
        kube.delete(DEPLOYMENTS, "web", ns)
        kube.delete(PDBS, "web", ns)


def test_a_pod_stays_terminating_for_its_grace_period_then_goes(cluster: Cluster, ns: str) -> None:
    cluster.node("cpu-0")
    kube = cluster.kube
    body = pod_body("slow", {"app": "slow"}, terminationGracePeriodSeconds=4)
    body["metadata"]["annotations"][SLOW_DELETE] = "1h"  # ignores SIGTERM: the whole grace
    kube.create(PODS, body, namespace=ns)
    until("the pod Running", lambda: running(kube, ns, "app=slow", 1))
    start = time.monotonic()
    kube.delete(PODS, "slow", ns)
    time.sleep(2.5)
    pod = kube.get(PODS, "slow", ns)
    assert pod["metadata"].get("deletionTimestamp"), "Terminating, not gone"
    assert pod["metadata"].get("deletionGracePeriodSeconds") == 4
    until("the pod gone", lambda: kube.get_or_none(PODS, "slow", ns) is None, timeout=15)
    # deletionTimestamp has whole seconds: KWOK may act up to a second before the 4.
    assert time.monotonic() - start >= 3.0


@pytest.mark.parametrize("propagation", ["Background", "Orphan"])
def test_deleting_a_daemonset_propagates_as_asked(
    cluster: Cluster, ns: str, propagation: str
) -> None:
    for name in ("n-0", "n-1"):
        cluster.node(name, labels={"pool": "ds"})
    kube = cluster.kube
    ds = workload("DaemonSet", "agent", {"app": "agent"}, 0)
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "ds"}
    kube.create(DAEMONSETS, ds, namespace=ns)
    pods = until("one agent pod per node", lambda: running(kube, ns, "app=agent", 2))
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["n-0", "n-1"]
    kube.delete(DAEMONSETS, "agent", ns, propagation=propagation)
    until("the DaemonSet gone", lambda: kube.get_or_none(DAEMONSETS, "agent", ns) is None)
    if propagation == "Background":
        until(
            "its pods gone", lambda: not kube.list(PODS, namespace=ns, label_selector="app=agent")
        )
        return
    time.sleep(3)  # the garbage collector had its chance
    left = kube.list(PODS, namespace=ns, label_selector="app=agent")
    assert sorted(p["metadata"]["uid"] for p in left) == sorted(p["metadata"]["uid"] for p in pods)
    assert all(not p["metadata"].get("ownerReferences") for p in left)
    for p in left:
        kube.delete(PODS, p["metadata"]["name"], ns, grace_period=0)


def test_a_statefulset_created_again_adopts_the_pods_an_orphaning_delete_left(
    cluster: Cluster, ns: str
) -> None:
    cluster.node("cpu-0")
    kube = cluster.kube
    body = workload("StatefulSet", "db", {"app": "db"}, 2)
    first = kube.create(STATEFULSETS, body, namespace=ns)
    try:
        before = until("two db pods Running", lambda: running(kube, ns, "app=db", 2))
        kube.delete(STATEFULSETS, "db", ns, propagation="Orphan")
        until("the StatefulSet gone", lambda: kube.get_or_none(STATEFULSETS, "db", ns) is None)
        second = kube.create(STATEFULSETS, body, namespace=ns)
        assert second["metadata"]["uid"] != first["metadata"]["uid"]

        def adopted() -> list[dict[str, Any]]:
            pods = kube.list(PODS, namespace=ns, label_selector="app=db")
            owners = [(p["metadata"].get("ownerReferences") or [{}])[0].get("uid") for p in pods]
            return pods if owners == [second["metadata"]["uid"]] * 2 else []

        after = until("both pods owned by the new StatefulSet", adopted)
        assert sorted(p["metadata"]["uid"] for p in after) == sorted(
            p["metadata"]["uid"] for p in before
        )
        assert all(
            cs.get("restartCount") == 0
            for p in after
            for cs in (p.get("status") or {}).get("containerStatuses") or []
        )
    finally:
        kube.delete(STATEFULSETS, "db", ns)


def agent_nodes(cluster: Cluster) -> list[str]:
    pods = cluster.kube.list(
        PODS, namespace=cluster.config.cluster.agent_namespace, label_selector=POD_SELECTOR
    )
    return sorted(
        {p["spec"].get("nodeName") for p in pods if not p["metadata"].get("deletionTimestamp")}
    )


def test_the_agents_run_on_exactly_the_selected_nodes_and_readiness_follows_them(
    cluster: Cluster,
) -> None:
    cond = cluster.config.condition
    cluster.node("rtx-0", gpu_class="rtx", opt_in=True)
    cluster.node("b200-0", gpu_class="b200", opt_in=True)
    cluster.node("h200-0", gpu_class="h200")
    cluster.runtime_class()
    cluster.target({cluster.config.labels.opt_in_key: cluster.config.labels.opt_in_value})
    kube = cluster.kube

    def ready(name: str) -> bool:
        c = condition(kube.get(NODES, name), cond)
        return bool(c and c.get("status") == "True")

    with SimulationThread(OperatorSimulation(kube, cluster.config, delay=0.2)):
        until("both selected nodes ready", lambda: ready("rtx-0") and ready("b200-0"))
        assert agent_nodes(cluster) == ["b200-0", "rtx-0"]
        assert condition(kube.get(NODES, "h200-0"), cond) is None
        for name in cluster.config.cluster.agent_daemonsets:
            ds = kube.get(DAEMONSETS, name, cluster.config.cluster.agent_namespace)
            owner = ds["metadata"]["ownerReferences"][0]
            assert owner["uid"] == cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
            assert (ds["status"]["desiredNumberScheduled"], ds["status"]["numberReady"]) == (2, 2)

        # An agent pod on b200-0 goes: the node loses readiness, then its replacement
        # (made by the DaemonSet controller, run by KWOK) brings it back.
        ns = cluster.config.cluster.agent_namespace
        (victim,) = [
            p for p in kube.list(PODS, namespace=ns, label_selector=POD_SELECTOR)
            if p["spec"]["nodeName"] == "b200-0" and "mpsd" in p["metadata"]["name"]
        ]  # fmt: skip
        seen: list[str] = []

        def lost() -> bool:
            c = condition(kube.get(NODES, "b200-0"), cond) or {}
            seen.append(str(c.get("status")))
            return c.get("status") == "False"

        kube.delete(PODS, victim["metadata"]["name"], ns, grace_period=0)
        until("b200-0 loses readiness", lost, timeout=10)
        until("b200-0 ready again", lambda: ready("b200-0"))
        assert ready("rtx-0")

        # The config goes: the garbage collector takes the DaemonSets and their pods.
        t = cluster.config.target
        kube.delete(t.ref, t.name)
        until("the config gone", lambda: cluster.live_target() is None)
        until(
            "the agents' DaemonSets gone",
            lambda: not kube.list(DAEMONSETS, namespace=ns),
        )
        assert condition(kube.get(NODES, "rtx-0"), cond) is None
