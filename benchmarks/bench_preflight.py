"""Benchmark: preflight's fractional-pod scan vs ``kubectl get pods -A -o json | jq``.

Starts its own kube-apiserver + etcd, seeds nodes and pods shaped like real ones
(several containers, env, volumes, probes, a status with conditions and container
statuses: about 5 KB of JSON each), then runs, in the same session and in separate
processes so each peak RSS is its own:

* ``scan``: :func:`fracctl.flows.guards.scan.scan_fractional_pods` alone;
* ``preflight``: the whole ``fracctl preflight -o json`` command (the scan, a
  metadata-only list of every node, the policy and selector checks);
* ``kubectl | jq``: ``kubectl get pods -A -o json`` (same field selector) piped into a
  jq filter with the same annotation rules, printing namespace/name and node.

Each tool's findings are checked against the seeded truth before any time counts.

    python benchmarks/bench_preflight.py            # 5,000 nodes, 100,000 pods
    python benchmarks/bench_preflight.py --quick    # 500 nodes, 10,000 pods

``--state-dir DIR --keep`` keeps the seeded control plane's etcd data; a later run
with the same ``--state-dir`` restarts it and skips seeding.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from fracctl.adapters.kube import METADATA_LIST, POD_LIST, Kube, podpage, podscan  # noqa: E402
from fracctl.adapters.kube.wire import MAGIC, PROTOBUF  # noqa: E402
from fracctl.config import Config  # noqa: E402
from fracctl.core.fractions.fractional import (  # noqa: E402
    AnnotationMatcher,
    PodKind,
    classify,
    classify_pod,
)
from fracctl.core.kube.resources import NAMESPACES, NODES, PODS  # noqa: E402
from fracctl.errors import Conflict  # noqa: E402
from fracctl.sandbox import controlplane  # noqa: E402

OPT_IN = "example.org/gpu-fractions=enabled"
CLASS_KEY = "example.org/gpu-class"
RESERVATION_NS = "kai-resource-reservation"
FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
STAMP = "2026-03-01T10:00:00Z"

# The jq twin of the default fraction_annotations patterns.
_JQ_KEYS = "^(gpu-fraction|gpu-memory|gpu-fraction-num-devices|gpu-fraction-container-name)$"
_JQ_CONTAINER = (
    "^nvidia\\\\.com/container\\\\.[^/.]+\\\\.(gpu-memory\\\\.request|gpu-memory\\\\.limit"
    "|gpu-compute\\\\.mode|gpu-compute\\\\.portion|gpus\\\\.devices)$"
)
JQ_FILTER = (
    """.items[]
| select(.metadata.namespace != "kai-resource-reservation")
| select((.metadata.annotations // {}) | to_entries | any("""
    f'(.key | test("{_JQ_KEYS}")) or (.key | test("{_JQ_CONTAINER}"))'
    ''' or (.key == "received-resource-type" and .value == "Fraction")))
| "\\(.metadata.namespace)/\\(.metadata.name) \\(.spec.nodeName // "-")"'''
)

FRACTION_STYLES: list[dict[str, str]] = [
    {"gpu-fraction": "0.5"},
    {"gpu-memory": "4096"},
    {"nvidia.com/container.main.gpu-memory.request": "8192"},
    {  # what the binder writes on a placed pod
        "received-resource-type": "Fraction",
        "nvidia.com/container.main.gpus.devices": "GPU-3b5e2a8c-9f41-4d7e-b2a1-6c0d8e7f9a12",
        "nvidia.com/container.main.gpu-compute.portion": "25",
    },
]


# --- seeding ---------------------------------------------------------------------------


def node_name(i: int) -> str:
    return f"gpu-node-{i:05d}"


def node_body(i: int) -> dict[str, Any]:
    cls = ("rtx-pro-6000", "b200", "b200", "rtx-pro-6000", "h200")[i % 5]
    labels = {
        "kubernetes.io/hostname": node_name(i),
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": f"gpu-{cls}-x8",
        "topology.kubernetes.io/zone": f"zone-{i % 3}",
        CLASS_KEY: cls,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.product": cls.upper(),
    }
    if cls != "h200":
        labels["example.org/gpu-fractions"] = "enabled"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_name(i), "labels": labels},
        "spec": {"podCIDR": f"10.{i // 250}.{i % 250}.0/24"},
    }


def kind_of(i: int) -> str:
    """Which pods are what: deterministic, so the truth is known without listing."""
    if i % 2000 == 7:
        return "reservation"  # 50 per 100k
    if i % 100 == 0:
        return "fractional-done" if i % 1000 == 500 else "fractional"
    if i % 50 == 1:
        return "done"
    return "plain"


def namespace_of(i: int, kind: str) -> str:
    return RESERVATION_NS if kind == "reservation" else f"team-{i % 200:03d}"


def pod_body(i: int, nodes: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A pod about 5 KB as JSON once stored, and the status to give it."""
    kind = kind_of(i)
    ns = namespace_of(i, kind)
    name = f"worker-{i:06d}"
    app = f"svc-{i % 97}"
    annotations = {
        "kubectl.kubernetes.io/restartedAt": STAMP,
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
    }
    if kind.startswith("fractional"):
        annotations.update(FRACTION_STYLES[(i // 100) % len(FRACTION_STYLES)])
    if kind == "reservation":
        name = f"gpu-reservation-{i:06d}"
        annotations["gpu-fraction"] = "1"
    env = [{"name": f"SETTING_{k}", "value": f"value-{k}-{i % 13}"} for k in range(3)]
    env.append({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    mounts = [
        {"name": "config", "mountPath": "/etc/app"},
        {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
         "readOnly": True},
    ]  # fmt: skip

    def container(cname: str, image: str, port: int) -> dict[str, Any]:
        probe = {"httpGet": {"path": "/healthz", "port": port}, "periodSeconds": 10}
        return {
            "name": cname,
            "image": f"example.org/{image}:1.{i % 7}.3",
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "env": env,
            "resources": {
                "requests": {"cpu": "250m", "memory": "512Mi"},
                "limits": {"memory": "1Gi"},
            },
            "volumeMounts": mounts,
            "livenessProbe": probe,
            "readinessProbe": {**probe, "initialDelaySeconds": 5},
            "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True},
        }

    node = node_name(i % nodes)
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/part-of": "platform",
                "pod-template-hash": f"{i % 9973:08x}",
                "team": f"team-{i % 200:03d}",
            },
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{i % 9973:08x}",
                    "uid": f"00000000-0000-4000-8000-{i:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "serviceAccountName": "default",
            "containers": [
                container("main", app, 8080),
                container("metrics", "metrics-sidecar", 9090),
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": f"{app}-config"}},
                {
                    "name": "kube-api-access",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ]
                    },
                },
            ],  # fmt: skip
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "securityContext": {"runAsUser": 1000, "fsGroup": 1000},
        },
    }
    phase = "Succeeded" if kind in ("done", "fractional-done") else "Running"
    ready = "True" if phase == "Running" else "False"
    conditions = [
        {"type": t, "status": "True" if t in ("PodScheduled", "Initialized") else ready,
         "lastProbeTime": None, "lastTransitionTime": STAMP}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                  "PodScheduled")
    ]  # fmt: skip
    statuses = [
        {
            "name": c,
            "ready": phase == "Running",
            "restartCount": i % 3,
            "image": f"example.org/{c}:1.{i % 7}.3",
            "imageID": f"example.org/{c}@sha256:{i:064x}",
            "containerID": f"containerd://{(i * 7919):064x}",
            "started": phase == "Running",
            "state": {"running": {"startedAt": STAMP}}
            if phase == "Running"
            else {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": STAMP}},
        }
        for c in ("main", "metrics")
    ]
    status = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": f"10.1.{(i % nodes) // 250}.{(i % nodes) % 250}",
        "podIP": f"10.2.{i // 65000}.{(i // 250) % 250}",
        "podIPs": [{"ip": f"10.2.{i // 65000}.{(i // 250) % 250}"}],
        "startTime": STAMP,
        "qosClass": "Burstable",
        "containerStatuses": statuses,
    }
    return pod, status


def truth(pods: int, nodes: int) -> set[str]:
    """``namespace/name node`` of every pod the scan must find."""
    out = set()
    for i in range(pods):
        if kind_of(i) == "fractional":
            out.add(f"{namespace_of(i, 'fractional')}/worker-{i:06d} {node_name(i % nodes)}")
    return out


def connect(kubeconfig: str, pool: int) -> Kube:
    from kubernetes import config as kconfig
    from kubernetes.client import Configuration

    configuration = Configuration()
    kconfig.load_kube_config(
        config_file=kubeconfig, client_configuration=configuration, persist_config=False
    )
    configuration.connection_pool_maxsize = pool
    return Kube(configuration, timeout=120)


def seed(
    kubeconfig: str,
    *,
    nodes: int,
    pods: range,
    workers: int,
    full_status: bool = False,
) -> dict[str, Any]:
    """Create the namespaces, the nodes and the pods numbered ``pods`` through the API server.

    Pods can be added in steps (0-10k, then 10k-50k, ...): what each is depends on its
    number alone. A pod's status goes through the ``status`` subresource, as a kubelet
    writes it. Only finished pods need it for the answer (the field selector leaves them
    out); the others stay ``Pending`` unless ``full_status``, which gives every pod its
    status, and so a second ``managedFields`` entry, at about three times the seeding time.
    """
    kube = connect(kubeconfig, workers + 4)
    started = time.monotonic()
    for ns in {namespace_of(i, kind_of(i)) for i in range(4000)} | {RESERVATION_NS}:
        try:
            kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": ns}})  # fmt: skip
        except Conflict:
            pass

    def make_node(i: int) -> None:
        try:
            kube.create(NODES, node_body(i))
        except Conflict:
            pass

    def make_pod(i: int) -> None:
        body, status = pod_body(i, nodes)
        meta = body["metadata"]
        try:
            kube.create(PODS, body)
        except Conflict:
            return
        if full_status or status["phase"] in ("Succeeded", "Failed"):
            kube.patch(PODS, meta["name"], {"status": status}, namespace=meta["namespace"],
                       subresource="status")  # fmt: skip

    def run(fn: Any, items: range, what: str) -> None:
        done, t0 = 0, time.monotonic()
        with cf.ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(fn, items, chunksize=64):
                done += 1
                if done % 10000 == 0:
                    rate = done / (time.monotonic() - t0)
                    print(f"  {what}: {done}/{len(items)} ({rate:.0f}/s)", file=sys.stderr,
                          flush=True)  # fmt: skip

    run(make_node, range(nodes), "nodes")
    run(make_pod, pods, "pods")
    elapsed = time.monotonic() - started
    sample, _ = pod_body(2, nodes)  # a running pod
    stored = kube.get(PODS, sample["metadata"]["name"], sample["metadata"]["namespace"])
    kube.close()
    return {
        "seconds": round(elapsed, 1),
        "pods_created": len(pods),
        "workers": workers,
        "full_status": full_status,
        "requests": len(pods) + (len(pods) if full_status else
                                 sum(1 for i in pods if kind_of(i).endswith("done"))),
        "pod_json_bytes": len(json.dumps(stored, separators=(",", ":"))),
        "pod_json_bytes_without_managed_fields": len(
            json.dumps(
                {
                    **stored,
                    "metadata": {
                        k: v for k, v in stored["metadata"].items() if k != "managedFields"
                    },
                },
                separators=(",", ":"),
            )  # fmt: skip
        ),
    }  # fmt: skip


# --- measuring -------------------------------------------------------------------------


def mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 1 << 62


TIME = "/usr/bin/time"  # GNU time: the peak RSS of exactly the command it runs


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class MemoryGuard:
    """Kill the measured commands (the children of the launchers started here) before
    the host runs out of memory, so the control plane is not what the OOM killer picks."""

    def __init__(self, launchers: list[int], floor: int) -> None:
        self.launchers, self.floor = launchers, floor
        self.killed_after: float | None = None
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.2):
            if mem_available() < self.floor:
                self.killed_after = time.monotonic() - self.t0
                for launcher in self.launchers:
                    for pid in _children(launcher):
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                return

    def done(self) -> None:
        self.stop.set()
        self.thread.join()


def _timed(argv: list[str], report: Path) -> list[str]:
    """``argv`` under GNU time, which writes the command's own peak RSS (KiB) to ``report``.

    Measuring through a small launcher matters: a child's ``ru_maxrss`` starts at the RSS
    of the process that forked it, and this one holds the seeding's memory.
    """
    return [TIME, "-f", "%M", "-o", str(report), *argv]


def _peak(report: Path) -> int:
    return int(report.read_text().strip().splitlines()[-1]) * 1024


def measure(argv: list[str], *, env: dict[str, str]) -> tuple[float, int, str]:
    """Run one command; (wall seconds, peak RSS in bytes, stdout)."""
    with tempfile.TemporaryDirectory() as tmp:
        report, out, err = Path(tmp, "rss"), Path(tmp, "out"), Path(tmp, "err")
        with out.open("wb") as o, err.open("wb") as e:
            t0 = time.monotonic()
            proc = subprocess.run(_timed(argv, report), stdout=o, stderr=e, env=env)
            wall = time.monotonic() - t0
        if proc.returncode not in (0, 1):
            tail = err.read_text()[-500:]
            raise RuntimeError(f"{argv[:4]} failed ({proc.returncode}): {tail}")
        return wall, _peak(report), out.read_text()


def measure_pipeline(
    left: list[str], right: list[str], *, env: dict[str, str], floor: int
) -> dict[str, Any]:
    """``left | right`` under a memory guard; wall time, each peak RSS, right's stdout."""
    with tempfile.TemporaryDirectory() as tmp:
        ra, rb, out = Path(tmp, "rss-left"), Path(tmp, "rss-right"), Path(tmp, "out")
        with out.open("wb") as o:
            t0 = time.monotonic()
            a = subprocess.Popen(_timed(left, ra), stdout=subprocess.PIPE, env=env)
            b = subprocess.Popen(_timed(right, rb), stdin=a.stdout, stdout=o, env=env)
            assert a.stdout is not None
            a.stdout.close()  # b holds the read end now
            guard = MemoryGuard([a.pid, b.pid], floor)
            a.wait()
            b.wait()
            wall = time.monotonic() - t0
            guard.done()
        result = {
            "seconds": wall,
            "kubectl_peak_rss": _peak(ra),
            "jq_peak_rss": _peak(rb),
            "finished": guard.killed_after is None,
            "stdout": out.read_text(),
        }
    result["peak_rss"] = result["kubectl_peak_rss"] + result["jq_peak_rss"]
    if guard.killed_after is None and (a.returncode or b.returncode):
        raise RuntimeError(f"pipeline failed ({a.returncode}, {b.returncode})")
    return result


def scan_only(kubeconfig: str, page_size: int) -> None:
    """Child process: the scan alone; prints what it found."""
    from fracctl.flows.context import Context
    from fracctl.flows.guards.scan import scan_fractional_pods

    config = Config()
    config = dataclasses.replace(config, pods=dataclasses.replace(config.pods, page_size=page_size))
    ctx = Context(config=config, kube_factory=lambda: Kube.connect(kubeconfig=kubeconfig))
    scan = scan_fractional_pods(ctx)
    for p in scan.pods:
        print(f"{p.namespace}/{p.name} {p.node or '-'}")
    print(f"# scanned={scan.scanned} pages={scan.pages} reservations={len(scan.reservations)}",
          file=sys.stderr)  # fmt: skip


def _list(kube: Kube, accept: str, limit: int, token: str | None) -> Any:
    kube._count("GET pods")
    return kube._send(  # the adapter's own connection pool, headers and TLS
        "GET",
        PODS.path(),
        query={"fieldSelector": FIELD_SELECTOR, "limit": limit, "continue": token},
        accept=accept,
        stream=True,
        timeout=300,
    )


_JSON_TOKEN = re.compile(rb'"continue":"([^"]*)"')


def wire(kube: Kube, accept: str, limit: int) -> dict[str, int]:
    """The scan's LIST requests with every body read to the end and dropped undecoded.

    The ``continue`` token is taken from the head of each body (a list's metadata comes
    before its items); that is the only thing read.
    """
    token: str | None = None
    pages = total = 0
    while True:
        resp = _list(kube, accept, limit, token)
        head = b""
        for chunk in resp.stream(1 << 20):
            head = head or chunk
            total += len(chunk)
        resp.release_conn()
        pages += 1
        if head.startswith(MAGIC):
            token = podpage.continue_token(head)
        else:
            m = _JSON_TOKEN.search(head[:4096])
            token = m.group(1).decode() if m else ""
        if not token:
            return {"pages": pages, "bytes": total}


def wire_only(kubeconfig: str, page_size: int) -> None:
    """Child process: the wire alone, the same requests as the scan."""
    kube = Kube.connect(kubeconfig=kubeconfig, timeout=300)
    print(json.dumps(wire(kube, POD_LIST, page_size)))


# --- levers: the ways the scan could read the pods, side by side in one process --------


def _old_scan(kube: Kube, limit: int, decode: Callable[[bytes], Any]) -> int:
    """The scan as it was: JSON metadata-only pages decoded whole, then a GET per match."""
    m = AnnotationMatcher.compile(Config().pods.fraction_annotations)
    token: str | None = None
    hits = []
    while True:
        resp = _list(kube, METADATA_LIST, limit, token)
        page = decode(resp.read())
        resp.release_conn()
        for item in page["items"]:
            meta = item["metadata"]
            if classify(meta, m, reservation_namespace=RESERVATION_NS).kind is PodKind.FRACTIONAL:
                hits.append((meta["namespace"], meta["name"]))
        token = page["metadata"].get("continue")
        if not token:
            break
    for ns, name in hits:
        kube.get_or_none(PODS, name, ns)
    return len(hits)


def _walk(kube: Kube, accept: str, limit: int, gets: bool) -> int:
    """Protobuf pages walked one after another (no second thread); GETs for the nodes."""
    m = AnnotationMatcher.compile(Config().pods.fraction_annotations)
    token: str | None = None
    hits = []
    while True:
        resp = _list(kube, accept, limit, token)
        page = podscan.scan_page(resp.read())
        resp.release_conn()
        for pod in page.pods:
            verdict = classify_pod(pod.namespace, pod.annotations, m,
                                   reservation_namespace=RESERVATION_NS)  # fmt: skip
            if verdict.kind is PodKind.FRACTIONAL:
                hits.append((pod.namespace, pod.name))
        token = page.continue_token
        if not token:
            break
    if gets:
        for ns, name in hits:
            kube.get_or_none(PODS, name, ns)
    return len(hits)


def _pod_pages(kube: Kube, limit: int) -> int:
    from fracctl.flows.context import Context
    from fracctl.flows.guards.scan import scan_fractional_pods

    config = Config()
    config = dataclasses.replace(config, pods=dataclasses.replace(config.pods, page_size=limit))
    return len(scan_fractional_pods(Context(config=config, kube_factory=lambda: kube)).pods)


def levers(kubeconfig: str, want: int, page_sizes: list[int]) -> list[dict[str, Any]]:
    """Each way of reading the pods once, wall and CPU seconds, in this process."""
    kube = Kube.connect(kubeconfig=kubeconfig, timeout=300)
    pb_meta = f"{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    cases: list[tuple[str, str, int, Callable[[], Any]]] = [
        ("wire", "JSON metadata-only", 500, lambda: wire(kube, METADATA_LIST, 500)),
        ("wire", "protobuf metadata-only", 500, lambda: wire(kube, pb_meta, 500)),
        ("wire", "protobuf pods", 500, lambda: wire(kube, POD_LIST, 500)),
        ("before: JSON metadata, json.loads, a GET per match", "JSON metadata-only", 500,
         lambda: _old_scan(kube, 500, json.loads)),
    ]  # fmt: skip
    try:
        import orjson

        cases.append(("JSON metadata, orjson, a GET per match", "JSON metadata-only", 500,
                      lambda: _old_scan(kube, 500, orjson.loads)))  # fmt: skip
    except ImportError:
        print("levers: orjson is not installed; its row is left out", file=sys.stderr)
    cases += [
        ("protobuf metadata walked, a GET per match", "protobuf metadata-only", 500,
         lambda: _walk(kube, pb_meta, 500, gets=True)),
        ("protobuf pods walked, one page after another", "protobuf pods", 500,
         lambda: _walk(kube, POD_LIST, 500, gets=False)),
    ]  # fmt: skip
    for size in page_sizes:
        cases.append(("wire", "protobuf pods", size, lambda size=size: wire(kube, POD_LIST, size)))
        cases.append(("fracctl scan: protobuf pods walked, next page fetched meanwhile",
                      "protobuf pods", size, lambda size=size: _pod_pages(kube, size)))  # fmt: skip
    out = []
    for how, representation, size, fn in cases:
        calls = sum(kube.calls.values())
        t0, c0 = time.monotonic(), time.process_time()
        got = fn()
        wall, cpu = time.monotonic() - t0, time.process_time() - c0
        if how != "wire" and got != want:
            raise RuntimeError(f"lever {how!r} found {got} pods, expected {want}")
        row = {"how": how, "representation": representation, "page_size": size,
               "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
               "requests": sum(kube.calls.values()) - calls}  # fmt: skip
        if how == "wire":
            row.update(requests=got["pages"], bytes=got["bytes"])
        print(f"  lever {how} [{representation}, {size}]: {wall:.2f} s", file=sys.stderr)
        out.append(row)
    kube.close()
    return out


# --- the report ------------------------------------------------------------------------


def _sizes(args: argparse.Namespace) -> list[int]:
    if args.sizes:
        return sorted(int(x.replace("_", "")) for x in args.sizes.split(","))
    if args.pods:
        return [args.pods]
    return [10_000] if args.quick else [10_000, 50_000, 100_000]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10,000 pods, 500 nodes, no levers")
    ap.add_argument("--sizes", help="pod counts to measure at, seeded in steps (10000,50000,...)")
    ap.add_argument("--pods", type=int, help="one pod count")
    ap.add_argument("--nodes", type=int, help="nodes (default: a twentieth of the largest size)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each fracctl command (median)")
    ap.add_argument("--baseline-repeat", type=int, default=1, help="kubectl | jq runs")
    ap.add_argument("--no-baseline", action="store_true", help="leave out kubectl | jq")
    ap.add_argument("--no-levers", action="store_true", help="leave out the lever comparison")
    ap.add_argument("--page-size", type=int, default=Config().pods.page_size)
    ap.add_argument("--workers", type=int, default=24, help="concurrent seeding requests")
    ap.add_argument(
        "--full-status", action="store_true",
        help="give every pod its kubelet status (a second write per pod), not only finished ones",
    )  # fmt: skip
    ap.add_argument(
        "--memory-floor", type=float, default=1.5,
        help="GiB of MemAvailable below which the baseline is killed",
    )  # fmt: skip
    ap.add_argument("--seed-only", action="store_true", help="seed, then stop (use with --keep)")
    ap.add_argument("--state-dir", help="control-plane state (kept with --keep; reused)")
    ap.add_argument("--keep", action="store_true", help="leave the state dir for a rerun")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out" / "preflight.json"))
    ap.add_argument("--scan-only", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    ap.add_argument("--wire-only", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args(argv)
    if args.scan_only:
        scan_only(args.scan_only, args.page_size)
        return 0
    if args.wire_only:
        wire_only(args.wire_only, args.page_size)
        return 0
    sizes = _sizes(args)
    nodes = args.nodes or max(500, sizes[-1] // 20)
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    jq = shutil.which("jq")
    if not jq and not args.no_baseline:
        print("bench_preflight: jq is needed for the baseline (or --no-baseline)", file=sys.stderr)
        return 2

    state = Path(args.state_dir or tempfile.mkdtemp(prefix="fracctl-bench-"))
    marker = state / "seeded.json"
    shape = {"nodes": nodes, "full_status": args.full_status}
    seeded: dict[str, Any] = json.loads(marker.read_text()) if marker.is_file() else {}
    if seeded.get("shape") != shape and (state / "etcd").exists():
        shutil.rmtree(state)  # seeded differently: start over
        seeded = {}
    seeded.setdefault("shape", shape)
    seeded.setdefault("pods", 0)
    seeded.setdefault("steps", [])
    print(f"control plane in {state} ({seeded['pods']} pods seeded already)", file=sys.stderr)
    cp = controlplane.start(state, binaries=controlplane.find_binaries(REPO))
    results: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "mem_total": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "page_size": args.page_size,
        "nodes": nodes,
        "sizes": [],
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRACCTL_", "KUBECONFIG"))}
    env["PYTHONPATH"] = str(REPO)
    me = [sys.executable, str(Path(__file__).resolve())]
    page = ["--page-size", str(args.page_size)]
    try:
        for size in sizes:
            if size > seeded["pods"]:
                print(f"seeding pods {seeded['pods']}-{size} ({nodes} nodes) ...", file=sys.stderr)
                step = seed(cp.kubeconfig, nodes=nodes, pods=range(seeded["pods"], size),
                            workers=args.workers, full_status=args.full_status)  # fmt: skip
                seeded["steps"].append(step)
                seeded["pods"] = size
                marker.write_text(json.dumps(seeded))
                print(f"seeded in {step['seconds']:.0f} s", file=sys.stderr)
            elif size < seeded["pods"]:
                print(f"skipping {size}: {seeded['pods']} pods are seeded", file=sys.stderr)
                continue
            if args.seed_only:
                continue
            results["sizes"].append(
                measure_size(args, cp.kubeconfig, size, nodes, env, me, page, kubectl, jq)
            )
        if args.seed_only:
            return 0
        last = seeded["steps"][-1]
        results["seeding"] = seeded["steps"]
        results["pod_json_bytes"] = last["pod_json_bytes"]
        results["pod_json_bytes_without_managed_fields"] = last[
            "pod_json_bytes_without_managed_fields"
        ]
        if not args.no_levers and not args.quick and results["sizes"]:
            want = len(truth(seeded["pods"], nodes))
            print("levers ...", file=sys.stderr)
            results["levers"] = levers(cp.kubeconfig, want, [250, 500, 1000, 2000])
    finally:
        cp.stop()
        if not args.keep:
            shutil.rmtree(state, ignore_errors=True)

    report.save(args.out, results, "\n".join(report.preflight_section(results)))
    return 0


def measure_size(
    args: argparse.Namespace,
    kubeconfig: str,
    size: int,
    nodes: int,
    env: dict[str, str],
    me: list[str],
    page: list[str],
    kubectl: str,
    jq: str | None,
) -> dict[str, Any]:
    """Every tool at one pod count, each answer checked against the seeded truth first."""
    want = truth(size, nodes)
    wire_cmd = [*me, "--wire-only", kubeconfig, *page]
    scan_cmd = [*me, "--scan-only", kubeconfig, *page]
    pre_cmd = [sys.executable, "-m", "fracctl", "--kubeconfig", kubeconfig, "preflight",
               "-o", "json", "--selector", OPT_IN]  # fmt: skip
    kc_get = [kubectl, "--kubeconfig", kubeconfig, "get", "pods", "-A", "-o", "json",
              "--field-selector", FIELD_SELECTOR]  # fmt: skip
    measure(scan_cmd, env=env)  # warm-up (the server's caches and the page cache), not counted
    runs: dict[str, list[dict[str, Any]]] = {"wire": [], "scan": [], "preflight": []}
    for r in range(args.repeat):
        print(f"{size} pods: run {r + 1}/{args.repeat}", file=sys.stderr)
        wall, rss, out = measure(wire_cmd, env=env)
        runs["wire"].append({"seconds": wall, "peak_rss": rss, **json.loads(out)})

        wall, rss, out = measure(scan_cmd, env=env)
        got = set(out.splitlines())
        if got != want:
            raise RuntimeError(f"scan found {len(got)} pods, expected {len(want)}")
        runs["scan"].append({"seconds": wall, "peak_rss": rss})

        wall, rss, out = measure(pre_cmd, env=env)
        report = json.loads(out)
        found = {f"{p['namespace']}/{p['name']} {p['node']}"
                 for p in report["pods"]["fractional"]}  # fmt: skip
        if found != want:
            raise RuntimeError(f"preflight found {len(found)} pods, expected {len(want)}")
        runs["preflight"].append({"seconds": wall, "peak_rss": rss})
    if not args.no_baseline and jq:
        runs["kubectl_jq"] = []
        for r in range(args.baseline_repeat):
            print(f"{size} pods: kubectl | jq run {r + 1}/{args.baseline_repeat}", file=sys.stderr)
            res = measure_pipeline(
                kc_get, [jq, "-r", JQ_FILTER], env=env, floor=int(args.memory_floor * 2**30)
            )
            got = set(res.pop("stdout").splitlines())
            if res["finished"] and got != want:
                raise RuntimeError(f"kubectl | jq found {len(got)} pods, expected {len(want)}")
            runs["kubectl_jq"].append(res)
            if not res["finished"]:
                break  # it will not fit the next time either
    return {"pods": size, "nodes": nodes, "expected_fractional": len(want), "runs": runs}


if __name__ == "__main__":
    sys.exit(main())
