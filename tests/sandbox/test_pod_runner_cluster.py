"""The pod runner (fracctl/sandbox/pod_runner) on the real control plane: a pod of
fracctl's image, placed by the real scheduler on a KWOK node, runs as a local fracctl
process with the pod's command, environment, files and service account, and ends with
the status a kubelet writes; KWOK's stages leave it alone and keep every other pod."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.core.kube.resources import CONFIGMAPS, PODS
from fracctl.sandbox import controlplane
from fracctl.sandbox.pod_runner.launch import SERVICEACCOUNTS
from fracctl.sandbox.pod_runner.runner import PodRunner
from tests.support.helpers import Cluster

NS = "runner-test"


@pytest.fixture
def runner(cluster: Cluster, control_plane: controlplane.ControlPlane, tmp_path: Path
           ) -> Iterator[PodRunner]:  # fmt: skip
    cluster.namespace(NS)
    cluster.node("cpu-0", ready=True)
    run = PodRunner(cluster.kube, server=control_plane.url, ca_file=control_plane.ca_file,
                    work=tmp_path / "runner")  # fmt: skip
    stop = threading.Event()
    thread = threading.Thread(target=run.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield run
    finally:
        stop.set()
        thread.join(timeout=10)


def pod(name: str, *, image: str = "registry.example/fracctl:0.1.0", **container: Any) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": image, **container}],
            **container.pop("pod_spec", {}),
        },
    }


def ended(cluster: Cluster, name: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = cluster.kube.get(PODS, name, NS).get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            return status
        assert time.monotonic() < deadline, f"pod {name} did not end: {status}"
        time.sleep(0.2)


def terminated(status: dict[str, Any]) -> dict[str, Any]:
    (container,) = status["containerStatuses"]
    return dict(container["state"]["terminated"])


def test_a_pod_of_fracctls_image_runs_its_arguments_and_succeeds(
    cluster: Cluster, runner: PodRunner
) -> None:
    cluster.kube.create(PODS, pod("version", args=["--version"]))
    status = ended(cluster, "version")
    assert status["phase"] == "Succeeded", status
    assert terminated(status)["exitCode"] == 0 and terminated(status)["reason"] == "Completed"


def test_the_exit_code_and_the_termination_message_become_the_pods_status(
    cluster: Cluster, runner: PodRunner
) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "empty", "namespace": NS},
          "data": {"note.txt": "no manifests here"}}  # fmt: skip
    cluster.kube.create(CONFIGMAPS, cm)
    cluster.kube.create(
        PODS,
        pod(
            "gate",
            args=["gate", "pre-sync", "--desired", "/etc/fracctl/desired"],
            volumeMounts=[{"name": "desired", "mountPath": "/etc/fracctl/desired"}],
            pod_spec={"volumes": [{"name": "desired", "configMap": {"name": "empty"}}]},
        ),
    )
    status = ended(cluster, "gate")
    assert status["phase"] == "Failed", status
    term = terminated(status)
    assert term["exitCode"] == 2 and term["reason"] == "Error", term
    assert term["message"] == (
        "fracctl gate pre-sync: --desired /etc/fracctl/desired: no manifests in it"
    ), term


def test_the_process_is_the_pods_service_account(cluster: Cluster, runner: PodRunner) -> None:
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "nobody", "namespace": NS},
    }
    cluster.kube.create(SERVICEACCOUNTS, sa)
    cluster.kube.create(
        PODS,
        pod(
            "whoami",
            args=["wait"],
            env=[{"name": "FRACCTL_KUBE_IN_CLUSTER", "value": "true"}],
            terminationMessagePolicy="FallbackToLogsOnError",
            pod_spec={"serviceAccountName": "nobody"},
        ),
    )
    status = ended(cluster, "whoami")
    message = terminated(status)["message"]
    assert "system:serviceaccount:runner-test:nobody" in message, message
    assert terminated(status)["exitCode"] != 0


def test_a_pod_that_names_a_missing_configmap_waits_with_the_reason(
    cluster: Cluster, runner: PodRunner
) -> None:
    cluster.kube.create(
        PODS,
        pod("missing", args=["--version"],
            volumeMounts=[{"name": "gone", "mountPath": "/etc/gone"}],
            pod_spec={"volumes": [{"name": "gone", "configMap": {"name": "gone"}}]}),
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        statuses = (cluster.kube.get(PODS, "missing", NS).get("status") or {}).get(
            "containerStatuses"
        ) or []
        waiting = statuses[0]["state"].get("waiting") if statuses else None
        if waiting:
            break
        assert time.monotonic() < deadline, statuses
        time.sleep(0.2)
    assert waiting["reason"] == "CreateContainerConfigError"
    assert "ConfigMap runner-test/gone not found" in waiting["message"]


def test_kwok_keeps_every_other_pod(cluster: Cluster, runner: PodRunner) -> None:
    cluster.kube.create(PODS, pod("busy", image="busybox:1.36"))
    deadline = time.monotonic() + 30
    while (cluster.kube.get(PODS, "busy", NS).get("status") or {}).get("phase") != "Running":
        assert time.monotonic() < deadline, "KWOK did not run an ordinary pod"
        time.sleep(0.2)
    assert not runner.processes and all("busy" not in p for p in runner.processes)
