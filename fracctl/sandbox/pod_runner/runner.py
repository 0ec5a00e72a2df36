"""The runner's loop: find fracctl's bound pods, run each, write its status (see the package)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fracctl.adapters.kube import Kube
from fracctl.core.clock import utc_timestamp
from fracctl.core.kube.resources import PODS
from fracctl.errors import FracctlError, NotFound
from fracctl.sandbox.pod_runner import is_runners
from fracctl.sandbox.pod_runner.launch import Launch, Obj, PodError
from fracctl.sandbox.pod_runner.volumes import plan

#: What a kubelet keeps of a termination message, and of the log as its fallback.
MESSAGE_BYTES, FALLBACK_LINES = 4096, 80


@dataclass(frozen=True)
class Ran:
    """One pod's process as it ended: how long it ran (wall clock) and its exit code."""

    namespace: str
    name: str
    seconds: float
    code: int


class PodRunner:
    """Run fracctl's pods bound on one cluster until ``stop`` is set."""

    def __init__(self, kube: Kube, *, server: str, ca_file: str, work: Path) -> None:
        self.kube = kube
        url = urlsplit(server)
        self.api = (url.hostname or "127.0.0.1", url.port or 443)
        self.ca_file = ca_file
        self.work = work
        self.started: set[str] = set()
        self.processes: dict[str, subprocess.Popen[bytes]] = {}  # "namespace/name" -> its run
        self.ran: list[Ran] = []  # every process that ended, in order
        self.lock = threading.Lock()

    def run(self, stop: threading.Event, *, interval: float = 0.2) -> None:
        """Poll for pods to run; each runs in a thread of its own."""
        while not stop.is_set():
            try:
                self.tick()
            except FracctlError:
                pass  # the API server restarts or goes away: try again
            stop.wait(interval)

    def tick(self) -> None:
        """Start every bound, pending pod of fracctl's not started yet."""
        for pod in self.kube.list(PODS):
            meta, spec = pod["metadata"], pod.get("spec") or {}
            phase = (pod.get("status") or {}).get("phase", "Pending")
            if meta["uid"] in self.started or not spec.get("nodeName") or phase != "Pending":
                continue
            if meta.get("deletionTimestamp") or not is_runners(pod):
                continue
            self.started.add(meta["uid"])
            threading.Thread(target=self._run_pod, args=(pod,), daemon=True).start()

    def _run_pod(self, pod: Obj) -> None:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        folder = self.work / pod["metadata"]["uid"]
        try:
            launch = plan(self.kube, pod, work=folder, api=self.api, ca_file=self.ca_file)
        except (PodError, FracctlError) as e:
            self._status(pod, _waiting(pod, str(e)))
            return
        started, began = utc_timestamp(), time.monotonic()
        proc = subprocess.Popen(
            launch.wrapped(switch_user=os.geteuid() == 0),
            env=launch.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with self.lock:
            self.processes[key] = proc
        self._status(pod, _running(pod, started))
        tail, reader = _drain(proc)
        self._watch_deletion(pod, proc)
        code = proc.wait()
        reader.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        meta = pod["metadata"]
        with self.lock:
            self.processes.pop(key, None)
            ran = Ran(meta["namespace"], meta["name"], time.monotonic() - began, code)
            self.ran.append(ran)
        # The sandbox's log says it too (benchmarks/bench_gate.py reads these lines).
        print(
            f"pod-runner: {ran.namespace}/{ran.name} exit {ran.code} after {ran.seconds:.3f}s",
            flush=True,
        )
        self._status(pod, _terminated(pod, launch, code, started, tail))
        shutil.rmtree(folder, ignore_errors=True)

    def _watch_deletion(self, pod: Obj, proc: subprocess.Popen[bytes]) -> None:
        """While it runs: a deleted pod's process gets SIGTERM, SIGKILL after its grace."""
        meta = pod["metadata"]
        grace = float(pod["spec"].get("terminationGracePeriodSeconds", 30))
        while proc.poll() is None:
            try:
                now = self.kube.get_or_none(PODS, meta["name"], meta["namespace"])
            except FracctlError:
                now = pod
            if (
                now is None
                or now["metadata"]["uid"] != meta["uid"]
                or now["metadata"].get("deletionTimestamp")
            ):
                _stop(proc, grace)
                return
            try:
                proc.wait(timeout=0.3)
            except subprocess.TimeoutExpired:
                continue

    def _status(self, pod: Obj, status: Obj) -> None:
        meta = pod["metadata"]
        try:
            self.kube.patch(
                PODS,
                meta["name"],
                {"status": status},
                namespace=meta["namespace"],
                subresource="status",
            )
        except (NotFound, FracctlError):
            pass  # deleted meanwhile: nobody reads it


def _drain(proc: subprocess.Popen[bytes]) -> tuple[deque[str], threading.Thread]:
    """Read the process's output in the background; the last lines are kept."""
    tail: deque[str] = deque(maxlen=FALLBACK_LINES)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line.decode("utf-8", "replace"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return tail, reader


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _conditions(now: str, ready: bool) -> list[Obj]:
    status = "True" if ready else "False"
    return [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
        {"type": "Initialized", "status": "True", "lastTransitionTime": now},
        {"type": "ContainersReady", "status": status, "lastTransitionTime": now},
        {"type": "Ready", "status": status, "lastTransitionTime": now},
    ]


def _container(pod: Obj, state: Obj, *, ready: bool) -> list[Obj]:
    c = pod["spec"]["containers"][0]
    return [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": "",
            "ready": ready,
            "restartCount": 0,
            "started": "running" in state,
            "state": state,
        }
    ]


def _waiting(pod: Obj, message: str) -> Obj:
    state = {"waiting": {"reason": "CreateContainerConfigError", "message": message}}
    return {"phase": "Pending", "containerStatuses": _container(pod, state, ready=False)}


def _running(pod: Obj, started: str) -> Obj:
    state = {"running": {"startedAt": started}}
    return {
        "phase": "Running",
        "hostIP": "10.240.0.1",
        "podIP": "10.240.0.2",
        "startTime": started,
        "conditions": _conditions(started, True),
        "containerStatuses": _container(pod, state, ready=True),
    }


def _terminated(pod: Obj, launch: Launch, code: int, started: str, tail: deque[str]) -> Obj:
    """What a kubelet writes when the container ends; exit code 128+n for a signal n."""
    code = 128 - code if code < 0 else code
    try:
        message = launch.termination_file.read_bytes()[:MESSAGE_BYTES].decode("utf-8", "replace")
    except OSError:
        message = ""
    if not message and code != 0 and launch.policy == "FallbackToLogsOnError":
        message = "".join(tail)[-MESSAGE_BYTES:]
    now = utc_timestamp()
    reason = "Completed" if code == 0 else "Error"
    ended: Obj = {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now}
    if message:
        ended["message"] = message
    state = {"terminated": ended}
    return {
        "phase": "Succeeded" if code == 0 else "Failed",
        "conditions": _conditions(now, False),
        "containerStatuses": _container(pod, state, ready=False),
    }
