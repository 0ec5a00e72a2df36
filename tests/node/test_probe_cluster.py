"""``fracctl probe`` against the real API server, with the KAI stand-in where a
scheduler is needed. The probe must be gone after every path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import PODS
from fracctl.errors import ExitCode, Unreachable
from fracctl.flows.context import Context
from fracctl.flows.guards.probe import probe
from fracctl.flows.guards.probe_pod import PROBE_LABEL, PodFate
from fracctl.sandbox.kai_sim import KaiSimulation, KaiSimulationThread
from tests.support.helpers import Cluster, run_cli

REPO = Path(__file__).resolve().parents[2]


def probes(kube: Kube) -> list[dict[str, Any]]:
    return kube.list(PODS, namespace="default", label_selector=f"{PROBE_LABEL}=true")


@pytest.fixture
def kai(cluster: Cluster) -> Iterator[KaiSimulation]:
    with KaiSimulationThread(
        Kube.connect(kubeconfig=cluster.kubeconfig), cluster.config
    ) as standin:
        yield standin
    assert probes(cluster.kube) == []


def pool_nodes(cluster: Cluster, *, ready: bool | None) -> None:
    cluster.node("b200-0", gpu_class="b200", opt_in=True, ready=ready)
    cluster.node("h200-0", gpu_class="h200")


def test_not_ready_pool_is_reported_as_good_news(cluster: Cluster, kai: KaiSimulation) -> None:
    pool_nodes(cluster, ready=None)
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--memory", "4Gi",
        "--pool", "example.org/gpu-class=b200", "--timeout", "20s", "-o", "json",
    )  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    out = r.json
    assert out["outcome"] == "not-ready"
    assert "node is not ready for fractional GPU scheduling" in out["message"]
    assert "ConditionNotFound" in out["message"]
    assert "Good news" in out["summary"]
    assert out["deleted"] is True
    assert out["request"] == {"gpu-memory": "4096"}
    assert probes(cluster.kube) == []
    # What KAI saw: a non-root probe for kai-scheduler in the pool, with the tolerations.
    (seen,) = kai.seen
    spec = seen["spec"]
    assert spec["schedulerName"] == "kai-scheduler"
    assert spec["nodeSelector"] == {"example.org/gpu-class": "b200"}
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 65534
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec[
        "tolerations"
    ]
    assert seen["metadata"]["annotations"] == {"gpu-memory": "4096"}
    assert seen["metadata"]["labels"]["kai.scheduler/queue"] == "default-queue"


def test_table_output_for_not_ready(cluster: Cluster, kai: KaiSimulation) -> None:
    pool_nodes(cluster, ready=False)
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--fraction", "0.25", "--timeout", "20s"
    )  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    assert ": not-ready" in r.stdout
    assert "Condition gpu-fractioning.nvidia.com/Ready is False" in r.stdout
    assert "probe deleted" in r.stdout
    assert kai.seen[0]["metadata"]["annotations"] == {"gpu-fraction": "0.25"}
    # Default pool: the opt-in label.
    assert kai.seen[0]["spec"]["nodeSelector"] == {"example.org/gpu-fractions": "enabled"}


def test_ready_pool_runs_the_probe_and_it_is_deleted_at_once(
    cluster: Cluster, kai: KaiSimulation
) -> None:
    pool_nodes(cluster, ready=True)
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--memory", "2048Mi",
        "--timeout", "20s", "--expect", "running", "-o", "json",
    )  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "running"
    assert r.json["node"] == "b200-0"
    assert r.json["deleted"] is True
    # Deleted with a grace period of 0: gone at once, before its kubelet (KWOK) would act.
    assert probes(cluster.kube) == []


def test_unexpected_answer_exits_1(cluster: Cluster, kai: KaiSimulation) -> None:
    pool_nodes(cluster, ready=None)
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--memory", "4Gi",
        "--timeout", "20s", "--expect", "running",
    )  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    assert probes(cluster.kube) == []


def test_pool_without_nodes_is_unschedulable(cluster: Cluster, kai: KaiSimulation) -> None:
    pool_nodes(cluster, ready=True)
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--memory", "4Gi",
        "--pool", "example.org/gpu-class=rtx-pro-6000", "--timeout", "20s",
    )  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "could not be scheduled" in r.stdout
    assert "didn't match" in r.stdout
    assert probes(cluster.kube) == []


def test_tainted_pool_is_unschedulable_without_a_toleration(
    cluster: Cluster, kai: KaiSimulation
) -> None:
    cluster.node(
        "rtx-pro-6000-0",
        gpu_class="rtx-pro-6000",
        ready=True,
        taints=[{"key": "example.org/inference", "value": "true", "effect": "NoSchedule"}],
    )
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--memory", "4Gi",
        "--pool", "example.org/gpu-class=rtx-pro-6000", "--timeout", "20s", "-o", "json",
    )  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["outcome"] == "unschedulable"


def test_no_scheduler_times_out_and_deletes(cluster: Cluster) -> None:
    pool_nodes(cluster, ready=True)
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--memory", "4Gi", "--timeout", "1s",
        "-o", "json",
    )  # fmt: skip
    assert r.exit_code == ExitCode.TIMEOUT, r.output
    assert r.json["outcome"] == "timeout"
    assert "KAI scheduler running" in r.json["summary"]
    assert probes(cluster.kube) == []


def test_probe_names_are_unique(cluster: Cluster) -> None:
    ctx = Context(config=cluster.config, kube_factory=lambda: cluster.kube)
    a = probe(ctx, memory="1Gi", timeout=0.2)
    b = probe(ctx, memory="1Gi", timeout=0.2)
    assert a.name != b.name
    assert a.name.startswith("fracctl-probe-")
    assert a.outcome is PodFate.TIMEOUT and a.deleted and b.deleted
    assert probes(cluster.kube) == []


class FailingWatch(Kube):
    """The real client, except that watching fails the way the test asks."""

    error: BaseException = Unreachable("watch on pods broke: connection reset")

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        self.calls["WATCH pods"] += 1
        raise self.error


def failing(kubeconfig: str, error: BaseException) -> Kube:
    kube = FailingWatch.connect(kubeconfig=kubeconfig)
    kube.error = error  # type: ignore[attr-defined]
    return kube


def test_an_error_while_watching_still_deletes(cluster: Cluster) -> None:
    from fracctl.errors import ApiError, ApiStatus

    kube = failing(cluster.kubeconfig, ApiError(ApiStatus(500, "InternalError", "etcd down")))
    ctx = Context(config=cluster.config, kube_factory=lambda: kube)
    with pytest.raises(ApiError, match="etcd down"):
        probe(ctx, memory="1Gi", timeout=10)
    assert kube.calls["POST pods"] == 1
    assert kube.calls["DELETE pods"] == 1
    assert probes(cluster.kube) == []


def test_a_watch_that_keeps_dropping_is_resumed_until_the_deadline(cluster: Cluster) -> None:
    kube = failing(cluster.kubeconfig, Unreachable("watch on pods broke: connection reset"))
    ctx = Context(config=cluster.config, kube_factory=lambda: kube)
    result = probe(ctx, memory="1Gi", timeout=2)
    assert result.outcome.value == "timeout", result
    assert kube.calls["WATCH pods"] > 1, "the dropped watch was resumed"
    assert kube.calls["POST pods"] == 1
    assert kube.calls["DELETE pods"] == 1
    assert probes(cluster.kube) == []


def test_keyboard_interrupt_still_deletes(cluster: Cluster) -> None:
    kube = failing(cluster.kubeconfig, KeyboardInterrupt())
    ctx = Context(config=cluster.config, kube_factory=lambda: kube)
    with pytest.raises(KeyboardInterrupt):
        probe(ctx, memory="1Gi", timeout=10)
    assert kube.calls["DELETE pods"] == 1
    assert probes(cluster.kube) == []


def _run_and_signal(cluster: Cluster, tmp_path: Path, sig: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRACCTL_")}
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONFAULTHANDLER"] = "1"  # SIGABRT dumps every thread's stack, should it hang
    # Ctrl-C as a terminal delivers it. A shell that runs the suite in the background
    # (`make test &`) starts it with SIGINT ignored; children inherit that, and Python
    # then installs no KeyboardInterrupt handler, so the signal would never arrive.
    as_from_a_terminal = (
        "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "runpy.run_module('fracctl', run_name='__main__', alter_sys=True)"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            as_from_a_terminal,
            "--kubeconfig",
            cluster.kubeconfig,
            "probe",
            "--memory",
            "4Gi",
            "--timeout",
            "60s",
        ],  # fmt: skip
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 30
        while not probes(cluster.kube):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the probe was never created"
            time.sleep(0.1)
        time.sleep(0.3)  # let it settle into the watch
        proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=10)
            pytest.fail(f"fracctl probe did not exit 30 s after the signal; where it was:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupting_the_command_deletes_the_probe(
    cluster: Cluster, tmp_path: Path, sig: int
) -> None:
    cluster.node("b200-0", gpu_class="b200", opt_in=True)  # no scheduler: it stays Pending
    done = _run_and_signal(cluster, tmp_path, sig)
    assert done.returncode == ExitCode.INTERRUPTED, done.stderr
    assert "Interrupted." in done.stderr
    assert probes(cluster.kube) == []


def test_forbidden_create_exits_3_and_leaves_nothing(cluster: Cluster) -> None:
    viewer = str(Path(cluster.kubeconfig).with_name("viewer.kubeconfig"))
    r = run_cli("--kubeconfig", viewer, "probe", "--memory", "4Gi", "--timeout", "5s")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "403" in r.stderr
    assert "could not be deleted" not in r.stderr  # refused: nothing to delete
    assert probes(cluster.kube) == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "exactly one of --memory"),
        (["--memory", "4Gi", "--fraction", "0.5"], "exactly one of --memory"),
        (["--memory", "4G"], "expected a size like 4Gi"),
        (["--memory", "0Mi"], "expected a size like 4Gi"),
        (["--fraction", "1.5"], "between 0 and 1"),
        (["--fraction", "0"], "between 0 and 1"),
        (["--memory", "4Gi", "--pool", "nokey"], "KEY=VALUE"),
        (["--memory", "4Gi", "--expect", "maybe"], "any, running, not-ready"),
        (["--memory", "4Gi", "--timeout", "soon"], "expected a duration"),
        (["--memory", "4Gi", "-o", "yaml"], "table, json"),
    ],
)
def test_usage_errors_exit_2_before_touching_the_cluster(args: list[str], needle: str) -> None:
    r = run_cli("--kubeconfig", "/nonexistent/kubeconfig", "probe", *args)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert needle in r.stderr


def test_a_pool_holding_an_h200_is_refused_before_anything_is_created(
    cluster: Cluster, kai: KaiSimulation
) -> None:
    # Daemons run there (Ready), and only the hardware label says it is an H200: without
    # the check the probe would run on it, the one Ready node of the pool.
    cluster.node("b200-0", gpu_class="b200", opt_in=True)
    cluster.node(
        "gpu-7", gpu_class="b200", ready=True, labels={"nvidia.com/gpu.product": "NVIDIA-H200"}
    )
    r = run_cli(
        "--kubeconfig", cluster.kubeconfig, "probe", "--memory", "4Gi",
        "--pool", "example.org/gpu-class=b200", "--timeout", "20s", "--expect", "running",
    )  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "refusing to probe, nothing was created" in r.stderr
    assert "gpu-7 (class b200, product NVIDIA-H200)" in r.stderr
    assert "narrow --pool to leave out gpu-7" in r.stderr
    assert r.stderr.count("\n") == 1
    assert kai.seen == [] and probes(cluster.kube) == []


def test_the_default_pool_with_an_opted_in_h200_says_unlabel(
    cluster: Cluster, kai: KaiSimulation
) -> None:
    cluster.node("b200-0", gpu_class="b200", opt_in=True, ready=True)
    cluster.node("h200-0", gpu_class="h200", opt_in=True, ready=True)
    r = run_cli("--kubeconfig", cluster.kubeconfig, "probe", "--memory", "4Gi", "--timeout", "20s")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "(fracctl nodes unlabel h200-0)" in r.stderr
    assert kai.seen == []
