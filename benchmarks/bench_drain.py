"""Benchmark: the drain of ``recreate --drain`` against the same evictions sent bare, and
against ``kubectl drain`` of the same nodes.

Starts its own control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler) and KWOK, which plays N nodes (default 100) that the live
``GpuFractioningConfig`` selects, each with the readiness condition True. Each trial
seeds P fractional pods (default 1,000) in G PodGroups (default 250) spread over the
nodes and over 10 namespaces, each namespace with a PodDisruptionBudget
(``minAvailable: 0``) that covers its pods, waits until KWOK reports every pod Running
and Ready and the budgets allow them all, then empties the nodes of them one way:

* ``fracctl``: the drain's steps as ``recreate --drain`` runs them, in process: the plan
  (nodes, pods, groups, budgets), the journal, the fence, the evictions PodGroup by
  PodGroup, the wait until no fractional pod is on a node; then its undo (not timed).
* ``bare, one by one``: the same evictions (``pods/eviction``, uid precondition) sent one
  after another on one connection, then the same wait: the floor for a client that
  evicts in order.
* ``bare, 16 at once``: the same evictions from 16 threads: the API server's limit.
* ``kubectl drain``: ``kubectl drain NODE... --force --ignore-daemonsets
  --delete-emptydir-data`` (it cordons the nodes, evicts every pod on them and waits for
  them to go); then ``kubectl uncordon`` (not timed).

Each figure is wall time from the first request to the moment no pod is left, with the
requests sent (counted at the client: fracctl's and the bare senders' own counter,
kubectl's ``-v=6`` request log). The pods are bare (``--force`` for both tools), so
nothing recreates them and each trial seeds them again.

    python benchmarks/bench_drain.py                 # 1,000 pods, 250 groups, 100 nodes
    python benchmarks/bench_drain.py --quick         # 200 pods, 50 groups, 20 nodes
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from fracctl.adapters.kube import Kube  # noqa: E402
from fracctl.config import Config  # noqa: E402
from fracctl.core.drain import POD_GROUP  # noqa: E402
from fracctl.core.kube.resources import NAMESPACES, NODES, PDBS, PODS  # noqa: E402
from fracctl.sandbox import controlplane  # noqa: E402
from fracctl.sandbox.agents import kwok_delays  # noqa: E402
from fracctl.sandbox.controllers import find_kwok, kwok_node, start_beside  # noqa: E402
from fracctl.sandbox.flow import install_crd  # noqa: E402
from fracctl.sandbox.seed import install_kai_config_crd  # noqa: E402

SELECTOR = {"example.org/gpu-fractions": "enabled"}
NAMESPACE_COUNT = 10
SMP = "application/strategic-merge-patch+json"
KUBECTL_REQUEST = re.compile(
    r'verb="(GET|POST|PUT|PATCH|DELETE)"|\b(GET|POST|PUT|PATCH|DELETE) https'
)


class Counting:
    """Counts the requests a Kube client sends (where every request leaves it)."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()
        self._send = Kube._send

        counter = self

        def send(kube: Kube, method: str, path: str, **kwargs: Any) -> Any:
            with counter._lock:
                counter.calls += 1
            return counter._send(kube, method, path, **kwargs)

        Kube._send = send  # type: ignore[method-assign]

    def restore(self) -> None:
        Kube._send = self._send  # type: ignore[method-assign]


class Bench:
    """The cluster and what a trial seeds and reads."""

    def __init__(self, cp: controlplane.ControlPlane, nodes: int, pods: int, groups: int) -> None:
        self.cp = cp
        self.kube = Kube.connect(kubeconfig=cp.kubeconfig)
        self.config = Config()
        self.nodes = [f"gpu-{i:03d}" for i in range(nodes)]
        self.pods, self.groups = pods, groups
        self.namespaces = [f"team-{i}" for i in range(NAMESPACE_COUNT)]

    def seed_cluster(self) -> None:
        install_crd(self.kube, self.config)
        install_kai_config_crd(self.kube)
        self.kube.create(
            controlplane_ref("kai.scheduler", "configs", "Config"),
            {"apiVersion": "kai.scheduler/v1", "kind": "Config",
             "metadata": {"name": self.config.cluster.scheduler_config},
             "spec": {"global": {"gpuSharingMode": "NvFractions"}}},
        )  # fmt: skip
        t = self.config.target
        self.kube.create(
            t.ref,
            {"apiVersion": t.api_version, "kind": t.kind, "metadata": {"name": t.name},
             "spec": {"nodeSelector": SELECTOR}},
        )  # fmt: skip
        for name in self.nodes:
            self.kube.create(NODES, kwok_node(name, SELECTOR, gpus=8))
        self.open_fences()
        for ns in self.namespaces:
            self.kube.create(NAMESPACES, {"metadata": {"name": ns}})
            self.kube.create(
                PDBS,
                {"metadata": {"name": "fractions"},
                 "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "frac"}}}},
                namespace=ns,
            )  # fmt: skip

    def open_fences(self) -> None:
        """Every node's readiness condition True, as the operator writes it."""
        cond = {"type": self.config.condition, "status": "True", "reason": "AllDaemonsReady",
                "message": "all gpu-fractioning daemons are running",
                "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
        for name in self.nodes:
            self.kube.patch(NODES, name, {"status": {"conditions": [cond]}},
                            content_type=SMP, subresource="status")  # fmt: skip

    def seed_pods(self) -> None:
        per_group = self.pods // self.groups
        bodies = []
        for g in range(self.groups):
            ns = self.namespaces[g % NAMESPACE_COUNT]
            for i in range(per_group):
                n = g * per_group + i
                bodies.append((ns, {
                    "metadata": {"name": f"frac-{g:03d}-{i}", "labels": {"app": "frac"},
                                 "annotations": {"gpu-fraction": "0.25", POD_GROUP: f"g{g}",
                                                 **kwok_delays(0)}},
                    "spec": {"nodeName": self.nodes[n % len(self.nodes)],
                             "terminationGracePeriodSeconds": 1,
                             "containers": [{"name": "main", "image": "busybox"}]},
                }))  # fmt: skip
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda b: self.kube.create(PODS, b[1], namespace=b[0]), bodies))
        self.until(lambda: self.ready_pods() == self.pods, "every pod Running and Ready")
        self.until(self.budgets_settled, "the budgets allow every pod")

    def ready_pods(self) -> int:
        count = 0
        for p in self.kube.list(PODS, label_selector="app=frac"):
            conds = (p.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                count += 1
        return count

    def budgets_settled(self) -> bool:
        allowed = 0
        for ns in self.namespaces:
            b = self.kube.get(PDBS, "fractions", ns)
            s = b.get("status") or {}
            if s.get("observedGeneration") != b["metadata"]["generation"]:
                return False
            allowed += int(s.get("disruptionsAllowed") or 0)
        return allowed == self.pods

    def left(self) -> int:
        return len(self.kube.list(PODS, label_selector="app=frac"))

    def until(self, probe: Any, what: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not probe():
            if time.monotonic() > deadline:
                raise SystemExit(f"bench_drain: waited {timeout:g}s for {what}")
            time.sleep(0.5)

    def targets(self) -> list[tuple[str, str, str]]:
        return [(p["metadata"]["namespace"], p["metadata"]["name"], p["metadata"]["uid"])
                for p in self.kube.list(PODS, label_selector="app=frac")]  # fmt: skip


def controlplane_ref(group: str, plural: str, kind: str) -> Any:
    from fracctl.core.kube.resources import ResourceRef

    return ResourceRef(group, "v1", plural, kind, False)


def wait_gone(kube: Kube, bench: Bench) -> None:
    while kube.list(PODS, label_selector="app=frac"):
        time.sleep(0.5)


def trial_fracctl(bench: Bench) -> tuple[float, int]:
    from fracctl.flows import drain
    from fracctl.flows.context import Context

    kube = Kube.connect(kubeconfig=bench.cp.kubeconfig)
    ctx = Context(config=bench.config, kube_factory=lambda: kube)
    ctx._out = ctx._err = quiet_console()
    counting = Counting()
    try:
        start = time.monotonic()
        t = bench.config.target
        live = kube.get(t.ref, t.name)
        p = drain.plan(ctx, live=live, desired=live, force=True, journal=None)
        if p.refusals:
            raise SystemExit(f"bench_drain: the plan refuses: {p.refusals}")
        planned = time.monotonic()
        journal = drain.start(ctx, p, live=live, desired=live, journal=None)
        drain.execute(ctx, p, journal)
        wall, calls = time.monotonic() - start, counting.calls
        rest = wall - (planned - start)
        print(f"fracctl drain: plan {planned - start:.2f} s, the rest {rest:.2f} s")
    finally:
        counting.restore()
    drain.undo(ctx, journal)
    return wall, calls


def quiet_console() -> Any:
    from rich.console import Console

    return Console(file=open(os.devnull, "w"))  # noqa: SIM115


def trial_bare(bench: Bench, workers: int) -> tuple[float, int]:
    kube = Kube.connect(kubeconfig=bench.cp.kubeconfig)
    targets = bench.targets()
    counting = Counting()
    try:
        start = time.monotonic()
        if workers == 1:
            for ns, name, uid in targets:
                kube.evict(ns, name, uid=uid)
        else:
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                list(pool.map(lambda t: kube.evict(t[0], t[1], uid=t[2]), targets))
        wait_gone(kube, bench)
        wall, calls = time.monotonic() - start, counting.calls
    finally:
        counting.restore()
    return wall, calls


def trial_kubectl(bench: Bench, kubectl: str) -> tuple[float, int]:
    argv = [kubectl, "--kubeconfig", bench.cp.kubeconfig, "-v=6", "drain", *bench.nodes,
            "--force", "--ignore-daemonsets", "--delete-emptydir-data",
            "--timeout=10m"]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_drain: kubectl drain failed: {done.stderr[-2000:]}")
    calls = sum(1 for line in done.stderr.splitlines() if KUBECTL_REQUEST.search(line))
    subprocess.run([kubectl, "--kubeconfig", bench.cp.kubeconfig, "uncordon", *bench.nodes],
                   capture_output=True, check=True)  # fmt: skip
    if bench.left():
        raise SystemExit("bench_drain: kubectl drain left pods behind")
    return wall, calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--only", default="", help="the ways to run, separated by ';' (default: all)")
    args, _ = ap.parse_known_args(argv)
    nodes, pods, groups = (20, 200, 50) if args.quick else (100, 1000, 250)
    kubectl = shutil.which("kubectl")
    binaries = controlplane.find_binaries(REPO)
    with tempfile.TemporaryDirectory(prefix="bench-drain-") as state:
        cp = controlplane.start(state, binaries=binaries)
        try:
            bench = Bench(cp, nodes, pods, groups)
            bench.seed_cluster()
            start_beside(cp, binaries=binaries, kwok=find_kwok(REPO))
            ways: dict[str, Any] = {
                "fracctl drain": lambda: trial_fracctl(bench),
                "bare, one by one": lambda: trial_bare(bench, 1),
                report.DRAIN_BASE: lambda: trial_bare(bench, 16),
            }
            if kubectl:
                ways["kubectl drain"] = lambda: trial_kubectl(bench, kubectl)
            if args.only:
                ways = {k: v for k, v in ways.items() if k in args.only.split(";")}
            rows: dict[str, dict[str, list[float]]] = {k: {"wall": [], "calls": []} for k in ways}
            for _ in range(args.runs):
                for name, trial in ways.items():
                    bench.seed_pods()
                    wall, calls = trial()
                    bench.until(lambda: bench.left() == 0, "no pod left")
                    bench.open_fences()
                    rows[name]["wall"].append(wall)
                    rows[name]["calls"].append(calls)
                    print(f"{name}: {wall:.2f} s, {calls} requests", flush=True)
        finally:
            cp.stop()
    version = report._version([kubectl, "version", "--client"]) if kubectl else None
    data = {"nodes": nodes, "pods": pods, "groups": groups, "runs": args.runs, "rows": rows,
            "kubectl": version}  # fmt: skip
    report.save(report.OUT / "drain.json", data, "\n".join(report.drain_section(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
