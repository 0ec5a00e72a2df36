"""Benchmark: how fast ``fracctl wait`` returns once the last node is ready, vs a 10 s poll.

"Ready" is what ``fracctl wait`` waits for: every Node that the live target object's
``spec.nodeSelector`` selects (the ``GpuFractioningConfig`` named ``default``) has the
node condition ``gpu-fractioning.nvidia.com/Ready`` with status ``True``. fracctl lists
those nodes once, then watches them.

Starts its own kube-apiserver + etcd, installs the fractioning CRD, creates the target
object and N nodes (default 8) that it selects, each with the condition ``False``.
Each trial then runs one waiter as a real subprocess and measures its *reaction*: the
monotonic time the waiter's process exited minus the monotonic time right after the
API server acknowledged (answered) the status PATCH that made the last node ready. A
waiter that does not exit 0, or whose answer does not name every node as ready, fails
the benchmark: it is an error, not a figure. Between trials every node is set back to
``False``.

* ``fracctl``: ``python -m fracctl --kubeconfig KC wait --timeout 2m -o json``. The
  last write is made only once it is demonstrably watching: its stderr has shown every
  node (printed after its LIST) and the API server's own metric
  ``apiserver_longrunning_requests{resource="nodes",verb="WATCH"}`` has risen above
  its value before the waiter started (its WATCH request is registered). Then the first
  N-1 nodes are made ready, and the last one only after fracctl's stderr has reported
  those N-1 as True: the reaction is to the last node alone, from a steady watch, as
  when nodes come up seconds apart.
* ``poll_10s``: the loop of the original recreate script, as a bash script using
  kubectl: ``until <all selected nodes' condition is True>; do sleep 10; done``, the
  check being ``kubectl get nodes -l SELECTOR -o jsonpath=...`` of the condition's
  status. It prints a line after each failed check. The trial waits for the first
  such line, then a random delay uniform in [0, 10) s (the phase of the poll, drawn
  from a seeded generator), then makes the N-1 nodes ready and then the last one. Its
  reaction is therefore uniform over 0-10 s plus one check's cost, and each trial is
  real while taking about 10 s rather than a fixed worst case.

For fracctl the figure is also split at the moment its stderr line reporting the last
node True was read (``reported``): before it, the watch event's delivery; after it, the
end of the command and the interpreter's shutdown.

Process start-up is not part of either figure: both waiters are running before the
last write; fracctl's figure includes its watch latency, its output and its shutdown.

    python benchmarks/bench_wait.py             # 20 trials each
    python benchmarks/bench_wait.py --quick     # 5 trials each
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from fracctl.adapters.kube import Kube  # noqa: E402
from fracctl.config import Config  # noqa: E402
from fracctl.core.kube.resources import NODES  # noqa: E402
from fracctl.sandbox import controlplane  # noqa: E402
from fracctl.sandbox.flow import install_crd  # noqa: E402

SELECTOR = {"example.org/gpu-fractions": "enabled"}
SMP = "application/strategic-merge-patch+json"
POLL_SECONDS = 10
WATCHERS = re.compile(
    r'^apiserver_longrunning_requests\{(?=[^}]*resource="nodes")(?=[^}]*verb="WATCH")'
    r"[^}]*\}\s+(\d+)",
    re.M,
)

# The original script's loop: check, and if not every selected node is ready, sleep 10 s.
POLL_SCRIPT = r"""
set -u
kubectl=$1 kubeconfig=$2 selector=$3 condition=$4 period=$5
status="{.status.conditions[?(@.type==\"$condition\")].status}"
jsonpath="{range .items[*]}{.metadata.name}=$status{\"\n\"}{end}"
all_ready() {
  out=$("$kubectl" --kubeconfig "$kubeconfig" get nodes -l "$selector" -o jsonpath="$jsonpath") \
    || return 1
  [ -n "$out" ] && ! printf '%s\n' "$out" | grep -qv '=True$'
}
until all_ready; do
  echo "poll: not every node is ready; next check in ${period}s" >&2
  sleep "$period"
done
echo "all ready"
"""


# --- the cluster -----------------------------------------------------------------------


class Bench:
    """The control plane's objects, and the writes a trial makes."""

    def __init__(self, cp: controlplane.ControlPlane, nodes: int) -> None:
        self.cp = cp
        self.config = Config()
        self.cond = self.config.condition
        self.kube = Kube.connect(kubeconfig=cp.kubeconfig)
        self.names = [f"bench-gpu-{i:02d}" for i in range(nodes)]
        self._ssl = ssl.create_default_context(cafile=cp.ca_file)

    def seed(self) -> None:
        install_crd(self.kube, self.config)
        t = self.config.target
        self.kube.create(
            t.ref,
            {
                "apiVersion": t.api_version,
                "kind": t.kind,
                "metadata": {"name": t.name},
                "spec": {"nodeSelector": SELECTOR},
            },
        )
        for name in self.names:
            labels = {"kubernetes.io/hostname": name, **SELECTOR}
            self.kube.create(
                NODES,
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}},
            )
        self.set_all(False)

    def set_ready(self, name: str, ready: bool) -> None:
        cond = {
            "type": self.cond,
            "status": "True" if ready else "False",
            "reason": "AllDaemonsReady" if ready else "DaemonsNotReady",
            "message": "bench",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        self.kube.patch(
            NODES, name, {"status": {"conditions": [cond]}}, content_type=SMP, subresource="status"
        )

    def set_all(self, ready: bool) -> None:
        for name in self.names:
            self.set_ready(name, ready)

    def node_watchers(self) -> int:
        """Node WATCH requests the API server is serving now (its own metric)."""
        req = urllib.request.Request(
            self.cp.url + "/metrics", headers={"Authorization": f"Bearer {self.cp.admin_token}"}
        )
        with urllib.request.urlopen(req, context=self._ssl, timeout=10) as resp:
            text = resp.read().decode()
        return sum(int(m) for m in WATCHERS.findall(text))


# --- the waiters -----------------------------------------------------------------------


class Waiter:
    """A subprocess whose stderr lines are collected, with the time each arrived."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd, text=True
        )
        self.lines: list[str] = []
        self.arrived: list[float] = []  # monotonic time each stderr line was read
        self.stdout = ""
        self.changed = threading.Condition()
        self._threads = [
            threading.Thread(target=self._read_err, daemon=True),
            threading.Thread(target=self._read_out, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            now = time.monotonic()
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.arrived.append(now)
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        self.stdout = self.proc.stdout.read()

    def wait_for(self, what: str, pred: Any, timeout: float = 60.0) -> None:
        """Block until ``pred(lines)``; fail if the process ends first or time runs out."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not pred(self.lines):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"waiter exited ({self.proc.returncode}) before {what}: "
                                       f"{self.tail()}")  # fmt: skip
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"no {what} after {timeout:.0f}s: {self.tail()}")
                self.changed.wait(min(left, 0.2))

    def finish(self, timeout: float) -> int:
        """Wait for the exit (the caller reads the clock right after); the exit code.

        A blocking ``waitpid``, not ``Popen.wait(timeout)``, which polls with sleeps of up
        to 50 ms; a timer kills a waiter that overstays instead.
        """
        fired = threading.Event()

        def overstayed() -> None:
            fired.set()
            self.proc.kill()

        watchdog = threading.Timer(timeout, overstayed)
        watchdog.start()
        try:
            rc = self.proc.wait()
        finally:
            watchdog.cancel()
        if fired.is_set():
            raise RuntimeError(f"waiter still running {timeout:.0f}s after the last write: "
                               f"{self.tail()}")  # fmt: skip
        return rc

    def drain(self) -> None:
        for t in self._threads:
            t.join(10)

    def __enter__(self) -> Waiter:
        return self

    def __exit__(self, *exc: object) -> None:
        """Kill it if it still runs (a failed trial), then collect what it wrote."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.drain()

    def tail(self) -> str:
        return " | ".join(self.lines[-5:])


def shows(names: list[str], status: str) -> Any:
    """A predicate: fracctl's stderr has reported each of ``names`` with ``status``."""

    def pred(lines: list[str]) -> bool:
        seen: dict[str, str] = {}
        for line in lines:
            m = re.match(r"node (\S+): \S+ (\S+)", line)
            if m:
                seen[m.group(1)] = m.group(2)
        return all(seen.get(n) == status for n in names)

    return pred


def env_for_children() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRACCTL_", "KUBECONFIG"))}
    env.update(PYTHONPATH=str(REPO), COLUMNS="250", NO_COLOR="1", TERM="dumb")
    return env


def fracctl_trial(b: Bench, env: dict[str, str], cwd: str) -> dict[str, Any]:
    before = b.node_watchers()
    argv = [sys.executable, "-m", "fracctl", "--kubeconfig", b.cp.kubeconfig,
            "wait", "--timeout", "2m", "-o", "json"]  # fmt: skip
    started = time.monotonic()
    with Waiter(argv, env, cwd) as w:
        w.wait_for("listing of every node", shows(b.names, "False"))
        listed = time.monotonic()
        deadline = listed + 30
        while b.node_watchers() <= before:  # its WATCH request is registered
            if w.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fracctl wait never opened its watch: {w.tail()}")
            time.sleep(0.01)
        watching = time.monotonic()
        for name in b.names[:-1]:
            b.set_ready(name, True)
        w.wait_for("report of the first nodes ready", shows(b.names[:-1], "True"))
        b.set_ready(b.names[-1], True)
        ack = time.monotonic()
        rc = w.finish(30)
        exited = time.monotonic()
    if rc != 0:
        raise RuntimeError(f"fracctl wait exited {rc}: {w.tail()}")
    nodes = json.loads(w.stdout)["nodes"]
    if sorted(nodes) != sorted(b.names) or not all(s.startswith("True") for s in nodes.values()):
        raise RuntimeError(f"fracctl wait answered {nodes}")
    last = shows(b.names[-1:], "True")
    seen = next(t for i, t in enumerate(w.arrived) if last(w.lines[: i + 1]))
    return {
        "reaction": exited - ack,
        "reported": seen - ack,  # its progress line for the last node was read here
        "startup_to_list": listed - started,
        "list_to_watch": watching - listed,
    }


def poll_trial(
    b: Bench, env: dict[str, str], cwd: str, kubectl: str, phase: float
) -> dict[str, Any]:
    selector = ",".join(f"{k}={v}" for k, v in SELECTOR.items())
    argv = ["bash", "-c", POLL_SCRIPT, "poll", kubectl, b.cp.kubeconfig, selector, b.cond,
            str(POLL_SECONDS)]  # fmt: skip
    with Waiter(argv, env, cwd) as w:
        w.wait_for("first check", lambda lines: any(x.startswith("poll:") for x in lines))
        time.sleep(phase)
        for name in b.names:
            b.set_ready(name, True)
        ack = time.monotonic()
        rc = w.finish(POLL_SECONDS * 3)
        exited = time.monotonic()
    if rc != 0 or w.stdout.strip() != "all ready":
        raise RuntimeError(f"the poll loop exited {rc} ({w.stdout.strip()!r}): {w.tail()}")
    checks = sum(1 for x in w.lines if x.startswith("poll:"))
    return {"reaction": exited - ack, "phase": phase, "failed_checks": checks}


# --- the report ------------------------------------------------------------------------


def p90(xs: list[float]) -> float:
    """Nearest-rank 90th percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def summarise(results: dict[str, Any]) -> str:
    lines = [
        f"{results['nodes']} nodes, {results['trials']} trials each, {results['cpus']} CPUs, "
        f"load before {results['load_before']}, after {results['load_after']}",
        "",
        "| waiter | median | p90 | min | max |",
        "|---|---|---|---|---|",
    ]
    for key, label in (("fracctl", "fracctl wait (watch)"), ("poll_10s", "10 s poll loop")):
        xs = results[key]
        lines.append(
            f"| {label} | {statistics.median(xs):.3f} s | {p90(xs):.3f} s | "
            f"{min(xs):.3f} s | {max(xs):.3f} s |"
        )
    seen = [d["reported"] for d in results["fracctl_detail"]]
    shut = [d["reaction"] - d["reported"] for d in results["fracctl_detail"]]
    lines.append(
        f"fracctl split (medians): last write ack -> its progress line for the last node "
        f"{statistics.median(seen):.3f} s, that line -> process exit "
        f"{statistics.median(shut):.3f} s"
    )
    med = statistics.median(results["fracctl"])
    lines.append(
        f"target median < {results['target_seconds']} s: {'met' if med < 0.5 else 'NOT met'} "
        f"({med:.3f} s); poll loop / fracctl median: "
        f"{statistics.median(results['poll_10s']) / med:.0f}x"
    )
    return "\n".join(lines)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 trials each")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1, help="of the poll-phase generator")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out" / "wait.json"))
    args, _ = ap.parse_known_args(argv)  # benchmarks/run.py passes every bench the same
    trials = 5 if args.quick else args.trials
    if args.nodes < 2 or trials < 1:
        print("bench_wait: needs --nodes 2 or more and --trials 1 or more", file=sys.stderr)
        return 2
    kubectl = shutil.which("kubectl")
    if not kubectl:
        print("bench_wait: kubectl is needed for the poll-loop baseline", file=sys.stderr)
        return 2

    state = Path(tempfile.mkdtemp(prefix="fracctl-bench-wait-"))
    cp = controlplane.start(state, binaries=controlplane.find_binaries(REPO))
    rng = random.Random(args.seed)
    results: dict[str, Any] = {
        "nodes": args.nodes,
        "trials": trials,
        "cpus": os.cpu_count(),
        "target_seconds": 0.5,
        "condition": Config().condition,
        "selector": SELECTOR,
        "poll_seconds": POLL_SECONDS,
        "poll_tool": f"bash + {kubectl}",
        "load_before": loadavg(),
    }
    try:
        b = Bench(cp, args.nodes)
        b.seed()
        env, cwd = env_for_children(), str(state)
        fr: list[dict[str, Any]] = []
        for i in range(trials):
            b.set_all(False)
            fr.append(fracctl_trial(b, env, cwd))
            print(f"fracctl  {i + 1:2d}/{trials}: {fr[-1]['reaction']:.3f} s", file=sys.stderr)
        po: list[dict[str, Any]] = []
        for i in range(trials):
            b.set_all(False)
            phase = rng.uniform(0, POLL_SECONDS)
            po.append(poll_trial(b, env, cwd, kubectl, phase))
            print(f"poll_10s {i + 1:2d}/{trials}: {po[-1]['reaction']:.3f} s "
                  f"(write {phase:.1f} s after a check)", file=sys.stderr)  # fmt: skip
        results["fracctl"] = [round(r["reaction"], 4) for r in fr]
        results["poll_10s"] = [round(r["reaction"], 4) for r in po]
        results["fracctl_detail"] = fr
        results["poll_10s_detail"] = po
        results["load_after"] = loadavg()
    finally:
        cp.stop()
        shutil.rmtree(state, ignore_errors=True)

    report.save(args.out, results, summarise(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
