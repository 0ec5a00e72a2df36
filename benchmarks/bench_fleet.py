"""Benchmark: ``fracctl drift`` over a fleet of 3 clusters vs 3 single-cluster runs in a row.

Starts three kube-apiserver + etcd pairs and seeds each with the same N objects
(ConfigMaps, Deployments and the GpuFractioningConfig, as in bench_drift: some in place
changes, two immutable ones), writes the desired state in one git repository and one
kubeconfig with a context per cluster. Then, each ``--repeat`` times, in new processes
as a shell loop would run them:

* ``single <ctx>``: ``fracctl --context <ctx> drift --all -o json`` for each cluster;
* ``sequential``: the three single runs one after the other (their sum, as measured);
* ``fleet``: ``fracctl --context a --context b --context c drift --all -o json``.

The fleet's verdicts are checked against the seeded truth for every cluster before any
time counts. The figure to look at: the fleet against the slowest single cluster and
against the sequential sum. Also reported: the CPU seconds fracctl itself used, and
those the three API servers and etcds used, during the fleet run: on one small machine
the three control planes share its cores, which bounds the fleet's wall time however
the client works.

``--rtt MS`` puts each API server behind a loopback proxy that delays every byte by
half that in each direction, as for clusters in other regions: the figure then shows
the waiting a fleet overlaps, with the servers' CPU no longer the only bound.

    python benchmarks/bench_fleet.py                 # 200 objects per cluster
    python benchmarks/bench_fleet.py --objects 1000
    python benchmarks/bench_fleet.py --rtt 20        # clusters 20 ms away
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.bench_drift import seed, write_repo  # noqa: E402
from fracctl import config as cfg  # noqa: E402
from fracctl.adapters.kube import Kube  # noqa: E402
from fracctl.sandbox import controlplane  # noqa: E402
from fracctl.sandbox.flow import install_crd  # noqa: E402

NAMES = ("eu", "us", "ap")


class DelayProxy:
    """Loopback TCP proxies that deliver every chunk ``delay`` seconds after it was read."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def forward(self, port: int) -> int:
        """A new local port whose connections reach ``port``, delayed."""

        async def listen() -> int:
            server = await asyncio.start_server(
                lambda r, w: self._client(r, w, port), "127.0.0.1", 0
            )
            return int(server.sockets[0].getsockname()[1])

        return asyncio.run_coroutine_threadsafe(listen(), self.loop).result()

    async def _client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                await asyncio.sleep(max(0.0, due - self.loop.time()))
                writer.write(data)
                await writer.drain()
            writer.close()

        sender = asyncio.ensure_future(deliver())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((self.loop.time() + self.delay, data))
        except ConnectionError:
            pass
        queue.put_nowait((0.0, b""))
        await sender

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes used so far (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick


def kubeconfig(
    planes: dict[str, controlplane.ControlPlane], path: Path, ports: dict[str, int] | None = None
) -> None:
    clusters, users, contexts = [], [], []
    for name, cp in planes.items():
        doc = json.loads(Path(cp.kubeconfig).read_text())
        cluster = doc["clusters"][0]["cluster"]
        if ports:
            cluster["server"] = f"https://127.0.0.1:{ports[name]}"
        clusters.append({"name": name, "cluster": cluster})
        users.append({"name": name, "user": doc["users"][0]["user"]})
        contexts.append({"name": name, "context": {"cluster": name, "user": name}})
    path.write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
             "contexts": contexts, "current-context": contexts[0]["name"]}
        )
    )  # fmt: skip
    path.chmod(0o600)


def run(argv: list[str]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 1, proc.stderr  # every cluster has drift
    data: dict[str, Any] = json.loads(proc.stdout)
    return seconds, data


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--objects", type=int, default=200, help="objects per cluster")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--rtt", type=float, default=0.0, help="round trip to each cluster, ms")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out" / "fleet.json"))
    args, _ = ap.parse_known_args(argv)
    if args.quick:
        args.repeat = 1

    with tempfile.TemporaryDirectory(prefix="fracctl-bench-fleet-") as tmp:
        root = Path(tmp)
        binaries = controlplane.find_binaries(REPO)
        planes: dict[str, controlplane.ControlPlane] = {}
        proxy = DelayProxy(args.rtt / 2000) if args.rtt > 0 else None
        try:
            expected: dict[str, int] = {}
            desired: list[dict[str, object]] = []
            for name in NAMES:
                planes[name] = controlplane.start(root / name, binaries=binaries)
                admin = Kube.connect(kubeconfig=planes[name].kubeconfig)
                install_crd(admin, cfg.Config())
                desired, expected, _live = seed(admin, args.objects)
            repo = write_repo(root, desired)
            ports = {n: proxy.forward(cp.port) for n, cp in planes.items()} if proxy else None
            kubeconfig(planes, root / "kubeconfig", ports)
            cfg_file = root / "fracctl.yaml"
            cfg_file.write_text(
                f"kube:\n  kubeconfig: {root / 'kubeconfig'}\n"
                f"git:\n  repo: {repo}\n  path: apps\n  renderer: plain\n"
            )
            base = [sys.executable, "-m", "fracctl", "-c", str(cfg_file)]
            drift = ["drift", "--all", "-o", "json"]
            fleet_argv = [*base, *(w for n in NAMES for w in ("--context", n)), *drift]

            _, check = run(fleet_argv)  # warm the caches; check every cluster's verdicts
            for name in NAMES:
                counts = check["clusters"][name]["result"]["summary"]
                got = {k: v for k, v in counts.items() if v}
                assert got == expected, (name, got, expected)

            singles: dict[str, list[float]] = {n: [] for n in NAMES}
            sequential: list[float] = []
            fleet: list[float] = []
            own_cpu: list[float] = []
            server_cpu: list[float] = []
            servers = [pid for cp in planes.values() for pid in (cp.apiserver_pid, cp.etcd_pid)]
            for _ in range(args.repeat):
                total = 0.0
                for name in NAMES:
                    seconds, report = run([*base, "--context", name, *drift])
                    assert report["summary"] == check["clusters"][name]["result"]["summary"]
                    singles[name].append(seconds)
                    total += seconds
                sequential.append(total)
                before, server_before = children_cpu(), cpu_seconds(servers)
                seconds, _ = run(fleet_argv)
                fleet.append(seconds)
                own_cpu.append(children_cpu() - before)
                server_cpu.append(cpu_seconds(servers) - server_before)

            def med(xs: list[float]) -> float:
                return statistics.median(xs)

            where = f", {args.rtt:g} ms round trip" if args.rtt else ""
            print(
                f"{args.objects} objects per cluster, 3 clusters{where}, "
                f"{os.cpu_count()} CPUs, median of {args.repeat}"
            )
            for name in NAMES:
                print(f"  single {name:<4}          {med(singles[name]):6.2f} s")
            slowest = max(med(v) for v in singles.values())
            print(f"  sequential (3 runs)    {med(sequential):6.2f} s")
            print(f"  fleet (one run)        {med(fleet):6.2f} s")
            print(
                f"  fleet / slowest single {med(fleet) / slowest:6.2f}x   "
                f"fleet / sequential {med(fleet) / med(sequential):6.2f}x"
            )
            print(
                f"  during the fleet run: fracctl used {med(own_cpu):.2f} CPU s, the API "
                f"servers and etcds {med(server_cpu):.2f} CPU s"
            )
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(
                json.dumps(
                    {
                        "objects": args.objects,
                        "rtt_ms": args.rtt,
                        "singles": singles,
                        "sequential": sequential,
                        "fleet": fleet,
                        "fracctl_cpu": own_cpu,
                        "servers_cpu": server_cpu,
                    },
                    indent=2,
                )
            )
        finally:
            if proxy is not None:
                proxy.stop()
            for cp in planes.values():
                cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
