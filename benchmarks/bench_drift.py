"""Benchmark: ``fracctl drift --all`` over many rendered objects, against ``kubectl diff``.

Starts its own kube-apiserver + etcd, creates N objects (ConfigMaps and Deployments in
one namespace, plus the GpuFractioningConfig), writes the desired state as plain YAML in
a fresh git repository with a few objects changed (one immutable selector, some
in-place changes), then measures, each ``--repeat`` times:

* ``render``: :func:`fracctl.flows.render.render` of the revision (git export + YAML);
* ``check``: :func:`fracctl.flows.drift.check_objects` on the rendered objects, with
  the API calls it made (one LIST per kind, one dry run per differing object);
* ``cli``: the whole ``fracctl drift --all -o json`` command in a new process;
* ``kubectl diff``: ``kubectl diff --server-side -f DIR``, which reads and dry-runs
  every object (only when kubectl is on PATH). It stops at the first object the API
  server rejects, so it gets the manifests without the two immutable changes.

Verdict counts are checked against the seeded truth before any time counts.

    python benchmarks/bench_drift.py                 # 200 objects
    python benchmarks/bench_drift.py --objects 2000
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fracctl import config as cfg  # noqa: E402
from fracctl.adapters.git import init_repo  # noqa: E402
from fracctl.adapters.kube import Kube  # noqa: E402
from fracctl.core.kube.resources import NAMESPACES  # noqa: E402
from fracctl.flows import drift as drift_flow  # noqa: E402
from fracctl.flows.context import Context  # noqa: E402
from fracctl.flows.render import render  # noqa: E402
from fracctl.sandbox import controlplane  # noqa: E402
from fracctl.sandbox.flow import install_crd  # noqa: E402

NS = "bench-drift"


def configmap(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"cm-{i:05}", "namespace": NS, "labels": {"app": "bench"}},
        "data": {"index": str(i), "payload": "x" * 200},
    }


def deployment(i: int) -> dict[str, Any]:
    labels = {"app": f"web-{i}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"web-{i:05}", "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.invalid/web:1",
                            "ports": [{"containerPort": 8080}],
                            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                        }
                    ]
                },
            },
        },
    }


def target(selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "gpu-fractioning.kai.scheduler/v1alpha1",
        "kind": "GpuFractioningConfig",
        "metadata": {"name": "default"},
        "spec": {"nodeSelector": selector},
    }


def seed(kube: Kube, n: int) -> tuple[list[dict[str, Any]], dict[str, int], list[dict[str, Any]]]:
    """Create the live objects; return the desired ones, the expected verdicts, the live."""
    kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    n_dep = max(2, n // 10)
    n_cm = n - n_dep - 1
    live: list[dict[str, Any]] = [configmap(i) for i in range(n_cm)]
    live += [deployment(i) for i in range(n_dep)]
    live.append(target({"example.org/gpu-class": "rtx-pro-6000"}))
    for obj in live:
        kube.create(kube.resolve(obj["apiVersion"], obj["kind"]), obj)
    desired = json.loads(json.dumps(live))
    desired[-1]["spec"]["nodeSelector"] = {"example.org/gpu-fractions": "enabled"}
    in_place = 0
    for i in range(0, n_cm, 50):  # every 50th ConfigMap changes its data
        desired[i]["data"]["index"] = f"{i}-changed"
        in_place += 1
    first_dep = desired[n_cm]
    first_dep["spec"]["replicas"] = 3
    in_place += 1
    second = desired[n_cm + 1]
    second["spec"]["selector"]["matchLabels"]["app"] = "moved"
    second["spec"]["template"]["metadata"]["labels"]["app"] = "moved"
    expected = {
        "needs-recreate": 2,
        "applies-in-place": in_place,
        "in-sync": len(desired) - 2 - in_place,
    }
    return desired, expected, live


def write_repo(root: Path, desired: list[dict[str, Any]]) -> Path:
    repo = root / "gitops"
    (repo / "apps").mkdir(parents=True)
    chunk = 50
    for start in range(0, len(desired), chunk):
        docs = desired[start : start + chunk]
        (repo / "apps" / f"part-{start // chunk:03}.yaml").write_text(yaml.safe_dump_all(docs))
    init_repo(repo, message="desired")
    return repo


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times, result


def fmt(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1000:8.1f} ms   min {min(times) * 1000:8.1f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out" / "drift.json"))
    args, _ = ap.parse_known_args(argv)
    if args.quick:
        args.repeat = 2

    with tempfile.TemporaryDirectory(prefix="fracctl-bench-drift-") as tmp:
        root = Path(tmp)
        cp = controlplane.start(root / "cp", binaries=controlplane.find_binaries(REPO))
        try:
            admin = Kube.connect(kubeconfig=cp.kubeconfig)
            install_crd(admin, cfg.Config())
            t0 = time.perf_counter()
            desired, expected, live = seed(admin, args.objects)
            print(f"seeded {len(desired)} objects in {time.perf_counter() - t0:.1f}s")
            repo = write_repo(root, desired)
            config = cfg.Config(
                kube=cfg.KubeConfig(kubeconfig=cp.kubeconfig),
                git=cfg.GitConfig(repo=str(repo), path="apps", renderer="plain"),
            )
            kube = Kube.connect(kubeconfig=cp.kubeconfig)
            ctx = Context(config=config, kube_factory=lambda: kube)

            render_times, rendered = timed(lambda: render(ctx), args.repeat)
            assert len(rendered.objects) == len(desired)

            def check() -> Any:
                kube.calls.clear()
                return drift_flow.check_objects(ctx, rendered.objects, desired=rendered)

            check_times, report = timed(check, args.repeat)
            counts = {k: v for k, v in report.counts().items() if v}
            assert counts == expected, (counts, expected)
            calls = dict(sorted(kube.calls.items()))

            cfg_file = root / "fracctl.yaml"
            cfg_file.write_text(
                f"kube:\n  kubeconfig: {cp.kubeconfig}\n"
                f"git:\n  repo: {repo}\n  path: apps\n  renderer: plain\n"
            )
            argv = [sys.executable, "-m", "fracctl", "-c", str(cfg_file), "drift", "--all"]

            def cli() -> None:
                proc = subprocess.run([*argv, "-o", "json"], capture_output=True, text=True)
                assert proc.returncode == 1, proc.stderr
                assert json.loads(proc.stdout)["summary"]["needs-recreate"] == 2

            cli_times, _ = timed(cli, args.repeat)

            kubectl_times: list[float] = []
            kubectl_requests = 0
            if shutil.which("kubectl"):
                # kubectl diff stops at the first object the API server rejects, so it
                # gets the manifests without the two immutable changes: a full pass.
                manifests = root / "manifests"
                manifests.mkdir()
                accepted = [*desired[:-1], live[-1]]
                n_dep = max(2, args.objects // 10)
                second = len(desired) - 1 - n_dep + 1
                accepted[second] = live[second]
                (manifests / "all.yaml").write_text(yaml.safe_dump_all(accepted))

                def kubectl_diff() -> None:
                    proc = subprocess.run(
                        [
                            "kubectl",
                            "--kubeconfig",
                            cp.kubeconfig,
                            "diff",
                            "--server-side",
                            "--force-conflicts",
                            "-f",
                            str(manifests),
                        ],
                        capture_output=True,
                        text=True,
                    )
                    assert proc.returncode == 1, proc.stderr[-500:]  # 1: differences

                kubectl_times, _ = timed(kubectl_diff, args.repeat)
                verbose = subprocess.run(
                    ["kubectl", "--kubeconfig", cp.kubeconfig, "-v=6", "diff", "--server-side"]
                    + ["--force-conflicts", "-f", str(manifests)],
                    capture_output=True,
                    text=True,
                )
                assert verbose.returncode == 1, verbose.stderr[-500:]
                kubectl_requests = sum(
                    1 for ln in verbose.stderr.splitlines() if " in " in ln and "https://" in ln
                )
        finally:
            cp.stop()

    print(f"objects: {len(desired)}  verdicts: {counts}")
    print(f"API calls of one check: {calls}  (total {sum(calls.values())})")
    print(f"render (git export + YAML)     {fmt(render_times)}")
    print(f"check_objects (drift)          {fmt(check_times)}")
    print(f"fracctl drift --all (process)  {fmt(cli_times)}")
    if kubectl_times:
        print(
            f"kubectl diff --server-side     {fmt(kubectl_times)}"
            f"   ({kubectl_requests} API requests)"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "objects": len(desired),
                "verdicts": counts,
                "api_calls": calls,
                "render": render_times,
                "check": check_times,
                "process": cli_times,
                "kubectl_diff": kubectl_times,
                "kubectl_requests": kubectl_requests,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
