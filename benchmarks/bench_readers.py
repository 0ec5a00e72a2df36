"""Benchmark: every command that reads pods or nodes at cluster scale, against the wire.

Seeds one kube-apiserver + etcd with bench_preflight's pods and nodes (its seeding
code, the same pods), adding pods in steps, and at each size runs, each in its own
process under GNU ``time`` (wall and that process's own peak RSS):

* ``wire``: the scan's own LIST requests with every body read to the end, undecoded;
* ``fracctl preflight -o json``, ``fracctl doctor -o json``, ``fracctl nodes check -o
  json``, each as the console script's module (``python -m fracctl``), and preflight as
  a fleet run (``--all-contexts``: the fleet of this one cluster);
* ``probe pool``: ``fracctl probe``'s reading of the pool (the denied-node refusal)
  alone, since a whole probe waits for a scheduler that is not running here;
* ``doctor, pods read whole``: what doctor did before (every unfinished pod on a GPU
  node listed as JSON and kept), only up to ``--whole-max`` pods.

Each answer is checked against the seeded truth before its time counts.

    python benchmarks/bench_readers.py            # 10k, 50k, 100k pods, 5,000 nodes
    python benchmarks/bench_readers.py --quick    # 10k pods, 500 nodes
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import bench_preflight as bp  # noqa: E402
from benchmarks import report  # noqa: E402
from fracctl.config import Config  # noqa: E402
from fracctl.core.doctor.model import LISTED  # noqa: E402
from fracctl.sandbox import controlplane  # noqa: E402

COMMANDS = ("wire", "preflight", "fleet preflight", "doctor", "nodes check", "probe pool")


def expected(pods: int, nodes: int) -> dict[str, Any]:
    """What each command must report on the seeded cluster."""
    kinds = [bp.kind_of(i) for i in range(pods)]
    return {
        "fractional": bp.truth(pods, nodes),
        # Every node is a GPU node and every plain pod runs on one, asking for no GPU.
        "strays": sum(1 for k in kinds if k == "plain"),
        "fractional_unfinished": sum(1 for k in kinds if k == "fractional"),
    }


def probe_pool_only(kubeconfig: str) -> None:
    """Child process: ``fracctl probe``'s pool reading, the default pool."""
    from fracctl.adapters.kube import Kube
    from fracctl.flows.context import Context
    from fracctl.flows.guards.probe import refuse_denied_pool

    config = Config()
    ctx = Context(config=config, kube_factory=lambda: Kube.connect(kubeconfig=kubeconfig))
    refuse_denied_pool(ctx, {config.labels.opt_in_key: config.labels.opt_in_value})
    print(json.dumps({"refused": False}))


def doctor_whole(kubeconfig: str, page_size: int) -> None:
    """Child process: doctor with its pods read whole, as JSON, the way it read them before."""
    from fracctl.adapters.kube import Kube
    from fracctl.core.doctor import diagnose, gpu_nodes
    from fracctl.core.fractions.fractional import (
        AnnotationMatcher,
        PodKind,
        classify,
        unfinished_selector,
    )
    from fracctl.core.kube.resources import PODS
    from fracctl.flows.context import Context
    from fracctl.flows.doctor import settings, snapshot

    config = Config()
    config = dataclasses.replace(config, pods=dataclasses.replace(config.pods, page_size=page_size))
    ctx = Context(config=config, kube_factory=lambda: Kube.connect(kubeconfig=kubeconfig))
    s = settings(ctx)
    snap = snapshot(ctx, s)
    m = AnnotationMatcher.compile(s.pods.fraction_annotations)
    gpus = {n["metadata"]["name"] for n in gpu_nodes(snap.nodes, s)}
    res = s.pods.reservation_namespace
    snap.pods = list(ctx.kube.list(PODS, namespace=res))
    snap.strays_unlisted = 0  # every one of them is read whole below
    for page in ctx.kube.list_pages(PODS, field_selector=unfinished_selector(), limit=page_size):
        for pod in page.get("items") or ():
            meta = pod.get("metadata") or {}
            if meta.get("namespace") == res:
                continue
            kind = classify(meta, m, reservation_namespace=res).kind
            if kind is not PodKind.OTHER or (pod.get("spec") or {}).get("nodeName") in gpus:
                snap.pods.append(pod)
    json.dump(diagnose(snap, s).to_dict(), sys.stdout, indent=2)


def _doctor_check(out: str, want: dict[str, Any]) -> None:
    findings = {f["check"]: f for f in json.loads(out)["findings"]}
    found = findings.get("gpu-nodes-for-gpu-pods", {})
    listed = len(found.get("subjects", []))
    total = listed + found.get("unlisted", 0)
    if (
        total != want["strays"]
        or listed != min(want["strays"], LISTED)
        or "fractional-pods-non-root" in findings
    ):
        raise RuntimeError(
            f"doctor found {total} CPU pods on GPU nodes ({listed} listed), not {want['strays']}"
        )


def measure_size(
    args: argparse.Namespace, kubeconfig: str, size: int, nodes: int, env: dict[str, str]
) -> dict[str, Any]:
    """Every command at one pod count, each answer checked first."""
    want = expected(size, nodes)
    page = ["--page-size", str(args.page_size)]
    fracctl = [sys.executable, "-m", "fracctl", "--kubeconfig", kubeconfig]
    me = [sys.executable, str(Path(__file__).resolve())]
    cmds: dict[str, list[str]] = {
        "wire": [sys.executable, str(Path(bp.__file__).resolve()), "--wire-only", kubeconfig,
                 *page],
        "preflight": [*fracctl, "preflight", "-o", "json", "--selector", bp.OPT_IN],
        # The same preflight as a fleet run (every context of the kubeconfig: this one).
        "fleet preflight": [*fracctl, "--all-contexts", "preflight", "-o", "json",
                            "--selector", bp.OPT_IN],
        "doctor": [*fracctl, "doctor", "-o", "json"],
        "nodes check": [*fracctl, "nodes", "check", "-o", "json"],
        "probe pool": [*me, "--probe-pool-only", kubeconfig],
    }  # fmt: skip
    if size <= args.whole_max:
        cmds["doctor, pods read whole"] = [*me, "--doctor-whole", kubeconfig, *page]

    def check(name: str, out: str) -> None:
        if name.endswith("preflight"):
            got = json.loads(out)
            if name == "fleet preflight":
                (cluster,) = got["clusters"].values()
                got = cluster["result"]
            found = {f"{p['namespace']}/{p['name']} {p['node']}"
                     for p in got["pods"]["fractional"]}  # fmt: skip
            if found != want["fractional"]:
                raise RuntimeError(f"{name} found {len(found)} fractional pods")
        elif name.startswith("doctor"):
            _doctor_check(out, want)
        elif name == "nodes check" and len(json.loads(out)["nodes"]) != nodes:
            raise RuntimeError("nodes check did not list every node")

    bp.measure(cmds["doctor"], env=env)  # warm-up: the server's caches, not counted
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in cmds}
    for r in range(args.repeat):
        print(f"{size} pods: run {r + 1}/{args.repeat}", file=sys.stderr)
        for name, argv in cmds.items():
            if name == "doctor, pods read whole" and r >= args.whole_repeat:
                continue
            wall, rss, out = bp.measure(argv, env=env)
            check(name, out)
            runs[name].append({"seconds": round(wall, 3), "peak_rss": rss})
            print(f"  {name}: {wall:.2f} s, {rss / 2**20:.0f} MiB", file=sys.stderr)
    return {"pods": size, "nodes": nodes, "strays": want["strays"], "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10,000 pods, 500 nodes")
    ap.add_argument("--sizes", help="pod counts, seeded in steps (default 10000,50000,100000)")
    ap.add_argument("--nodes", type=int, help="nodes (default 5,000; 500 with --quick)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command (median)")
    ap.add_argument("--whole-max", type=int, default=50_000,
                    help="largest pod count at which doctor's whole-pod reading runs")  # fmt: skip
    ap.add_argument("--whole-repeat", type=int, default=1, help="runs of the whole-pod reading")
    ap.add_argument("--page-size", type=int, default=Config().pods.page_size)
    ap.add_argument("--workers", type=int, default=24, help="concurrent seeding requests")
    ap.add_argument("--state-dir", help="control-plane state (kept with --keep; reused)")
    ap.add_argument("--keep", action="store_true", help="leave the state dir for a rerun")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out" / "readers.json"))
    ap.add_argument("--probe-pool-only", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    ap.add_argument("--doctor-whole", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args(argv)
    if args.probe_pool_only:
        probe_pool_only(args.probe_pool_only)
        return 0
    if args.doctor_whole:
        doctor_whole(args.doctor_whole, args.page_size)
        return 0
    if args.sizes:
        sizes = sorted(int(x.replace("_", "")) for x in args.sizes.split(","))
    else:
        sizes = [10_000] if args.quick else [10_000, 50_000, 100_000]
    nodes = args.nodes or (500 if args.quick else 5_000)

    state = Path(args.state_dir or tempfile.mkdtemp(prefix="fracctl-bench-readers-"))
    marker = state / "seeded.json"
    shape = {"nodes": nodes, "full_status": False}
    seeded: dict[str, Any] = json.loads(marker.read_text()) if marker.is_file() else {}
    if seeded.get("shape") != shape and (state / "etcd").exists():
        shutil.rmtree(state)
        seeded = {}
    seeded.setdefault("shape", shape)
    seeded.setdefault("pods", 0)
    seeded.setdefault("steps", [])
    print(f"control plane in {state} ({seeded['pods']} pods seeded already)", file=sys.stderr)
    cp = controlplane.start(state, binaries=controlplane.find_binaries(REPO))
    results: dict[str, Any] = {"page_size": args.page_size, "nodes": nodes, "sizes": []}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRACCTL_", "KUBECONFIG"))}
    env["PYTHONPATH"] = str(REPO)
    try:
        for size in sizes:
            if size > seeded["pods"]:
                print(f"seeding pods {seeded['pods']}-{size} ({nodes} nodes) ...", file=sys.stderr)
                step = bp.seed(cp.kubeconfig, nodes=nodes, pods=range(seeded["pods"], size),
                               workers=args.workers)  # fmt: skip
                seeded["steps"].append(step)
                seeded["pods"] = size
                marker.write_text(json.dumps(seeded))
                print(f"seeded in {step['seconds']:.0f} s; restarting the control plane",
                      file=sys.stderr)  # fmt: skip
                # Just after the writes the server is still digesting them (its watch
                # cache, etcd's compaction), and one list can take half as long again
                # as the same list a minute later: each size is measured on a fresh start.
                cp.stop()
                cp = controlplane.start(state, binaries=controlplane.find_binaries(REPO))
            elif size < seeded["pods"]:
                print(f"skipping {size}: {seeded['pods']} pods are seeded", file=sys.stderr)
                continue
            results["sizes"].append(measure_size(args, cp.kubeconfig, size, nodes, env))
            report.save(args.out, results, "\n".join(report.readers_section(results)))
    finally:
        cp.stop()
        if not args.keep:
            shutil.rmtree(state, ignore_errors=True)
    return 0


def medians(size: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Each command's median wall and median peak RSS at one size."""
    return {
        name: (
            statistics.median(r["seconds"] for r in runs),
            statistics.median(r["peak_rss"] for r in runs),
        )
        for name, runs in size["runs"].items()
        if runs
    }


if __name__ == "__main__":
    sys.exit(main())
