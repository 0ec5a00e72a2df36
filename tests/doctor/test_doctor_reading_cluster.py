"""doctor's scan-based pod reading, held to the full-object reading on the real API server.

The flow reads pods through the paged protobuf scan, each cut down to the fields the
checks read, and keeps only those a check looks at. Here the same pods are also read
whole, as JSON, the way doctor read them before, and both snapshots must give the same
report; and every pod's picked fields must be exactly its JSON cut to those fields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube, podpage, podpage_json
from fracctl.core.doctor import DAEMONSETS, Snapshot, diagnose, gpu_nodes, model
from fracctl.core.doctor.helpers import fractions_of
from fracctl.core.doctor.model import NAMESPACE_POD_FIELDS, SCAN_POD_FIELDS
from fracctl.core.fractions.fractional import PodKind, classify, unfinished_selector
from fracctl.core.kube.resources import NODES, PODS
from fracctl.flows.context import Context
from fracctl.flows.doctor import settings, snapshot
from fracctl.flows.doctor.pods import StrayPod
from tests.support.helpers import Cluster

ML, WEB = "rd-ml", "rd-web"
RESERVATION, AGENTS = "kai-resource-reservation", "gpu-fractioning"
GPU = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.memory": "97887"}
STAMP = "2026-03-01T10:00:00Z"


@pytest.fixture
def cluster(api_only: Cluster) -> Cluster:
    """What fracctl reads is planted as written: on an API server without controllers."""
    return api_only


def _context(cluster: Cluster, **cluster_changes: Any) -> Context:
    base = cfg.Config()
    config = dataclasses.replace(
        base,
        kube=cfg.KubeConfig(kubeconfig=cluster.kubeconfig),
        cluster=dataclasses.replace(base.cluster, **cluster_changes),
        pods=dataclasses.replace(base.pods, page_size=3),  # several pages, even here
    )
    return Context(config=config, kube_factory=lambda: Kube.connect(kubeconfig=cluster.kubeconfig))


def _pod(cluster: Cluster, ns: str, name: str, spec: dict[str, Any], **meta: Any) -> None:
    cluster.namespace(ns)
    status = meta.pop("status", None)
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, **meta}}
    containers = spec.pop("containers", None) or [{"name": "main", "image": "busybox:1.36"}]
    cluster.kube.create(PODS, {**body, "spec": {"containers": containers, **spec}})
    if status is not None:
        cluster.kube.patch(PODS, name, {"status": status}, namespace=ns, subresource="status")


def _state(name: str, **state: Any) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": 3, "image": "busybox:1.36",
            "imageID": "", **state}  # fmt: skip


def _seed(cluster: Cluster) -> None:
    for i in range(3):
        cluster.node(f"rd-gpu-{i}", labels=GPU, gpu_class="b200", opt_in=i != 2)
    cluster.node("rd-cpu-0")
    root = {"securityContext": {"runAsUser": 0}}
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/4 nodes are available: node is not ready for fractional GPU "
                                "scheduling", "lastTransitionTime": STAMP}  # fmt: skip
    # Fractional pods: Pending with the scheduler's word, as root, placed and non-root.
    _pod(cluster, ML, "frac-pending", {"schedulerName": "kai-scheduler"},
         annotations={"gpu-fraction": "0.5", "note": "ü ✓"},
         status={"phase": "Pending", "conditions": [unschedulable]})  # fmt: skip
    _pod(cluster, ML, "frac-root",
         {"nodeName": "rd-gpu-0", "initContainers": [{"name": "init", "image": "busybox:1.36",
                                                      "securityContext": {"runAsNonRoot": False}}],
          "containers": [{"name": "main", "image": "busybox:1.36", **root},
                         {"name": "side", "image": "busybox:1.36"}]},
         annotations={"nvidia.com/container.main.gpu-memory.request": "8192"},
         status={"phase": "Running"})  # fmt: skip
    _pod(cluster, ML, "frac-ok",
         {"nodeName": "rd-gpu-1", "securityContext": {"runAsNonRoot": True, "runAsUser": 1000}},
         annotations={"received-resource-type": "Fraction", "gpu-memory": "4096"},
         status={"phase": "Running"})  # fmt: skip
    _pod(cluster, ML, "frac-done", {"nodeName": "rd-gpu-1"},
         annotations={"gpu-fraction": "0.25"}, status={"phase": "Succeeded"})  # fmt: skip
    # Pods on GPU nodes: CPU only (reported), a GPU, a zero GPU (reported), a DaemonSet's.
    cpu = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    _pod(cluster, WEB, "cpu-on-gpu",
         {"nodeName": "rd-gpu-0", "containers": [{"name": "web", "image": "nginx:1.27",
                                                  "resources": cpu}]},
         labels={"app": "web"}, status={"phase": "Running"})  # fmt: skip
    one, zero = {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "0"}
    _pod(cluster, WEB, "gpu-on-gpu",
         {"nodeName": "rd-gpu-1", "containers": [{"name": "cuda", "image": "cuda:12",
                                                  "resources": {"limits": one}}]},
         status={"phase": "Running"})  # fmt: skip
    _pod(cluster, WEB, "zero-gpu",
         {"nodeName": "rd-gpu-2", "initContainers": [
             {"name": "warm", "image": "busybox:1.36",
              "resources": {"requests": zero, "limits": zero}}]},
         status={"phase": "Pending"})  # fmt: skip
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "node-exporter",
             "uid": "00000000-0000-4000-8000-000000000001", "controller": True}  # fmt: skip
    _pod(cluster, WEB, "exporter", {"nodeName": "rd-gpu-2"}, ownerReferences=[owner],
         status={"phase": "Running"})  # fmt: skip
    _pod(cluster, WEB, "cpu-on-cpu", {"nodeName": "rd-cpu-0"}, status={"phase": "Running"})
    _pod(cluster, WEB, "unplaced", {})
    # KAI's reservation pods: one failed on NVML (finished: still read), one crash-looping.
    why = "unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND"
    nvml = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": STAMP,
                           "finishedAt": STAMP, "message": why}}  # fmt: skip
    _pod(cluster, RESERVATION, "gpu-reservation-a", {"nodeName": "rd-gpu-0"},
         annotations={"gpu-fraction": "1"},
         status={"phase": "Failed",
                 "containerStatuses": [_state("main", state=nvml)]})  # fmt: skip
    looping = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}}
    _pod(cluster, RESERVATION, "gpu-reservation-b",
         {"nodeName": "rd-gpu-1"},
         status={"phase": "Running", "containerStatuses": [
             _state("main", state=looping, lastState=nvml)]})  # fmt: skip
    # The node agents' pods: one ready, one not.
    mpsd = {"app.kubernetes.io/component": "mpsd"}
    ready = [{"type": "Ready", "status": "True", "lastTransitionTime": STAMP}]
    _pod(cluster, AGENTS, "mpsd-a", {"nodeName": "rd-gpu-0"}, labels=mpsd,
         status={"phase": "Running", "conditions": ready,
                 "containerStatuses": [
                     _state("mpsd", state={"running": {"startedAt": STAMP}})]})  # fmt: skip
    _pod(cluster, AGENTS, "mpsd-b", {"nodeName": "rd-gpu-1"}, labels=mpsd,
         status={"phase": "Running",
                 "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                                 "lastTransitionTime": STAMP}],
                 "initContainerStatuses": [_state("probe", state={"waiting": {}})],
                 "containerStatuses": [
                     _state("mpsd", state={"waiting": {"reason": "ErrImagePull"}})]})  # fmt: skip


@pytest.fixture
def agents(cluster: Cluster) -> Iterator[None]:
    """The mpsd DaemonSet, one of its two pods ready: its check reads the agents' pods."""
    cluster.namespace(AGENTS)
    name = cfg.Config().cluster.agent_daemonsets[0]
    labels = {"app.kubernetes.io/component": "mpsd"}
    template = {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "mpsd", "image": "mpsd:af0544e"}]}}  # fmt: skip
    cluster.kube.create(DAEMONSETS, {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": AGENTS},
        "spec": {"selector": {"matchLabels": labels}, "template": template}})  # fmt: skip
    status = {"desiredNumberScheduled": 2, "currentNumberScheduled": 2,
              "numberMisscheduled": 0, "numberReady": 1}  # fmt: skip
    cluster.kube.patch(DAEMONSETS, name, {"status": status}, namespace=AGENTS,
                       subresource="status")  # fmt: skip
    try:
        yield
    finally:
        cluster.kube.delete(DAEMONSETS, name, AGENTS)


def _whole(ctx: Context, snap: Snapshot) -> Snapshot:
    """The same snapshot with its pods read whole, as JSON, the way doctor read them before."""
    s = settings(ctx)
    kube = ctx.kube
    m = fractions_of(snap, s).matcher
    gpus = {n["metadata"]["name"] for n in gpu_nodes(snap.nodes, s)}
    pods: list[Mapping[str, Any]] = list(kube.list(PODS, namespace=s.pods.reservation_namespace))
    for pod in kube.list(PODS, field_selector=unfinished_selector(), limit=3):
        meta = pod.get("metadata") or {}
        if meta.get("namespace") == s.pods.reservation_namespace:
            continue
        kind = classify(meta, m, reservation_namespace=s.pods.reservation_namespace).kind
        node = (pod.get("spec") or {}).get("nodeName")
        if kind is not PodKind.OTHER or node in gpus or not node:
            pods.append(pod)
    agents = list(kube.list(PODS, namespace=s.cluster.agent_namespace))
    return dataclasses.replace(snap, pods=pods, agent_pods=agents, strays_unlisted=0)


@pytest.mark.parametrize("taint_required", [True, False])
def test_the_scan_gives_the_report_the_whole_pods_give(
    cluster: Cluster, agents: None, taint_required: bool
) -> None:
    _seed(cluster)
    ctx = _context(cluster, gpu_taint_required=taint_required)
    s = settings(ctx)
    scanned = snapshot(ctx, s)
    whole = _whole(ctx, scanned)
    got, want = diagnose(scanned, s).to_dict(), diagnose(whole, s).to_dict()
    assert got == want
    by_check = {f["check"]: f for f in got["findings"]}
    # The seeded faults are all seen, so the comparison is not between two empty reports.
    assert set(by_check["pending-fractional-pods"]["subjects"]) == {f"{ML}/frac-pending"}
    assert set(by_check["fractional-pods-non-root"]["subjects"]) == {
        f"{ML}/frac-root",
        f"{ML}/frac-pending",  # no securityContext at all
    }
    assert set(by_check["reservation-pods"]["subjects"]) == {
        "gpu-reservation-a",
        "gpu-reservation-b",
    }
    assert any("ErrImagePull" in e for f in got["findings"] for e in f["evidence"])
    strays = {f"{WEB}/cpu-on-gpu", f"{WEB}/zero-gpu"}
    if taint_required:
        assert set(by_check["gpu-nodes-for-gpu-pods"]["subjects"]) == strays
        assert {p.get("metadata", {}).get("name") for p in scanned.pods
                if isinstance(p, StrayPod)} == {"cpu-on-gpu", "zero-gpu"}  # fmt: skip
    else:
        assert "gpu-nodes-for-gpu-pods" not in by_check
        assert not any(isinstance(p, StrayPod) for p in scanned.pods)
    # Only what a check looks at is kept: no CPU-node pod, no GPU pod, no DaemonSet pod.
    kept = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in scanned.pods}
    assert kept.isdisjoint({f"{WEB}/cpu-on-cpu", f"{WEB}/gpu-on-gpu", f"{WEB}/exporter"})
    ctx.close()


def test_beyond_what_a_finding_lists_the_scan_counts_and_reports_the_same(
    cluster: Cluster, agents: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 14 CPU pods on GPU nodes and a finding that lists 11: the scan keeps 11 and counts 3,
    # the whole reading keeps all 14, and the finding they make is one.
    _seed(cluster)
    for i in range(12):
        _pod(cluster, WEB, f"more-{i:02d}", {"nodeName": "rd-gpu-1"}, status={"phase": "Running"})
    monkeypatch.setattr(model, "LISTED", 11)
    ctx = _context(cluster)
    s = settings(ctx)
    scanned = snapshot(ctx, s)
    assert sum(isinstance(p, StrayPod) for p in scanned.pods) == 11
    assert scanned.strays_unlisted == 3
    got, want = diagnose(scanned, s).to_dict(), diagnose(_whole(ctx, scanned), s).to_dict()
    assert got == want
    (f,) = [f for f in got["findings"] if f["check"] == "gpu-nodes-for-gpu-pods"]
    assert f["symptom"].startswith("14 pod(s)") and len(f["subjects"]) == 11
    assert f["unlisted"] == 3
    ctx.close()


@pytest.mark.parametrize("paths", [SCAN_POD_FIELDS, NAMESPACE_POD_FIELDS])
def test_each_pods_picked_fields_are_its_json_cut_to_them(
    cluster: Cluster, paths: tuple[str, ...]
) -> None:
    _seed(cluster)
    pick = podpage.compile_pod(paths)
    whole = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
             for p in cluster.kube.list(PODS)}  # fmt: skip
    picked = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": p
        for page in cluster.kube.picked_pod_pages(pick, limit=4)
        for p in page.pods
    }
    assert picked.keys() == whole.keys()
    for key, pod in picked.items():
        assert pod == podpage_json.prune(whole[key], pick), key
    # What the checks read is there, with the JSON's types.
    assert picked[f"{ML}/frac-root"]["spec"]["containers"][0]["securityContext"] == {"runAsUser": 0}
    assert picked[f"{ML}/frac-root"]["spec"]["initContainers"][0]["securityContext"] == {
        "runAsNonRoot": False
    }
    assert picked[f"{WEB}/cpu-on-gpu"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"memory": "1Gi"},
    }
    assert picked[f"{WEB}/exporter"]["metadata"]["ownerReferences"] == [{"kind": "DaemonSet"}]
    assert picked[f"{ML}/frac-pending"]["metadata"]["annotations"]["note"] == "ü ✓"
    assert "managedFields" not in picked[f"{ML}/frac-ok"]["metadata"]


def test_a_json_answer_is_cut_to_the_same_fields(cluster: Cluster) -> None:
    _seed(cluster)
    pick = podpage.compile_pod(NAMESPACE_POD_FIELDS)
    page = cluster.kube.request("GET", PODS.path(namespace=RESERVATION))
    from_json = podpage_json.pod_page_json(page, pick).pods
    walked = [
        p for pg in cluster.kube.picked_pod_pages(pick, namespace=RESERVATION) for p in pg.pods
    ]
    assert sorted(from_json, key=str) == sorted(walked, key=str)
    assert len(walked) == 2


def test_nodes_are_still_read_whole(cluster: Cluster) -> None:
    _seed(cluster)
    ctx = _context(cluster)
    snap = snapshot(ctx, settings(ctx))
    assert {n["metadata"]["name"] for n in snap.nodes} == {
        n["metadata"]["name"] for n in cluster.kube.list(NODES)
    }
    ctx.close()


def test_gpu_pods_waiting_for_a_node_are_read_with_their_tolerations(
    cluster: Cluster, agents: None
) -> None:
    taint = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    for i in range(2):
        cluster.node(f"rd-gpu-{i}", labels=GPU, gpu_class="b200", opt_in=True, taints=taint)
    gpu = {"limits": {"nvidia.com/gpu": "1"}}
    tolerate = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    _pod(cluster, ML, "whole-untolerated",
         {"containers": [{"name": "cuda", "image": "cuda:12", "resources": gpu}]},
         status={"phase": "Pending"})  # fmt: skip
    _pod(cluster, ML, "whole-tolerated",
         {"tolerations": tolerate,
          "containers": [{"name": "cuda", "image": "cuda:12", "resources": gpu}]},
         status={"phase": "Pending"})  # fmt: skip
    _pod(cluster, ML, "frac-untolerated", {}, annotations={"gpu-fraction": "0.5"},
         status={"phase": "Pending"})  # fmt: skip
    _pod(cluster, WEB, "cpu-unplaced", {}, status={"phase": "Pending"})
    ctx = _context(cluster, gpu_taint_required=True)
    s = settings(ctx)
    scanned = snapshot(ctx, s)
    got, want = diagnose(scanned, s).to_dict(), diagnose(_whole(ctx, scanned), s).to_dict()
    assert got == want
    (f,) = [f for f in got["findings"] if f["check"] == "gpu-pods-tolerate-gpu-taint"]
    assert set(f["subjects"]) == {f"{ML}/whole-untolerated", f"{ML}/frac-untolerated"}
    assert f"{ML}/whole-untolerated asks for nvidia.com/gpu; tolerations name no " in (
        f["evidence"][1] if "whole" in f["evidence"][1] else f["evidence"][0]
    )
    # Only what a check looks at is kept: a CPU pod waiting for a node is not.
    kept = {p["metadata"]["name"] for p in scanned.pods}
    assert "cpu-unplaced" not in kept and "whole-tolerated" in kept
    ctx.close()
