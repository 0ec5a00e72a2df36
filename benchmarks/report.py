"""Write ``benchmarks/RESULTS.md`` and the PNG plots from the benchmarks' JSON results.

    python benchmarks/report.py            # reads benchmarks/out/*.json

Every figure comes from ``benchmarks/out/`` as the last ``make bench`` left it; a
benchmark with no result file is reported as not run. Plots need matplotlib (the
``bench`` extra); without it the tables are still written and the plots are left as
they were.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = HERE / "out"
PLOTS = HERE / "plots"


def save(path: str | Path, results: Any, text: str) -> None:
    """Write one benchmark's results where this report reads them; print its summary."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{text}\nresults: {out}")


def load(name: str) -> Any:
    path = OUT / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def secs(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def spread(xs: list[float]) -> str:
    """median (min-max) of some seconds."""
    return f"{secs(statistics.median(xs))} ({secs(min(xs))}-{secs(max(xs))})"


def _version(argv: list[str]) -> str:
    if not shutil.which(argv[0]):
        return "not installed"
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


def machine() -> list[str]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    sys.path.insert(0, str(REPO))
    from fracctl import __version__

    build = (REPO / "scripts" / "build-control-plane.sh").read_text()
    k8s = build.split('K8S_VERSION="${FRACCTL_K8S_VERSION:-', 1)[1].split("}", 1)[0]
    etcd = build.split('ETCD_VERSION="${FRACCTL_ETCD_VERSION:-', 1)[1].split("}", 1)[0]
    try:
        import orjson

        orjson_version = orjson.__version__
    except ImportError:
        orjson_version = "not installed"
    return [
        f"- **Machine:** {os.cpu_count()} CPUs ({model or platform.machine()}), "
        f"{ram / 2**30:.1f} GiB RAM, Linux {platform.release()}; the API server, etcd and "
        "the measured tools share these CPUs.",
        f"- **Versions:** fracctl {__version__}, Python {platform.python_version()}, "
        f"kube-apiserver {k8s}, etcd {etcd} (JSON storage), "
        f"kubectl {_version(['kubectl', 'version', '--client']).split(':')[-1].strip()}, "
        f"{_version(['jq', '--version'])}, "
        f"orjson {orjson_version}.",
    ]


# --- sections ---------------------------------------------------------------------------


def preflight_section(data: Any) -> list[str]:
    lines = ["## preflight: the fractional-pod scan against the wire and `kubectl | jq`", ""]
    if not data:
        return [*lines, "Not run.", ""]
    lines += [
        "    python benchmarks/bench_preflight.py              # 10k, 50k, 100k pods; levers",
        "    python benchmarks/bench_preflight.py --quick      # 10k pods",
        "",
        "**Data.** Pods shaped like Deployment pods (two containers with env, ports, "
        "resources, probes, volumes, owner reference, labels, annotations), created through "
        "the API server; finished pods get their status through the `status` subresource as "
        "a kubelet writes it, the rest stay `Pending` (the scan reads no more of a pod than "
        "its phase). 1% of pods are fractional in four annotation styles, a tenth of those "
        "and 2% of all pods have finished, 0.05% are reservation pods: 100,000 pods hold 900 "
        "running fractional pods. Pods are added in steps and measured at each size; nodes: "
        f"{data['nodes']:,}. Stored pod: {data['pod_json_bytes']:,} bytes of JSON, "
        f"{data['pod_json_bytes_without_managed_fields']:,} without `managedFields`.",
        "",
        "**Method.** Each tool runs in its own process under GNU `time` (its own peak RSS); "
        "every answer is checked against the seeded truth before its time counts. *wire* is "
        "the scan's own requests (same page size, field selector and `Accept` header, the "
        "adapter's connection pool) with every body read to the end and dropped undecoded: "
        "the time the API server needs to send the pages. *fracctl scan* is "
        "`scan_fractional_pods()` alone; *fracctl preflight* the whole command. The baseline "
        "is `kubectl get pods -A -o json` with the same field selector piped into a `jq` "
        "filter with the same annotation rules; a guard kills it when the host's available "
        f"memory falls under 1.5 GiB. Page size {data['page_size']}.",
        "",
        "| pods | tool | wall: median (range) | peak RSS | / wire |",
        "|---:|---|---|---:|---:|",
    ]
    for size in data["sizes"]:
        runs = size["runs"]
        wire = statistics.median(r["seconds"] for r in runs["wire"])
        label = f"{size['pods']:,}"
        for key, name in (("wire", "wire"), ("scan", "fracctl scan"),
                          ("preflight", "fracctl preflight -o json")):  # fmt: skip
            times = [r["seconds"] for r in runs[key]]
            rss = statistics.median(r["peak_rss"] for r in runs[key])
            lines.append(
                f"| {label} | {name} | {spread(times)} | {mib(rss)} | "
                f"{statistics.median(times) / wire:.2f}x |"
            )
            label = ""
        for r in runs.get("kubectl_jq", []):
            killed = "" if r["finished"] else ", **killed** (host memory)"
            lines.append(
                f"| | kubectl \\| jq{killed} | {secs(r['seconds'])} | "
                f"{mib(r['kubectl_peak_rss'])} + {mib(r['jq_peak_rss'])} | "
                f"{r['seconds'] / wire:.1f}x |"
            )
    lines += ["", "![scan time and memory against pods](plots/scan.png)", ""]
    if data.get("levers"):
        biggest = data["sizes"][-1]["pods"] if data["sizes"] else 0
        lines += [
            f"**Levers** at {biggest:,} pods, each once in one process (wall and this "
            "process's CPU; the API server's CPU is not in the CPU column):",
            "",
            "| how | representation | page size | requests | bytes | wall | CPU |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for row in data["levers"]:
            size = f"{row['bytes'] / 1e6:,.0f} MB" if "bytes" in row else ""
            lines.append(
                f"| {row['how']} | {row['representation']} | {row['page_size']} | "
                f"{row['requests']} | {size} | {row['seconds']:.2f} s | "
                f"{row['cpu_seconds']:.2f} s |"
            )
        lines.append("")
    return lines


def readers_section(data: Any) -> list[str]:
    lines = [
        "## Every pod and node reader against the wire: preflight (alone and as a fleet), "
        "doctor, nodes check, probe",
        "",
    ]
    if not data:
        return [*lines, "Not run.", ""]
    lines += [
        "    python benchmarks/bench_readers.py            # 10k, 50k, 100k pods, 5,000 nodes",
        "    python benchmarks/bench_readers.py --quick    # 10k pods, 500 nodes",
        "",
        "**Data.** bench_preflight's pods and nodes (its seeding code), in one seeding, pods "
        "added in steps and measured at each size, on a control plane restarted after each "
        f"step's writes; {data['nodes']:,} nodes, every one a GPU "
        "node without the memory label or the GPU taint, and every plain pod runs on one "
        "asking for no GPU, so doctor's `gpu-nodes-for-gpu-pods` finding counts each of them "
        "(the *reported* column) and lists the first 1,000, as every finding does.",
        "",
        "**Method.** Each command runs in its own process under GNU `time` (wall, and its own "
        "peak RSS); every answer is checked against the seeded truth before its time counts "
        "(preflight's fractional pods, doctor's CPU pods on GPU nodes, nodes check's rows). "
        "*wire* is the pod scan's own requests with every body read to the end and dropped "
        "undecoded. *fleet preflight* is preflight as a fleet run (`--all-contexts`, the "
        "fleet of this one cluster). *probe pool* is `fracctl probe`'s reading of the pool "
        "alone (a whole probe waits for KAI, which does not run here). *doctor, pods read "
        "whole* is doctor as it read pods before: every unfinished pod on a GPU node listed "
        "as JSON and kept. "
        f"Page size {data['page_size']}; the median of the runs, and their range.",
        "",
        "| pods | reported | command | wall: median (range) | peak RSS | / wire | / preflight |",
        "|---:|---:|---|---|---:|---:|---:|",
    ]
    for size in data["sizes"]:
        runs = size["runs"]
        wire = statistics.median(r["seconds"] for r in runs["wire"])
        pre = statistics.median(r["seconds"] for r in runs["preflight"])
        label, reported = f"{size['pods']:,}", f"{size['strays']:,}"
        for name, rs in runs.items():
            if not rs:
                continue
            times = [r["seconds"] for r in rs]
            rss = statistics.median(r["peak_rss"] for r in rs)
            med = statistics.median(times)
            lines.append(
                f"| {label} | {reported} | {name} | {spread(times)} | {mib(rss)} | "
                f"{med / wire:.2f}x | {med / pre:.2f}x |"
            )
            label = reported = ""
    lines += ["", "![every reader's time and memory against pods](plots/readers.png)", ""]
    return lines


def wait_section(data: Any) -> list[str]:
    lines = ["## wait: reaction to the last node turning ready", ""]
    if not data:
        return [*lines, "Not run.", ""]
    lines += [
        "    python benchmarks/bench_wait.py          # 20 trials each",
        "",
        f"**Method.** {data['nodes']} nodes selected by the live config; per trial a real "
        f"`fracctl wait` process is started and seen watching, {data['nodes'] - 1} nodes are "
        f"marked `{data['condition']}=True`, then the last one; the figure is the time from "
        "the API server acknowledging that last write to the process exiting. The baseline "
        f"is a {data['poll_seconds']}-second polling loop ({data['poll_tool']}) like the "
        "original recreate script's, the nodes turned ready at a random point of its cycle.",
        "",
        "| waiter | trials | median | p90 | min | max |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, name in (("fracctl", "`fracctl wait` (watch)"),
                      ("poll_10s", f"{data['poll_seconds']} s polling loop")):  # fmt: skip
        xs = sorted(data[key])
        p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
        lines.append(
            f"| {name} | {len(xs)} | {secs(statistics.median(xs))} | {secs(p90)} | "
            f"{secs(xs[0])} | {secs(xs[-1])} |"
        )
    lines += ["", "![wait reaction distribution](plots/wait.png)", ""]
    return lines


def startup_section(data: Any) -> list[str]:
    lines = ["## start-up", ""]
    if not data:
        return [*lines, "Not run.", ""]
    lines += [
        f"    python benchmarks/bench_startup.py --runs {data.get('runs', 20)}",
        "",
        "| command | runs | median | min | max |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in data["commands"].items():
        times = row["times_s"]
        lines.append(
            f"| `{name}` | {len(times)} | {secs(statistics.median(times))} | "
            f"{secs(min(times))} | {secs(max(times))} |"
        )
    if data.get("help_to_kubectl_ratio"):
        lines += ["", f"`fracctl --help` takes {data['help_to_kubectl_ratio']:.2f}x "
                      "`kubectl version --client`, measured in the same rounds."]  # fmt: skip
    if data.get("floor_to_kubectl_ratio"):
        lines += ["", f"The floor, typer alone printing the same help (fracctl's root options "
                      f"and command summaries, no fracctl code), takes "
                      f"{data['floor_to_kubectl_ratio']:.2f}x."]  # fmt: skip
    if data.get("lean_floor_to_kubectl_ratio"):
        lines += ["", "The lean floor, typer printing the same help the way fracctl does (commands "
                      "listed from their summaries, its rich renderer without the Markdown and "
                      "traceback renderers) with no fracctl code at all, takes "
                      f"{data['lean_floor_to_kubectl_ratio']:.2f}x: what no change to fracctl's "
                      "own code can beat."]  # fmt: skip
    if data.get("help_parts_s"):
        lines += ["", "Where `fracctl --help`'s time goes inside the process (medians of "
                      "fresh processes):", "", "| part | median |", "|---|---:|"]  # fmt: skip
        lines += [f"| {name} | {secs(t)} |" for name, t in data["help_parts_s"].items()]
    how = str(data["fracctl"]).replace(str(REPO) + "/", "")
    lines += [
        "",
        f"fracctl is run as `{how}`; the commands take turns, one of each per "
        "round. `--version` is answered before the CLI framework loads; `--help` imports "
        "no command module, only the names and summaries of the command table, and "
        "typer's help renderer without the Markdown and traceback renderers fracctl never "
        "uses; a command imports its own module alone. No Kubernetes client, HTTP or YAML "
        "library loads on these paths (`tests/cli/test_cli.py` checks it).",
    ]
    for note in data.get("notes", []):
        lines += ["", note]
    return [*lines, ""]


def sandbox_section(data: Any) -> list[str]:
    lines = ["## sandbox: `fracctl sandbox up` on a warm build cache", ""]
    if not data:
        return [*lines, "Not run.", ""]
    lines += [
        "    python benchmarks/bench_sandbox.py --runs 5",
        "",
        "| run | `up` returns | RTX node ready | `down` |",
        "|---:|---:|---:|---:|",
    ]
    for i, run in enumerate(data["runs"], 1):
        lines.append(
            f"| {i} | {secs(run['up_s'])} | {secs(run['ready_s'])} | {secs(run['down_s'])} |"
        )
    median = data["median"]
    lines += [
        f"| median | {secs(median['up_s'])} | {secs(median['ready_s'])} | "
        f"{secs(median['down_s'])} |",
        "",
        "`up` starts etcd and kube-apiserver, installs the CRDs, starts kube-controller-manager, "
        "kube-scheduler and KWOK, seeds four KWOK nodes and waits until each is Ready, "
        "installs the guard policy and starts the simulations. The RTX node is ready once "
        "the DaemonSet controller made its agent pods, the scheduler bound them, KWOK ran "
        "them and the operator simulation read them.",
        "",
    ]
    return lines


def drift_section(data: Any) -> list[str]:
    lines = ["## drift: rendered objects judged against the live cluster", ""]
    if not data:
        return [*lines, "Not run.", ""]
    calls = sum(data["api_calls"].values())
    lines += [
        "    python benchmarks/bench_drift.py                  # 200 objects",
        "",
        f"{data['objects']} objects (Deployments, ConfigMaps, the GpuFractioningConfig); one "
        "LIST per kind, one dry-run create per desired object (validation before any "
        "verdict), one server-side apply dry run per differing object; verdicts "
        f"{data['verdicts']}.",
        "",
        "| step | median (range) |",
        "|---|---|",
        f"| render (git export + YAML) | {spread(data['render'])} |",
        f"| drift check, {calls} API calls | {spread(data['check'])} |",
        f"| whole `fracctl drift --all` process | {spread(data['process'])} |",
    ]
    if data.get("kubectl_diff"):
        lines.append(
            f"| `kubectl diff --server-side`, {data['kubectl_requests']} requests | "
            f"{spread(data['kubectl_diff'])} |"
        )
    return [*lines, ""]


def rehearsal_section(data: Any, *others: tuple[str, Any]) -> list[str]:
    """The argocd backend's rehearsal, then each other backend's (``--backend``)."""
    lines = ["## recreate: the rehearsal before the delete", ""]
    if not data:
        return [*lines, "Not run.", ""]
    lines += [
        "    python benchmarks/bench_rehearsal.py              # 10 runs on the sandbox",
        "    python benchmarks/bench_rehearsal.py --backend flux   # and apply",
        "",
        f"Each proof on its own, {data['runs']} runs, on `fracctl sandbox up --argocd` (the "
        "real Argo CD v3.2.11); requests sent to the API server and to Argo CD. The "
        '"before" rows are what a recreate proved before the rehearsal, "added" its first '
        'round, "round 2" what follows the delete (the sandbox has few pods: the guard '
        "again is a scan of every pod, as long as preflight's).",
        "",
        *_rehearsal_rows(data),
    ]
    for backend, more in others:
        if more:
            lines += [f"The {backend} backend, {more['runs']} runs:", "", *_rehearsal_rows(more)]
    return lines


def _rehearsal_rows(data: Any) -> list[str]:
    lines = ["| proof | median (range) | API server | Argo CD |", "|---|---|---:|---:|"]
    for r in data["rows"]:
        lines.append(
            f"| {r['proof']} | {secs(r['median_s'])} ({secs(r['min_s'])}-{secs(r['max_s'])}) | "
            f"{r['kube_requests']} | {r['argocd_requests']} |"
        )
    return [*lines, ""]


def fleet_section(runs: list[Any]) -> list[str]:
    lines = ["## fleet: drift over 3 clusters against 3 single-cluster runs in a row", ""]
    if not runs:
        return [*lines, "Not run.", ""]
    lines += [
        "    python benchmarks/bench_fleet.py --objects 200 [--rtt 50]",
        "",
        "| objects per cluster | round trip | slowest single | sequential | fleet | "
        "fleet / slowest | fleet CPU: fracctl, servers |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for d in runs:
        med = statistics.median
        slowest = max(med(v) for v in d["singles"].values())
        fleet = med(d["fleet"])
        rtt = f"{d['rtt_ms']:g} ms" if d["rtt_ms"] else "local"
        lines.append(
            f"| {d['objects']} | {rtt} | {secs(slowest)} | {secs(med(d['sequential']))} | "
            f"{secs(fleet)} | {fleet / slowest:.2f}x | {med(d['fracctl_cpu']):.2f} s, "
            f"{med(d['servers_cpu']):.2f} s |"
        )
    return [*lines, ""]


def gate_section(data: Any) -> list[str]:
    """bench_gate: what each hook adds to a sync, and a gated rollout against the waves."""
    lines = ["## gate: fracctl as Argo CD's sync gate, a gated fleet against the wave runner", ""]
    if not data:
        return [*lines, "Not run.", ""]

    def hook_times(runs: list[Any], hook: str) -> str:
        xs = [s for run in runs for (h, code, s) in run["hooks"] if h == hook and code == 0]
        return spread(xs) if xs else "none"

    gated = data["gated"]
    lines += [
        "    python benchmarks/bench_gate.py",
        "",
        f"One sandbox (`fracctl sandbox up --argocd --clusters {data['clusters']}`): the real "
        "Argo CD v3.2.11 and applicationset-controller (RollingSync over the example's steps: "
        "the canary, early, the rest), three member clusters, the hook pods run by the pod "
        "runner. A "
        "rollout is timed from the commit (and a refresh, as a webhook sends) until every "
        "member runs git's selector and every Application is Healthy. A hook's time is its "
        "fracctl process's wall time, median (range) over the members.",
        "",
        "| what | wall time | PreSync hook | PostSync hook |",
        "|---|---:|---:|---:|",
    ]
    for label, runs in (("gated rollout, selector changed", gated),
                        ("gated rollout, no immutable change", [data["noop"]])):  # fmt: skip
        walls = ", ".join(secs(r["wall"]) for r in runs)
        lines.append(f"| {label} | {walls} | {hook_times(runs, 'fracctl-gate-pre-sync')} | "
                     f"{hook_times(runs, 'fracctl-gate-post-sync')} |")  # fmt: skip
    lines.append(f"| wave runner (`fracctl recreate --yes`, waves 0, 1 and 2) | "
                 f"{secs(data['wave'])} | - | - |")  # fmt: skip
    return [*lines, ""]


#: bench_drain's way the others are measured against: the API server's limit, the
#: figure the drain is held to (goal: within 1.3x).
DRAIN_BASE = "bare, 16 at once"


def drain_section(data: Any) -> list[str]:
    if not data:
        return ["## drain", "", "Not run.", ""]
    rows = data["rows"]
    base = DRAIN_BASE if DRAIN_BASE in rows else next(iter(rows))
    bare = statistics.median(rows[base]["wall"])
    lines = [
        "## drain: `recreate --drain`'s evictions against bare evictions and `kubectl drain`",
        "",
        "    python benchmarks/bench_drain.py                  # 1,000 pods, 250 groups, 100 nodes",
        "",
        f"{data['pods']} fractional pods in {data['groups']} PodGroups on {data['nodes']} KWOK "
        f"nodes, 10 namespaces each with a budget covering its pods; {data['runs']} run(s). "
        "Wall from the first request until no pod is left; requests counted at the client. "
        "fracctl's figure is the plan, the journal, the fence, the evictions group by group "
        "and the wait (the recreate that follows is not in it).",
        "",
        f"| how | wall: median (range) | requests | / {base} |",
        "|---|---|---:|---:|",
    ]
    for name, r in rows.items():
        med = statistics.median(r["wall"])
        lines.append(
            f"| {name} | {spread(r['wall'])} | {int(statistics.median(r['calls'])):,} | "
            f"{med / bare:.2f}x |"
        )
    return [*lines, ""]


def window_section(data: Any) -> list[str]:
    """bench_window: the window per backend, split, and per fraction node count."""
    lines = ["## window: how long fractional scheduling is down during a recreate", ""]
    if not data:
        return [*lines, "Not run.", ""]
    keys = data["keys"]
    window, share = keys["window"], keys["share"]
    lines += [
        "    python benchmarks/bench_window.py --runs 3 --drain      # apply, argocd, flux",
        "    python benchmarks/bench_window.py --backends apply --scale 1,10,100",
        "",
        "**Method.** `fracctl recreate --yes` as a process on the sandbox (real control "
        "plane, KWOK nodes, the operator simulation, the real Argo CD v3.2.11 or Flux); "
        "each run commits a new selector to the sandbox's git (alternating the opt-in label "
        "alone and with `nvidia.com/gpu.present`, which pick the same nodes) and lets the "
        "engine see it first. The bench's own watches of the config, the nodes and the "
        "agents' pods stamp every event on arrival; fracctl's start, its stderr line handing "
        "the request to Argo CD or Flux, and its exit are the process's. The host's 2 CPUs "
        "were shared with other work (load average 12-16) while these ran. "
        "*fracctl's share* is gone → its create request (apply) or gone → "
        "its sync or reconcile request (Argo CD, Flux), plus last node ready → its return. "
        "The agents' pods start 2 s after they are bound (the sandbox's KWOK delay), and "
        "the operator simulation passes every 0.3 s: those two make most of the window here.",
        "",
    ]
    rows = [r for r in data["rows"] if not r["scale"]]
    if rows:
        head = " | ".join(f"{r['way']}, {r['nodes']} nodes, {len(r['runs'])} runs" for r in rows)
        lines += [f"| median (range) | {head} |", "|---|" + "---|" * len(rows)]
        for key in rows[0]["summary"]:
            cells = []
            for r in rows:
                x = r["summary"].get(key)
                cells.append(f"{secs(x['median'])} ({secs(x['min'])}-{secs(x['max'])})"
                             if x else "")  # fmt: skip
            name = f"**{key}**" if key in (window, share) else key
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines += ["", "![the window per backend](plots/window.png)", ""]
    scaled = sorted((r for r in data["rows"] if r["scale"]), key=lambda r: (r["way"], r["nodes"]))
    if scaled:
        seg = keys["segments"]
        lines += [
            "| backend | fraction nodes | window: median (range) | create → agents | "
            "agents → ready | fracctl's share |",
            "|---|---:|---|---:|---:|---:|",
        ]
        for r in scaled:
            x = r["summary"]
            w = x[window]
            lines.append(
                f"| {r['way']} | {r['nodes']} | {spread_of(w)} | {secs(x[seg[3]]['median'])} | "
                f"{secs(x[seg[4]]['median'])} | {secs(x[share]['median'])} |"
            )
        for way in dict.fromkeys(r["way"] for r in scaled):
            pts = [(r["nodes"], r["summary"][window]["median"]) for r in scaled if r["way"] == way]
            fit = least_squares(pts)
            if fit:
                lines += [
                    "",
                    f"{way}: the window grows by {fit[0] * 1000:.1f} ms per fraction "
                    f"node (least squares over the medians), {secs(fit[1])} at none.",
                ]
        lines.append("")
    for note in data.get("notes", []):
        lines += [note, ""]
    return lines


def spread_of(x: dict[str, float]) -> str:
    """median (min-max) of a summary entry."""
    return f"{secs(x['median'])} ({secs(x['min'])}-{secs(x['max'])})"


def least_squares(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Slope and intercept of y on x; None with fewer than two distinct x."""
    if len({x for x, _ in points}) < 2:
        return None
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    k = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return k, my - k * mx


# --- plots ------------------------------------------------------------------------------


def _save_pair(plt: Any, fig: Any, ax_t: Any, ax_m: Any, name: str) -> str:
    """A time and a memory panel over pods, finished alike and written to PLOTS/name."""
    ax_m.set(xlabel="pods", ylabel="peak RSS, MiB (log)", yscale="log", title="peak memory")
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOTS / name, dpi=110)
    plt.close(fig)
    return name


def plots(preflight: Any, wait: Any, readers: Any = None, window: Any = None) -> list[str]:
    """Write the PNGs; the names of those written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not installed (pip install -e '.[bench]'); no plots",
              file=sys.stderr)  # fmt: skip
        return []
    PLOTS.mkdir(exist_ok=True)
    written = []
    if preflight and preflight["sizes"]:
        fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
        pods = [s["pods"] for s in preflight["sizes"]]
        for key, name, style in (("wire", "wire (read, not decoded)", "k--"),
                                 ("scan", "fracctl scan", "C0-o"),
                                 ("preflight", "fracctl preflight", "C2-s")):  # fmt: skip
            t = [
                statistics.median(r["seconds"] for r in s["runs"][key]) for s in preflight["sizes"]
            ]
            m = [
                statistics.median(r["peak_rss"] for r in s["runs"][key]) / 2**20
                for s in preflight["sizes"]
            ]
            ax_t.plot(pods, t, style, label=name)
            ax_m.plot(pods, m, style, label=name)
        base = [(s["pods"], r) for s in preflight["sizes"] for r in s["runs"].get("kubectl_jq", [])]
        if base:
            done = [(p, r) for p, r in base if r["finished"]]
            killed = [(p, r) for p, r in base if not r["finished"]]
            for group, marker, name in ((done, "C3-^", "kubectl | jq"),
                                        (killed, "C3x", "kubectl | jq, killed")):  # fmt: skip
                if group:
                    ax_t.plot([p for p, _ in group], [r["seconds"] for _, r in group], marker,
                              label=name)  # fmt: skip
                    ax_m.plot([p for p, _ in group], [r["peak_rss"] / 2**20 for _, r in group],
                              marker, label=name)  # fmt: skip
        ax_t.set(xlabel="pods", ylabel="wall seconds (log)", yscale="log",
                 title="time to find every fractional pod")  # fmt: skip
        written.append(_save_pair(plt, fig, ax_t, ax_m, "scan.png"))
    if readers and readers["sizes"]:
        fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
        for i, name in enumerate(dict.fromkeys(n for s in readers["sizes"] for n in s["runs"])):
            have = [s for s in readers["sizes"] if s["runs"].get(name)]
            pods = [s["pods"] for s in have]
            t = [statistics.median(r["seconds"] for r in s["runs"][name]) for s in have]
            m = [statistics.median(r["peak_rss"] for r in s["runs"][name]) / 2**20 for s in have]
            style = "k--" if name == "wire" else f"C{i}-o"
            ax_t.plot(pods, t, style, label=name)
            ax_m.plot(pods, m, style, label=name)
        ax_t.set(xlabel="pods", ylabel="wall seconds (log)", yscale="log",
                 title="time, every reader")  # fmt: skip
        written.append(_save_pair(plt, fig, ax_t, ax_m, "readers.png"))
    if wait:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        data = [wait["fracctl"], wait["poll_10s"]]
        ax.boxplot(
            data,
            orientation="horizontal",
            tick_labels=["fracctl wait", "10 s polling"],
            whis=(0, 100),
        )
        for y, xs in enumerate(data, start=1):
            ax.plot(xs, [y] * len(xs), "o", alpha=0.5, markersize=4)
        ax.set(xlabel="seconds from the last node ready to return (log)", xscale="log",
               title=f"wait reaction, {len(wait['fracctl'])} trials each")  # fmt: skip
        ax.grid(True, which="both", axis="x", alpha=0.3)
        fig.tight_layout()
        fig.savefig(PLOTS / "wait.png", dpi=110)
        plt.close(fig)
        written.append("wait.png")
    if window and any(not r["scale"] for r in window["rows"]):
        written.append(_window_plot(plt, window))
    return written


def _window_plot(plt: Any, data: Any) -> str:
    """One stacked bar per backend: the median of each segment, the window marked."""
    rows = [r for r in data["rows"] if not r["scale"]]
    seg = data["keys"]["segments"]
    fig, ax = plt.subplots(figsize=(9, 2.0 + 0.6 * len(rows)))
    for y, r in enumerate(rows):
        left = 0.0
        for i, key in enumerate(seg):
            width = r["summary"][key]["median"]
            ax.barh(y, width, left=left, color=f"C{i}", label=key if y == 0 else None)
            left += width
    ax.set_yticks(range(len(rows)), [f"{r['way']} ({r['nodes']} nodes)" for r in rows])
    ax.invert_yaxis()
    ax.set(xlabel="seconds from fracctl's start (medians)",
           title="recreate --yes on the sandbox: where the time goes")  # fmt: skip
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(PLOTS / "window.png", dpi=110)
    plt.close(fig)
    return "window.png"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args, _ = ap.parse_known_args(argv)
    from datetime import date

    preflight, wait = load("preflight"), load("wait")
    fleet = [json.loads(p.read_text()) for p in sorted(OUT.glob("fleet*.json"))]
    lines = [
        "# Benchmark results",
        "",
        f"Written by `make bench` on {date.today().isoformat()} from `benchmarks/out/`; "
        "every figure as measured. Each benchmark starts its own kube-apiserver + etcd; "
        "nothing here runs in the test suite.",
        "",
        *machine(),
        "",
        *preflight_section(preflight),
        *readers_section(load("readers")),
        *wait_section(wait),
        *startup_section(load("startup")),
        *sandbox_section(load("sandbox")),
        *drift_section(load("drift")),
        *rehearsal_section(
            load("rehearsal"),
            ("flux", load("rehearsal-flux")),
            ("apply", load("rehearsal-apply")),
        ),
        *fleet_section(fleet),
        *gate_section(load("gate")),
        *drain_section(load("drain")),
        *window_section(load("window")),
    ]
    Path(args.out).write_text("\n".join(lines).rstrip() + "\n")
    written = plots(preflight, wait, load("readers"), load("window"))
    print(f"wrote {args.out}" + (f" and plots/{', plots/'.join(written)}" if written else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
