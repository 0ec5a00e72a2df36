"""Benchmark: the window of one ``recreate --yes``, from the events the API server records.

The window is what a recreate costs the cluster's users: from the delete of the
``GpuFractioningConfig`` until every node its new selector picks reports
``gpu-fractioning.nvidia.com/Ready=True`` again; no fractional pod can be placed there
in between. Each run starts ``fracctl recreate --yes`` as a real process on the sandbox
(``fracctl sandbox up``: the real control plane, KWOK, the operator simulation, and the
real Argo CD or Flux for those backends) and watches, from its own client, the config
(one name), every node, and the agents' pods. Every event is stamped on arrival
(``time.monotonic``); fracctl's own start and return are the process's, and the
moment it handed the create to a GitOps engine is the arrival of its stderr line saying
so. The run is cut at:

* **start**: the process is started;
* **delete**: the old config's ``deletionTimestamp`` is seen (the delete request);
* **gone**: its ``DELETED`` event (the operator cleared its node conditions and
  released its finalizer);
* **handed** (argocd, flux): fracctl's line that the sync or the reconcile was asked for;
* **create**: the new config's ``ADDED`` event (the create request, fracctl's own for
  ``apply``, the engine's otherwise);
* **agents**: every selected node runs a Ready pod of each agent DaemonSet made for the
  new config (the operator's DaemonSets, the DaemonSet controller, the scheduler, KWOK);
* **ready**: every selected node's condition is True (the operator's write);
* **return**: the process exited.

fracctl's own share is gone → create (apply) or gone → handed (the engines), plus
ready → return. The window is delete → ready.

Each run commits a new selector to the sandbox's git and lets the backend see it, then
recreates: the runs alternate between the opt-in label alone and the opt-in label with
``nvidia.com/gpu.present``, which pick the same fraction nodes, so each run deletes the
agents of N nodes and waits for N nodes (the incident's own first recreate, from one
node, is done once beforehand and not measured). The fraction nodes (``--nodes``,
default 2: the RTX node and the B200 the incident labels) are the RTX node, b200-0 and
KWOK nodes labelled for fractions; ``--scale 1,10,100`` measures the window per count.

Adding a backend is one entry in :data:`BACKENDS`: its ``sandbox up`` flags and a
function that brings its view of git up to the sandbox repository's HEAD (a reconcile
request, a refresh) before a run.

    python benchmarks/bench_window.py                       # apply, argocd, flux; 3 runs
    python benchmarks/bench_window.py --backends apply --drain --runs 5
    python benchmarks/bench_window.py --backends apply --scale 1,10,100 --runs 3
    python benchmarks/bench_window.py --quick               # apply, 2 runs
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from fracctl.adapters.kube import Kube  # noqa: E402
from fracctl.config import Config  # noqa: E402
from fracctl.core.kube.nodes import is_ready  # noqa: E402
from fracctl.core.kube.resources import NODES, PODS  # noqa: E402
from fracctl.errors import Conflict  # noqa: E402
from fracctl.sandbox import agents  # noqa: E402
from fracctl.sandbox.controllers import kwok_node, wait_node_ready  # noqa: E402

FRACCTL = str(Path(sys.executable).with_name("fracctl"))
#: The package's record of the last measured medians, read by ``recreate --dry-run``.
MEASURED = REPO / "fracctl" / "data" / "window.json"
CONFIG_FILE = "gpu-fractioning/gpufractioningconfig.yaml"  # in the sandbox's git
CHART_HOOK = "gpu-fractioning/templates/default-cr.yaml"  # the operator chart's hook
CHART_SCENARIO = REPO / "examples" / "sandbox" / "operator-chart.yaml"
#: The two selectors the runs alternate between: the same fraction nodes, told apart by a
#: second key every GPU node carries, so every run is a recreate of N nodes' agents that
#: the guards accept (coverage of every opted-in node, no hardware class).
OPT_IN = {"example.org/gpu-fractions": "enabled"}
SELECTORS = (OPT_IN, {**OPT_IN, "nvidia.com/gpu.present": "true"})
RTX = "rtx-pro-6000-0"
WINDOW = "window (delete → last node ready)"
SHARE = "fracctl's share"
SEGMENTS = (
    ("start", "delete", "start → delete request"),
    ("delete", "gone", "delete → gone (finalizer: the operator)"),
    ("gone", "create", "gone → create request"),
    ("create", "agents", "create → agents Ready (DaemonSets, scheduler, kubelets)"),
    ("agents", "ready", "agents → nodes ready (the operator's condition)"),
    ("ready", "return", "last node ready → fracctl returns"),
)

Obj = dict[str, Any]


# --- the sandbox -------------------------------------------------------------------------


def sandbox(state: str, *args: str) -> str:
    proc = subprocess.run(
        [FRACCTL, "sandbox", *args, "--state-dir", state], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"fracctl sandbox {args[0]} failed: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


class Box:
    """One sandbox: its environment, a client, its git, and what a run needs."""

    def __init__(self, state: str, backend: Backend) -> None:
        self.state = Path(state)
        self.backend = backend
        self.env = dict(os.environ)
        for line in sandbox(state, "env").splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            self.env[key] = value
        self.kube = Kube.connect(kubeconfig=self.env["KUBECONFIG"])
        self.config = Config()
        self.gitops = self.state / "gitops"

    def ctx(self) -> Any:
        """A fracctl context on the sandbox's fracctl.yaml (its Argo CD client, if any)."""
        from fracctl import config as cfg
        from fracctl.flows.context import Context

        return Context.build(cfg.load(self.env["FRACCTL_CONFIG"], env=self.env))

    def commit(self, selector: dict[str, str]) -> str:
        """Write ``selector`` into git's config and commit it; the new HEAD."""
        from ruamel.yaml import YAML

        path = self.gitops / self.backend.config_file
        if path.name == CHART_HOOK.rsplit("/", 1)[1]:  # a chart's template: not YAML
            lines = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in selector.items())
            text = re.sub(r"(?m)^(  nodeSelector:\n)(    .*\n)+", r"\g<1>" + lines,
                          path.read_text())  # fmt: skip
            path.write_text(text)
        else:
            yaml = YAML()
            doc = yaml.load(path.read_text())
            doc["spec"]["nodeSelector"] = dict(selector)
            with open(path, "w") as f:
                yaml.dump(doc, f)
        git(self.gitops, "commit", "-qam", f"bench: select {selector}", "--allow-empty")
        return git(self.gitops, "rev-parse", "HEAD")

    def fraction_nodes(self, count: int) -> list[str]:
        """Make ``count`` nodes carry the opt-in label: the RTX node, b200-0, then extras."""
        names = [RTX]
        if count >= 2:
            body = {"metadata": {"labels": {"example.org/gpu-class": "b200"}}}
            self.kube.patch(NODES, "b200-0", body)
            self.run_fracctl("nodes", "label", "b200-0")
            names.append("b200-0")
        else:  # an allowed class without the opt-in label is refused: no class, no label
            body = {"metadata": {"labels": {"example.org/gpu-class": None,
                                            "example.org/gpu-fractions": None}}}  # fmt: skip
            self.kube.patch(NODES, "b200-0", body)
        labels = {
            "example.org/gpu-class": "b200",
            "example.org/gpu-fractions": "enabled",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-B200",
            "nvidia.com/gpu.memory": "183359",
        }
        taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
        extra = [f"frac-{i:03d}" for i in range(count - len(names))]
        for name in extra:
            try:
                self.kube.create(NODES, kwok_node(name, labels, taints=taints, gpus=8))
            except Conflict:
                pass
        for name in extra:
            wait_node_ready(self.kube, name, timeout=120)
        return names + extra

    def run_fracctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([FRACCTL, *args], env=self.env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"fracctl {' '.join(args)} failed: {proc.stderr.strip()[-3000:]}")
        return proc

    def live(self) -> Obj:
        t = self.config.target
        return self.kube.get(t.ref, t.name)

    def settled(self, nodes: list[str], timeout: float = 300) -> None:
        """Until the agents run on ``nodes`` only, each Ready.

        The old agents may still be terminating (mpsd's grace is 75 s, as upstream's):
        they go on stopping during the next run, as they would in a cluster.
        """
        ns = self.config.cluster.agent_namespace
        want = len(self.config.cluster.agent_daemonsets) * len(nodes)
        deadline = time.monotonic() + timeout
        while True:
            pods = [
                p
                for p in self.kube.list(PODS, namespace=ns, label_selector=agents.POD_SELECTOR)
                if not p["metadata"].get("deletionTimestamp")
            ]
            ok = (
                len(pods) == want
                and all(agents.pod_ready(p) for p in pods)
                and {p["spec"].get("nodeName") for p in pods} == set(nodes)
            )
            if ok:
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"bench_window: the agents did not settle on {len(nodes)} nodes")
            time.sleep(0.5)


# --- the backends ------------------------------------------------------------------------


def prepare_apply(box: Box, commit: str) -> None:
    """fracctl renders git itself: nothing to bring up to date."""


def prepare_argocd(box: Box, commit: str) -> None:
    """Argo CD compares the application at ``commit`` (a hard refresh, until it has)."""
    from fracctl.sandbox.layout import SANDBOX_APP

    client = box.ctx().argocd
    deadline = time.monotonic() + 120
    while True:
        app = client.get_application(SANDBOX_APP, refresh="hard")
        if ((app.get("status") or {}).get("sync") or {}).get("revision") == commit:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_window: Argo CD did not compare {commit[:12]}")
        time.sleep(0.5)


def prepare_flux(box: Box, commit: str) -> None:
    """Flux's source fetched ``commit`` and its Kustomization tried it (its verdict settled)."""
    from fracctl.sandbox import flux_local

    _flux_tried(box, flux_local.KUSTOMIZATIONS, commit, "Flux")


def prepare_helmrelease(box: Box, commit: str) -> None:
    """Flux's source fetched ``commit`` and the HelmRelease tried its chart (its verdict
    settled: with the guard installed, ``UpgradeFailed`` at the hook's delete).

    source-controller versions a chart from git as ``<version>+<commit, 12 digits>``.
    """
    from fracctl.sandbox import flux_local

    _flux_tried(box, flux_local.HELMRELEASES, commit[:12], "the HelmRelease")


def _flux_tried(box: Box, ref: Any, revision: str, who: str) -> None:
    """Ask the source to fetch now; wait until ``ref``'s object tried ``revision``."""
    from fracctl.adapters.flux import REQUESTED_AT, request_token
    from fracctl.core.kube.nodes import condition
    from fracctl.sandbox import flux_local
    from fracctl.sandbox.flux_wiring import SOURCE
    from fracctl.sandbox.layout import SANDBOX_APP

    ns = flux_local.NAMESPACE
    body = {"metadata": {"annotations": {REQUESTED_AT: request_token()}}}
    box.kube.patch(flux_local.GITREPOSITORIES, SOURCE, body, namespace=ns)
    deadline = time.monotonic() + 120
    while True:
        obj = box.kube.get(ref, SANDBOX_APP, ns)
        status = obj.get("status") or {}
        tried = str(status.get("lastAttemptedRevision") or "").endswith(revision)
        if tried and (condition(obj, "Ready") or {}).get("status") in ("True", "False"):
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_window: {who} did not try {revision[:12]}")
        time.sleep(0.3)


@dataclass(frozen=True)
class Backend:
    """How the bench runs a backend: the sandbox it needs and how git reaches it."""

    up: tuple[str, ...]  # `fracctl sandbox up` flags
    prepare: Callable[[Box, str], None]  # bring its view of git to this commit
    handed: str = ""  # the start of fracctl's stderr line once the engine has the request
    config_file: str = CONFIG_FILE  # where git holds the config's selector (YAML)


#: One entry per backend: the sandbox it needs, how git's commit reaches the engine, the
#: line fracctl says once the engine has the request, and the file in git that holds the
#: selector. helm's request (the chart's upgrade) is handed before the delete (its hook
#: deletes and creates), so the whole gone → create counts as helm's (helm-controller's
#: for a HelmRelease).
BACKENDS: dict[str, Backend] = {
    "apply": Backend((), prepare_apply),
    "argocd": Backend(("--argocd",), prepare_argocd, handed="Argo CD: syncing"),
    "flux": Backend(("--flux",), prepare_flux, handed="Flux: reconcile of"),
    "helm": Backend(
        ("--scenario", str(CHART_SCENARIO)),
        prepare_apply,
        handed="armed the lock for",
        config_file=CHART_HOOK,
    ),  # fmt: skip
    # The operator's chart installed by a Flux HelmRelease: helm-controller's upgrade
    # deletes and creates, as helm's does (recreate.backend flux with flux.helmrelease).
    "helmrelease": Backend(
        ("--flux", "--scenario", str(CHART_SCENARIO)),
        prepare_helmrelease,
        handed="armed the lock for",
        config_file=CHART_HOOK,
    ),  # fmt: skip
}


# --- the record --------------------------------------------------------------------------


class Recorder:
    """Watches of the config, the nodes and the agents' pods; every event stamped."""

    def __init__(self, box: Box) -> None:
        self.box = box
        self.events: list[tuple[float, str, str, Obj]] = []  # (time, what, type, digest)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        cfg = box.config
        self.threads = [
            threading.Thread(target=self._follow, args=(what, ref, kw), daemon=True)
            for what, ref, kw in (
                ("config", cfg.target.ref, {"field_selector": f"metadata.name={cfg.target.name}"}),
                ("node", NODES, {}),
                ("pod", PODS, {"namespace": cfg.cluster.agent_namespace,
                               "label_selector": agents.POD_SELECTOR}),
            )
        ]  # fmt: skip
        self.ready = threading.Barrier(len(self.threads) + 1)

    def __enter__(self) -> Recorder:
        for t in self.threads:
            t.start()
        self.ready.wait(timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)

    def digest(self, what: str, obj: Obj) -> Obj:
        meta = obj.get("metadata") or {}
        out: Obj = {"name": meta.get("name"), "uid": meta.get("uid"),
                    "deleting": bool(meta.get("deletionTimestamp"))}  # fmt: skip
        if what == "node":
            out["ready"] = is_ready(obj, self.box.config.condition)
        if what == "pod":
            out["node"] = (obj.get("spec") or {}).get("nodeName")
            out["ready"] = agents.pod_ready(obj)
            out["owner"] = agents.controller_uid(obj)
        return out

    def _follow(self, what: str, ref: Any, kw: dict[str, Any]) -> None:
        kube = Kube.connect(kubeconfig=self.box.env["KUBECONFIG"])
        rv = ""
        for page in kube.list_pages(ref, **kw):
            rv = (page.get("metadata") or {}).get("resourceVersion") or rv
            now = time.monotonic()
            with self.lock:
                for obj in page.get("items") or []:
                    self.events.append((now, what, "LISTED", self.digest(what, obj)))
        self.ready.wait(timeout=60)
        while not self.stop.is_set():
            try:
                for kind, obj in kube.watch(ref, resource_version=rv, timeout_seconds=2, **kw):
                    at = time.monotonic()
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if kind == "BOOKMARK":
                        continue
                    with self.lock:
                        self.events.append((at, what, kind, self.digest(what, obj)))
                    if self.stop.is_set():
                        break
            except Exception as e:  # noqa: BLE001 - a broken watch is a failed run
                if not self.stop.is_set():
                    print(f"bench_window: the {what} watch broke: {e}", file=sys.stderr)
                return


class Process:
    """``fracctl recreate --yes`` as a process: stderr lines stamped, its exit stamped."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)  # fmt: skip
        self.lines: list[tuple[float, str]] = []
        self.stdout = ""
        self.returned = 0.0
        reader = threading.Thread(target=self._read, daemon=True)
        reader.start()
        self.stdout = self.proc.stdout.read() if self.proc.stdout else ""
        self.proc.wait()
        self.returned = time.monotonic()
        reader.join(timeout=10)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def line(self, start: str) -> float | None:
        return next((t for t, text in self.lines if text.startswith(start)), None)


def timeline(rec: Recorder, proc: Process, old_uid: str, nodes: list[str], handed: str) -> Obj:
    """The run's points (seconds from start), from the events and the process."""
    with rec.lock:
        events = sorted(rec.events, key=lambda e: e[0])
    points: dict[str, float] = {"start": proc.started, "return": proc.returned}
    for at, what, kind, d in events:
        if what != "config":
            continue
        if d["uid"] == old_uid and (d["deleting"] or kind == "DELETED"):
            points.setdefault("delete", at)
        if d["uid"] == old_uid and kind == "DELETED":
            points.setdefault("gone", at)
        if d["uid"] != old_uid and kind == "ADDED" and "gone" in points:
            points.setdefault("create", at)
    for need in ("delete", "gone", "create"):
        if need not in points:
            raise SystemExit(f"bench_window: no {need} event for the config in this run")
    if handed:
        at = proc.line(handed)
        if at is None:
            raise SystemExit(f"bench_window: fracctl never said {handed!r}")
        points["handed"] = at
    per_node = len(rec.box.config.cluster.agent_daemonsets)
    ready: dict[str, bool] = {}
    pods: dict[str, Obj] = {}
    for at, what, kind, d in events:
        if what == "node":
            ready[d["name"]] = bool(d["ready"]) and kind != "DELETED"
        elif what == "pod":
            if kind == "DELETED":
                pods.pop(d["name"], None)
            else:
                pods[d["name"]] = {**d, "new": at > points["create"] or d["name"] in pods
                                   and pods[d["name"]].get("new")}  # fmt: skip
        if at <= points["create"]:
            continue
        if "agents" not in points:
            count = dict.fromkeys(nodes, 0)
            for p in pods.values():
                if p.get("new") and p["ready"] and not p["deleting"] and p["node"] in count:
                    count[p["node"]] += 1
            if all(c >= per_node for c in count.values()):
                points["agents"] = at
        if "ready" not in points and all(ready.get(n) for n in nodes):
            points["ready"] = at
    for need in ("agents", "ready"):
        if need not in points:
            raise SystemExit(f"bench_window: the nodes never got {need} in this run")
    points["agents"] = min(points["agents"], points["ready"])
    t0 = points["start"]
    return {k: round(v - t0, 4) for k, v in sorted(points.items(), key=lambda kv: kv[1])}


def shares(points: Obj) -> Obj:
    """The segments of one run, the window and fracctl's own share (seconds)."""
    out = {label: points[b] - points[a] for a, b, label in SEGMENTS}
    out[WINDOW] = points["ready"] - points["delete"]
    mine = points.get("handed", points["create"]) - points["gone"]
    if mine < 0:  # handed before the delete: the engine deletes and creates (helm's hook)
        mine = 0.0
    out["fracctl: gone → its request"] = mine
    if "handed" in points:
        out["backend: request → create"] = points["create"] - points["handed"]
    out[SHARE] = mine + points["return"] - points["ready"]
    return out


def one_run(box: Box, backend: Backend, nodes: list[str], flags: list[str]) -> Obj:
    old = box.live()["metadata"]["uid"]
    with Recorder(box) as rec:
        proc = Process([FRACCTL, "recreate", "--yes", *flags], box.env)
        time.sleep(0.5)  # the last writes after the return reach the watches
    if proc.proc.returncode != 0:
        tail = "\n".join(text for _, text in proc.lines[-15:])
        raise SystemExit(f"bench_window: recreate exited {proc.proc.returncode}:\n{tail}")
    points = timeline(rec, proc, old, nodes, backend.handed)
    said = [(round(t - proc.started, 4), text) for t, text in proc.lines]
    return {"points": points, "segments": shares(points), "stderr": said}


def measure(box: Box, backend: Backend, count: int, runs: int, flags: list[str]) -> list[Obj]:
    """``runs`` measured recreates on ``count`` fraction nodes, alternating the selectors.

    A first recreate, not measured, brings the agents onto exactly these nodes (from the
    incident's one node, or from the previous count).
    """
    nodes = box.fraction_nodes(count)
    results = []
    for i in range(runs + 1):
        now = box.live()["spec"]["nodeSelector"]
        head = box.commit(SELECTORS[1] if now == SELECTORS[0] else SELECTORS[0])
        backend.prepare(box, head)
        if i == 0:
            box.run_fracctl("recreate", "--yes")
            box.settled(nodes)
            continue
        run = one_run(box, backend, nodes, flags)
        seg = run["segments"]
        print(f"  run {i}: window {seg[WINDOW]:.2f} s, fracctl's share {seg[SHARE]:.3f} s",
              flush=True)  # fmt: skip
        results.append(run)
        box.settled(nodes)
    return results


# --- results -----------------------------------------------------------------------------


def summary(runs: list[Obj]) -> Obj:
    keys = list(runs[0]["segments"])
    return {
        k: {
            "median": statistics.median(r["segments"][k] for r in runs),
            "min": min(r["segments"][k] for r in runs),
            "max": max(r["segments"][k] for r in runs),
        }
        for k in keys
    }


def write_measured(rows: list[Obj]) -> None:
    """The medians the dry-run plan quotes, per backend (and drain), at the default count.

    Read by :func:`fracctl.flows.recreate.window.expected`.
    """
    old = json.loads(MEASURED.read_text()) if MEASURED.is_file() else {}
    figures = dict(old.get("backends") or {})
    for row in rows:
        if row["scale"]:
            continue
        s = row["summary"]
        figures[row["way"]] = {
            "window_s": round(s[WINDOW]["median"], 2),
            "fracctl_s": round(s[SHARE]["median"], 3),
            "nodes": row["nodes"],
            "runs": len(row["runs"]),
            "measured_on": date.today().isoformat(),
        }
    MEASURED.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "about": "medians of benchmarks/bench_window.py on the sandbox (KWOK nodes, the "
        "operator simulation); not a promise for a real cluster",
        "backends": figures,
    }
    MEASURED.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--backends", default="apply,argocd,flux",
                    help=f"comma-separated, of {', '.join(BACKENDS)}")  # fmt: skip
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=2, help="fraction nodes (default 2)")
    ap.add_argument("--drain", action="store_true", help="also each backend with --drain")
    ap.add_argument("--scale", default="", help="fraction node counts, e.g. 1,10,100")
    ap.add_argument("--quick", action="store_true", help="apply only, 2 runs")
    ap.add_argument("--out", default=str(report.OUT / "window.json"))
    args, _ = ap.parse_known_args(argv)
    if args.quick:
        args.backends, args.runs = "apply", 2
    names = [b for b in args.backends.split(",") if b]
    unknown = [b for b in names if b not in BACKENDS]
    if unknown:
        raise SystemExit(f"bench_window: unknown backend(s) {unknown} (use {', '.join(BACKENDS)})")
    scale = [int(n) for n in args.scale.split(",") if n]
    old = json.loads(Path(args.out).read_text()) if Path(args.out).is_file() else {}
    rows: list[Obj] = []
    for name in names:
        backend = BACKENDS[name]
        with tempfile.TemporaryDirectory(prefix=f"bench-window-{name}-") as tmp:
            state = str(Path(tmp) / "sbx")
            sandbox(state, "up", *backend.up)
            try:
                box = Box(state, backend)
                plan = [(args.nodes, [], False)]
                if args.drain:
                    plan.append((args.nodes, ["--drain"], False))
                plan += [(n, [], True) for n in scale]
                plan.sort(key=lambda p: p[0])  # fewer nodes first: nodes are only added
                for count, flags, scaled in plan:
                    way = " ".join([name, *flags])
                    print(f"{way}: {count} fraction node(s), {args.runs} run(s)", flush=True)
                    runs = measure(box, backend, count, args.runs, flags)
                    rows.append(
                        {
                            "way": way,
                            "backend": name,
                            "flags": flags,
                            "nodes": count,
                            "scale": scaled,
                            "runs": runs,
                            "summary": summary(runs),
                        }
                    )
            finally:
                sandbox(state, "down")
    kept = [r for r in old.get("rows") or []
            if (r["way"], r["nodes"], r["scale"]) not in {(x["way"], x["nodes"], x["scale"])
                                                          for x in rows}]  # fmt: skip
    data = {"measured_on": date.today().isoformat(), "rows": kept + rows,
            "keys": {"segments": [label for _, _, label in SEGMENTS], "window": WINDOW,
                     "share": SHARE}}  # fmt: skip
    write_measured(rows)
    report.save(args.out, data, "\n".join(report.window_section(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
