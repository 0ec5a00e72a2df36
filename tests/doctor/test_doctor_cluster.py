"""``fracctl doctor`` against the real API server: a healthy setup, then each fault alone."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.core.doctor import CHECK_IDS, DAEMONSETS, DEPLOYMENTS, KAI_CONFIG, RUNTIME_CLASSES
from fracctl.core.fractions.crd import kai_config_crd
from fracctl.core.kube.resources import CRDS, EVENTS, NODES, PODS
from fracctl.errors import ApiError, Conflict, ExitCode, NotFound
from fracctl.flows.context import Context
from fracctl.flows.doctor import doctor
from tests.support.helpers import SMP, Cluster, run_cli
from tests.support.waiting import until

AGENTS = "gpu-fractioning"
SCHEDULER = "kai-scheduler"
RESERVATION = "kai-resource-reservation"
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.memory": "97887"}
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
NON_ROOT = {"runAsNonRoot": True, "runAsUser": 1000}
IMAGE = "registry.example.org/kai-gpu-fractioning/{}:af0544e"


# --- KAI's Config CRD: not part of the session's control plane ---------------------------


@pytest.fixture(scope="module")
def kai_crd(control_plane: Any) -> Iterator[None]:
    kube = Kube.connect(kubeconfig=control_plane.kubeconfig)
    try:
        kube.create(CRDS, kai_config_crd())
    except Conflict:
        pass
    deadline = time.monotonic() + 30
    while True:
        try:
            kube.list(KAI_CONFIG)
            break
        except ApiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    try:
        yield
    finally:
        try:
            kube.delete(CRDS, "configs.kai.scheduler")
        except NotFound:
            pass
        kube.close()


# --- the healthy setup ---------------------------------------------------------------


def _delete_all(kube: Kube, ref: Any, namespace: str | None = None) -> None:
    for obj in kube.list(ref, namespace=namespace):
        try:
            kube.delete(ref, obj["metadata"]["name"], namespace, grace_period=0)
        except NotFound:
            pass


@pytest.fixture
def setup(cluster: Cluster, kai_crd: None) -> Iterator[Setup]:
    s = Setup(cluster)
    s.wipe()
    try:
        yield s
    finally:
        s.wipe()


@dataclasses.dataclass
class Setup:
    """Builders for the objects doctor reads; :meth:`healthy` makes a healthy cluster."""

    cluster: Cluster

    @property
    def kube(self) -> Kube:
        return self.cluster.kube

    def wipe(self) -> None:
        kube = self.kube
        _delete_all(kube, RUNTIME_CLASSES)
        _delete_all(kube, KAI_CONFIG)
        for ns in (AGENTS, SCHEDULER):
            _delete_all(kube, DAEMONSETS, ns)
            _delete_all(kube, DEPLOYMENTS, ns)
        for ns in ("ml", AGENTS, RESERVATION):
            _delete_all(kube, EVENTS, ns)
            _delete_all(kube, PODS, ns)

    def gpu_node(self, name: str, gpu_class: str, *, opt_in: bool, **changes: Any) -> None:
        labels = {**GPU, **changes.pop("labels", {})}
        for key in changes.pop("without", ()):
            labels.pop(key)
        taints = changes.pop("taints", [TAINT])
        # The test plays the kubelets: the pods' statuses below are the faults it injects.
        self.cluster.node(
            name, gpu_class=gpu_class, opt_in=opt_in, labels=labels, taints=taints, kwok=False
        )
        if opt_in:
            self.cluster.set_ready(name, changes.pop("ready", True), changes.pop("reason", None))

    def daemonset(self, name: str, component: str, *, image: str, ready: int = 2) -> None:
        self.cluster.namespace(AGENTS)
        labels = {"app.kubernetes.io/component": component}
        self.kube.create(
            DAEMONSETS,
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": name, "namespace": AGENTS},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "nodeSelector": {"example.org/gpu-fractions": "enabled"},
                            "tolerations": TOLERATE,
                            "containers": [{"name": component, "image": image}],
                        },
                    },
                },
            },
        )
        # The DaemonSet controller makes a pod per selected node and the scheduler binds
        # it; the test, playing the kubelets, reports the first ``ready`` of them Ready
        # (in node order: rtx-pro-6000-0, then b200-0).
        pods = self.agent_pods(component, count=2)
        up = {"phase": "Running", "podIP": "10.240.0.9",
              "conditions": [{"type": "Ready", "status": "True"}]}  # fmt: skip
        for pod in pods[:ready]:
            self.kubelet_reports(pod, up)

        def counted() -> bool:
            status = self.kube.get(DAEMONSETS, name, AGENTS).get("status") or {}
            return (status.get("desiredNumberScheduled"), status.get("numberReady")) == (2, ready)

        until(f"DaemonSet {name} to count {ready} ready pod(s)", counted)

    def agent_pods(self, component: str, *, count: int) -> list[dict[str, Any]]:
        """The DaemonSet's pods once all ``count`` are bound, rtx-pro-6000-0's first."""

        owner = self.kube.get(DAEMONSETS, f"gpu-fractioning-{component}", AGENTS)["metadata"]

        def bound() -> list[dict[str, Any]]:
            pods = self.kube.list(
                PODS, namespace=AGENTS, label_selector=f"app.kubernetes.io/component={component}"
            )
            placed = [
                p for p in pods
                if (p.get("spec") or {}).get("nodeName")
                and not p["metadata"].get("deletionTimestamp")
                and [r.get("uid") for r in p["metadata"].get("ownerReferences") or []]
                == [owner["uid"]]
            ]  # fmt: skip
            return placed if len(placed) == count else []

        try:
            pods = until(f"{count} {component} pods bound", bound)
        except AssertionError:
            seen = [
                (
                    p["metadata"]["name"],
                    p["spec"].get("nodeName"),
                    p["metadata"].get("ownerReferences"),
                    (p.get("status") or {}).get("conditions"),
                )
                for p in self.kube.list(PODS, namespace=AGENTS)
            ]
            ds = self.kube.get(DAEMONSETS, f"gpu-fractioning-{component}", AGENTS)
            raise AssertionError(
                f"pods: {seen}; ds: {ds['metadata']['uid']} {ds.get('status')}"
            ) from None
        return sorted(pods, key=lambda p: p["spec"]["nodeName"] != "rtx-pro-6000-0")

    def kubelet_reports(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        """Write ``status`` as the pod's kubelet would."""
        meta = pod["metadata"]
        self.kube.patch(PODS, meta["name"], {"status": status}, namespace=meta["namespace"],
                        subresource="status", content_type=SMP)  # fmt: skip

    def deployment(self, namespace: str, name: str, image: str) -> None:
        self.cluster.namespace(namespace)
        labels = {"app": name}
        self.kube.create(
            DEPLOYMENTS,
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            # System workloads run on the system node, as on a real cluster.
                            "nodeSelector": {"kubernetes.io/hostname": "cpu-0"},
                            "containers": [{"name": name, "image": image}],
                        },
                    },
                },
            },
        )

    def pod(
        self,
        namespace: str,
        name: str,
        *,
        spec: dict[str, Any],
        annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        status: dict[str, Any] | None = None,
    ) -> None:
        self.cluster.namespace(namespace)
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": annotations or {}, "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec},
        }  # fmt: skip
        self.kube.create(PODS, body)
        self.kube.patch(PODS, name, {"status": status or {"phase": "Running"}},
                        namespace=namespace, subresource="status", content_type=SMP)  # fmt: skip

    def kai_config(self, mode: str = "NvFractions") -> None:
        self.kube.create(
            KAI_CONFIG,
            {
                "apiVersion": "kai.scheduler/v1",
                "kind": "Config",
                "metadata": {"name": "kai-config"},
                "spec": {"global": {"gpuSharingMode": mode}},
            },
        )

    def target_status(self, ready: str = "True", reason: str = "AllNodesReady") -> None:
        ref = self.cluster.config.target.ref
        cond = {"type": "Ready", "status": ready, "reason": reason, "message": "test",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
        self.kube.patch(ref, "default", {"status": {"conditions": [cond]}}, subresource="status")

    def healthy(self, *, skip: tuple[str, ...] = (), **faults: Any) -> None:
        """Everything doctor checks, healthy; ``skip`` leaves a part out."""
        self.gpu_node("rtx-pro-6000-0", "rtx-pro-6000", opt_in=True, **faults.get("rtx", {}))
        self.gpu_node("b200-0", "b200", opt_in=True, **faults.get("b200", {}))
        self.gpu_node("h200-0", "h200", opt_in=False)
        self.cluster.node("cpu-0", kwok=False)
        if "runtime-class" not in skip:
            self.kube.create(
                RUNTIME_CLASSES,
                {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                 "metadata": {"name": "nvidia"}, "handler": "nvidia"},
            )  # fmt: skip
        if "kai-config" not in skip:
            self.kai_config(faults.get("mode", "NvFractions"))
        if "target" not in skip:
            self.cluster.target(faults.get("selector", {"example.org/gpu-fractions": "enabled"}))
            self.target_status(*faults.get("target_status", ("True", "AllNodesReady")))
        mpsd = faults.get("mpsd_image", IMAGE.format("mpsd"))
        self.daemonset("gpu-fractioning-mpsd", "mpsd", image=mpsd, ready=faults.get("ready", 2))
        self.daemonset("gpu-fractioning-fractiond", "fractiond", image=IMAGE.format("fractiond"))
        self.deployment(AGENTS, "gpu-fractioning-operator", IMAGE.format("operator"))
        self.deployment(SCHEDULER, "binder", "registry.example.org/kai-scheduler/binder:v0.9.3")
        self.pod(
            RESERVATION, "gpu-reservation-rtx-0",
            spec={"nodeName": "rtx-pro-6000-0", "runtimeClassName": "nvidia",
                  "tolerations": TOLERATE, "securityContext": NON_ROOT},
            annotations={"gpu-fraction": "1"},
        )  # fmt: skip
        self.pod(
            "ml", "frac-a",
            spec={"nodeName": "rtx-pro-6000-0", "tolerations": TOLERATE,
                  "securityContext": NON_ROOT},
            annotations={"gpu-fraction": "0.5"},
        )  # fmt: skip
        self.pod(
            "ml", "whole-gpu",
            spec={"nodeName": "b200-0", "tolerations": TOLERATE, "containers": [
                {"name": "main", "image": "busybox:1.36",
                 "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        )  # fmt: skip
        self.pod("ml", "web", spec={"nodeName": "cpu-0"})
        if "guard" not in skip:
            from fracctl.flows.policy import apply

            apply(context(self.cluster))  # fracctl policy apply, default names


def context(cluster: Cluster, kube_class: type[Kube] = Kube) -> Context:
    config = dataclasses.replace(cfg.Config(), kube=cfg.KubeConfig(kubeconfig=cluster.kubeconfig))
    return Context(
        config=config, kube_factory=lambda: kube_class.connect(kubeconfig=cluster.kubeconfig)
    )


def run(cluster: Cluster, *args: str) -> Any:
    return run_cli("--kubeconfig", cluster.kubeconfig, "doctor", *args)


def found(r: Any) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in r.json["findings"]:
        out.setdefault(f["check"], []).append(f)
    return out


# --- healthy ----------------------------------------------------------------------------


def test_a_healthy_cluster_exits_0(setup: Setup) -> None:
    setup.healthy()
    r = run(setup.cluster, "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["ok"] is True
    assert r.json["findings"] == []
    assert [c["id"] for c in r.json["checks"]] == list(CHECK_IDS)
    assert {c["status"] for c in r.json["checks"]} == {"ok"}
    table = run(setup.cluster)
    assert table.exit_code == ExitCode.OK, table.output
    assert f"doctor: healthy ({len(CHECK_IDS)} checks passed)" in table.stdout


def test_doctor_only_reads(setup: Setup) -> None:
    setup.healthy(b200={"without": ["nvidia.com/gpu.memory"]})
    ctx = context(setup.cluster)
    report = doctor(ctx)
    assert not report.ok
    calls = ctx.kube.calls
    assert calls, "no call counted"
    writes = {k: v for k, v in calls.items() if not k.startswith(("GET ", "WATCH "))}
    assert writes == {}, writes
    ctx.close()


# --- one fault at a time ----------------------------------------------------------------


def fail_reservation(s: Setup) -> None:
    s.pod(
        RESERVATION, "gpu-reservation-b200-0",
        spec={"nodeName": "b200-0", "tolerations": TOLERATE, "securityContext": NON_ROOT},
        annotations={"gpu-fraction": "1"},
        status={"phase": "Running", "containerStatuses": [{
            "name": "main", "ready": False, "restartCount": 4, "image": "busybox:1.36",
            "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                 "message": "back-off 40s restarting"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                          "message": "unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND"}},
        }]},
    )  # fmt: skip


def not_ready_agent(s: Setup) -> str:
    """The mpsd pod on b200-0 crash-loops (the DaemonSet's own pod, as its kubelet says);
    its name."""
    rtx, b200 = s.agent_pods("mpsd", count=2)
    s.kubelet_reports(
        b200,
        {"phase": "Running", "podIP": "10.240.0.8",
         "conditions": [{"type": "Ready", "status": "False"}],
         "containerStatuses": [{
             "name": "mpsd", "ready": False, "restartCount": 7, "image": "busybox:1.36",
             "imageID": "", "state": {"waiting": {
                 "reason": "CrashLoopBackOff", "message": "CUDA_ERROR_OUT_OF_MEMORY"}}}]},
    )  # fmt: skip
    s.kubelet_reports(rtx, {"phase": "Running", "podIP": "10.240.0.9",
                            "conditions": [{"type": "Ready", "status": "True"}]})  # fmt: skip
    return str(b200["metadata"]["name"])


def pending_fractional(s: Setup) -> None:
    message = (
        "failed to bind: BindingError failed to set NvFractions memory annotation: node does "
        "not include nvidia.com/gpu.memory label"
    )
    for name in ("frac-p1", "frac-p2"):
        s.pod("ml", name, spec={"tolerations": TOLERATE, "securityContext": NON_ROOT},
              annotations={"gpu-memory": "4096"}, status={"phase": "Pending"})  # fmt: skip
        s.kube.create(
            EVENTS,
            {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{name}.binding", "namespace": "ml"},
                "involvedObject": {"kind": "Pod", "namespace": "ml", "name": name},
                "reason": "BindingError", "message": message, "type": "Warning",
                "source": {"component": "binder"},
                "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            },
        )  # fmt: skip
    # A fractional pod Pending with no complaint yet (its events are progress) is not a
    # finding.
    s.pod("ml", "frac-new", spec={"tolerations": TOLERATE, "securityContext": NON_ROOT},
          annotations={"gpu-fraction": "0.5"}, status={"phase": "Pending"})  # fmt: skip
    s.kube.create(
        EVENTS,
        {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "frac-new.pulling", "namespace": "ml"},
            "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "frac-new"},
            "reason": "Pulling", "message": "Pulling image busybox:1.36", "type": "Normal",
            "source": {"component": "kubelet"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
        },
    )  # fmt: skip


def root_fractional(s: Setup) -> None:
    s.pod("ml", "frac-root", spec={"nodeName": "b200-0", "tolerations": TOLERATE,
                                   "securityContext": {"runAsUser": 0}},
          annotations={"gpu-fraction": "0.25"})  # fmt: skip


def unread_memory_keys(s: Setup) -> None:
    # The gpu-sharing generation's keys (kai-gpu-fractioning sharing-manager's test
    # workload), under a GpuFractioningConfig whose agents read nvidia.com/container.
    s.pod("ml", "frac-old-keys", spec={"nodeName": "rtx-pro-6000-0", "tolerations": TOLERATE,
                                       "securityContext": NON_ROOT},
          annotations={"nvidia.com/gpu-memory.container.main.limit": "6Gi",
                       "nvidia.com/gpu-memory.container.main.request": "6Gi"})  # fmt: skip


def untolerated_gpu_pod(s: Setup, tolerations: list[dict[str, str]] | None = None) -> None:
    # As a pod is where the API server runs no ExtendedResourceToleration: as written.
    gpu = {"limits": {"nvidia.com/gpu": "1"}}
    s.pod("ml", "train-whole", spec={"tolerations": tolerations or [], "containers": [
        {"name": "main", "image": "busybox:1.36", "resources": gpu}]},
        status={"phase": "Pending"})  # fmt: skip


def cpu_pod_on_gpu_node(s: Setup) -> None:
    s.pod("ml", "batch-etl", spec={"nodeName": "h200-0", "tolerations": [{"operator": "Exists"}]})


def drop_runtime_class(s: Setup) -> None:
    # After the pods that name it exist: the API server refuses new ones without it.
    s.kube.delete(RUNTIME_CLASSES, "nvidia")


Fault = tuple[dict[str, Any], Callable[[Setup], object] | None, str, str]


def misbind_guard(s: Setup) -> None:
    from fracctl.flows.policy import BINDINGS

    s.kube.patch(
        BINDINGS,
        "fracctl-guard-gpufractioningconfigs",
        {"spec": {"paramRef": {"name": "someone-elses-lease"}}},
    )


def left_fence(setup: Setup) -> None:
    """A drain's fence that no run holds the lock for (on a node the config no longer
    selects, so that no other check sees the condition)."""
    from fracctl.core.drain import fence_condition

    cond = fence_condition(setup.cluster.config.condition, "dead0001",
                           "GpuFractioningConfig/default", "2026-01-01T00:00:00Z")  # fmt: skip
    setup.kube.patch(NODES, "h200-0", {"status": {"conditions": [cond]}},
                     content_type=SMP, subresource="status")  # fmt: skip


def stopped_recreate(s: Setup) -> None:
    """The journal a `recreate statefulset/db -n ml --backend helm` left when it stopped,
    where fracctl.yaml's recreate.state_dir (the default) keeps it."""
    import json
    import os
    from pathlib import Path

    folder = Path(os.environ["HOME"]) / ".local" / "state" / "fracctl" / "objects"
    folder.mkdir(parents=True)
    (folder / "StatefulSet_ml_db.json").write_text(json.dumps({
        "key": "StatefulSet/ml/db", "procedure": "orphan-and-adopt", "uid": "u-1",
        "phase": "deleted", "rerun": "fracctl recreate StatefulSet/db -n ml --backend helm --yes",
    }))  # fmt: skip


def hook_annotations(s: Setup) -> None:
    """The chart's hook annotations on the live config (no release record names it)."""
    t = s.cluster.config.target
    s.kube.patch(t.ref, t.name, {"metadata": {"annotations": {
        "helm.sh/hook": "post-install,post-upgrade", "helm.sh/hook-weight": "0"}}})  # fmt: skip


FAULTS: dict[str, Fault] = {
    # check id: (arguments to healthy(), extra planting, a subject, words in the symptom)
    "drain-fence": (
        {}, left_fence, "h200-0", "fenced by fracctl drain run dead0001, which is not running"
    ),
    "guard-policy": (
        {"skip": ("guard",)},
        None,
        "GpuFractioningConfig/default",
        "no ValidatingAdmissionPolicy fracctl-guard-gpufractioningconfigs",
    ),
    "reservation-pods": ({}, fail_reservation, "gpu-reservation-b200-0", "failing"),
    "runtime-class": ({}, drop_runtime_class, "nvidia", "no RuntimeClass"),
    "image-tags": (
        {"mpsd_image": "registry.example.org/kai-gpu-fractioning/mpsd"},
        None,
        "DaemonSet/gpu-fractioning/gpu-fractioning-mpsd",
        "unpinned image",
    ),
    "agent-daemonsets": ({"ready": 1}, not_ready_agent, "b200-0", "1 of 2 pod(s) ready"),
    "gpu-memory-label": (
        {"b200": {"without": ["nvidia.com/gpu.memory"]}}, None, "b200-0", "BindingError"
    ),
    "gpu-present-label": (
        {"b200": {"without": ["nvidia.com/gpu.present"]}}, None, "b200-0", "get no daemons"
    ),
    "kai-config": ({"mode": "nvfractions"}, None, "kai-config", "'nvfractions'"),
    "fractioning-config": (
        {"target_status": ("False", "DaemonsNotReady")},
        None,
        "GpuFractioningConfig/default",
        "Ready=False (DaemonsNotReady",
    ),
    "config-hook": (
        {}, hook_annotations, "GpuFractioningConfig/default",
        "is a hook (post-install, post-upgrade): no Helm release record found",
    ),
    "node-readiness": (
        {"b200": {"ready": False, "reason": "MPSDaemonCrashLoop"}}, None, "b200-0",
        "without gpu-fractioning.nvidia.com/Ready=True",
    ),
    "opted-in-selected": (
        {"selector": {"example.org/gpu-class": "rtx-pro-6000"}}, None, "b200-0",
        "does not select: b200-0",
    ),
    "unfinished-recreates": (
        {}, stopped_recreate, "StatefulSet/ml/db",
        "a fracctl recreate of it stopped in its orphan-and-adopt procedure (last step done: "
        "deleted",
    ),
    # A selector every GPU node matches (the operator chart's default) takes the H200.
    "denied-selected": (
        {"selector": {"nvidia.com/gpu.present": "true"}}, None, "h200-0",
        "selects node(s) of a denied GPU class or product: h200-0",
    ),
    "driver-upgrade": (
        {"b200": {"labels": {"nvidia.com/gpu-driver-upgrade-state": "pod-restart-required"}}},
        None, "b200-0", "nvidia.com/gpu-driver-upgrade-state=pod-restart-required",
    ),
    "unread-memory-annotations": (
        {}, unread_memory_keys, "ml/frac-old-keys", "run with no GPU memory limit"
    ),
    "pending-fractional-pods": ({}, pending_fractional, "ml/frac-p1", "2 fractional pod(s)"),
    "fractional-pods-non-root": ({}, root_fractional, "ml/frac-root", "may run as root"),
    "gpu-node-taints": ({"b200": {"taints": []}}, None, "b200-0", "without the nvidia.com/gpu"),
    "gpu-pods-tolerate-gpu-taint": (
        {}, untolerated_gpu_pod, "ml/train-whole", "wait for a node and never get one"
    ),
    "gpu-nodes-for-gpu-pods": ({}, cpu_pod_on_gpu_node, "ml/batch-etl", "request no GPU"),
}  # fmt: skip


def test_every_check_has_a_planted_fault() -> None:
    assert set(FAULTS) == set(CHECK_IDS)


@pytest.mark.parametrize("check", list(FAULTS))
def test_each_fault_alone_is_reported_as_exactly_its_finding(setup: Setup, check: str) -> None:
    args, plant, subject, words = FAULTS[check]
    setup.healthy(**args)
    if plant is not None:
        plant(setup)
    r = run(setup.cluster, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    by_check = found(r)
    assert list(by_check) == [check], r.json["findings"]
    (f,) = by_check[check]
    assert subject in f["subjects"], f
    assert words in f["symptom"], f
    assert f["cause"] and f["fix"], f
    statuses = {c["id"]: c["status"] for c in r.json["checks"]}
    assert [k for k, v in statuses.items() if v == "finding"] == [check]


def test_the_configs_own_upgrade_condition_is_a_driver_upgrade(setup: Setup) -> None:
    setup.healthy()
    ref = setup.cluster.config.target.ref
    conds = [
        {"type": t, "status": v, "reason": r, "message": "m",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}
        for t, v, r in (("Ready", "True", "AllNodesReady"),
                        ("DriverUpgradeInProgress", "True", "DriverUpgrading"))
    ]  # fmt: skip
    setup.kube.patch(ref, "default", {"status": {"conditions": conds}}, subresource="status")
    r = run(setup.cluster, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    (f,) = found(r)["driver-upgrade"]
    assert list(found(r)) == ["driver-upgrade"]  # False is its healthy state elsewhere
    assert f["evidence"] == [
        "the live config reports DriverUpgradeInProgress=True (DriverUpgrading: m)"
    ]
    conds[1]["status"] = "False"
    setup.kube.patch(ref, "default", {"status": {"conditions": conds}}, subresource="status")
    assert run(setup.cluster, "-o", "json").exit_code == ExitCode.OK


def test_a_gpu_pod_that_admission_gave_the_toleration_is_not_reported(setup: Setup) -> None:
    setup.healthy()
    # What ExtendedResourceToleration writes into a pod that requests nvidia.com/gpu.
    untolerated_gpu_pod(setup, [{"key": "nvidia.com/gpu", "operator": "Exists",
                                 "effect": "NoSchedule"}])  # fmt: skip
    r = run(setup.cluster, "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output


def test_an_untolerated_gpu_pod_is_not_reported_while_a_gpu_node_is_untainted(
    setup: Setup,
) -> None:
    setup.healthy(b200={"taints": []})
    untolerated_gpu_pod(setup)
    r = run(setup.cluster, "-o", "json")
    assert list(found(r)) == ["gpu-node-taints"], r.json["findings"]


def test_the_details_of_a_few_findings(setup: Setup) -> None:
    setup.healthy(ready=1)
    fail_reservation(setup)
    pod = not_ready_agent(setup)
    pending_fractional(setup)
    r = run(setup.cluster, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    f = found(r)
    (res,) = f["reservation-pods"]
    assert res["evidence"][0] == (
        "gpu-reservation-b200-0 (runtimeClassName unset): main: CrashLoopBackOff: back-off 40s "
        "restarting (last exit 1: unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND)"
    )
    assert "NVML" in res["cause"]
    assert res["fix"].startswith("kubectl patch config.kai.scheduler kai-config --type=merge")
    (ds,) = f["agent-daemonsets"]
    assert ds["subjects"] == ["b200-0"]
    assert "CrashLoopBackOff: CUDA_ERROR_OUT_OF_MEMORY" in ds["evidence"][0]
    assert ds["fix"] == f"kubectl -n gpu-fractioning logs {pod} --all-containers --tail=50"
    (pending,) = f["pending-fractional-pods"]
    assert pending["subjects"] == ["ml/frac-p1", "ml/frac-p2"]
    (group,) = pending["evidence"]  # one message, two pods
    assert group.startswith("BindingError: failed to bind")
    assert group.endswith("[2 pod(s): ml/frac-p1, ml/frac-p2]")
    assert "nvidia.com/gpu.memory" in pending["cause"]
    table = run(setup.cluster)
    assert f"fix:   kubectl -n gpu-fractioning logs {pod}" in table.stdout
    assert "FINDING" in table.stdout


def test_missing_objects(setup: Setup) -> None:
    setup.healthy(skip=("kai-config", "target"))
    r = run(setup.cluster, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    f = found(r)
    assert list(f) == ["kai-config", "fractioning-config"]
    assert "missing (no such object)" in f["kai-config"][0]["symptom"]
    assert "GpuFractioningConfig/default is missing" in f["fractioning-config"][0]["symptom"]
    statuses = {c["id"]: c["status"] for c in r.json["checks"]}
    assert statuses["node-readiness"] == "skipped"


def test_github_output(setup: Setup) -> None:
    setup.healthy()
    drop_runtime_class(setup)
    r = run(setup.cluster, "-o", "github")
    assert r.exit_code == ExitCode.FINDING, r.output
    first, last = r.stdout.splitlines()[0], r.stdout.splitlines()[-1]
    assert first.startswith("::error title=fracctl doctor%3A runtime-class::no RuntimeClass")
    assert last.startswith("::notice title=fracctl doctor::doctor: 1 finding(s)")


# --- access errors ----------------------------------------------------------------------


class Nobody(Kube):
    """The admin's connection, impersonating a user with no permissions at all."""

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = super()._headers(content_type, accept)
        headers["Impersonate-User"] = "fracctl-nobody"
        return headers


def test_a_forbidden_read_is_an_access_error(setup: Setup) -> None:
    setup.healthy()
    with pytest.raises(ApiError) as e:
        doctor(context(setup.cluster, Nobody))
    assert e.value.status.code == 403
    assert e.value.exit_code == ExitCode.EXTERNAL


def test_an_unreachable_cluster_exits_3(tmp_path: Any, cluster: Cluster) -> None:
    text = Path(cluster.kubeconfig).read_text()
    bad = tmp_path / "kubeconfig"
    bad.write_text(re.sub(r'"server": "[^"]+"', '"server": "https://127.0.0.1:1"', text))
    r = run_cli("--kubeconfig", str(bad), "doctor")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cannot reach the API server" in r.stderr


def test_nodes_are_seen_whole(setup: Setup) -> None:
    # The GPU capacity alone makes a node a GPU node, with no GPU label at all.
    setup.healthy()
    setup.cluster.node("mystery-0", taints=[TAINT])
    setup.kube.patch(NODES, "mystery-0", {"status": {"capacity": {"nvidia.com/gpu": "8"}}},
                     subresource="status", content_type=SMP)  # fmt: skip
    r = run(setup.cluster, "-o", "json")
    f = found(r)
    assert set(f) == {"gpu-memory-label", "gpu-present-label"}
    assert f["gpu-memory-label"][0]["subjects"] == ["mystery-0"]


def test_a_mis_bound_guard_policy_is_found(setup: Setup) -> None:
    setup.healthy()
    misbind_guard(setup)
    r = run(setup.cluster, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    (f,) = found(r)["guard-policy"]
    assert "the binding's parameter is Lease default/someone-elses-lease" in f["symptom"], f
    assert f["fix"].startswith("fracctl policy apply"), f
