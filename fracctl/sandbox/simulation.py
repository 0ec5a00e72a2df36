"""The simulations as a process of their own: its command line, start and run.

``fracctl sandbox up`` starts the process detached, with the sandbox's fracctl.yaml,
and counts it as started once it wrote its ready file and is still running a moment
later. ``fracctl sandbox operator-sim`` is that process: the operator simulation's first
reconcile, the ready file, then the operator simulation and the KAI simulation
(:mod:`.kai_sim`, in a thread) until SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from fracctl.errors import Conflict, ExternalError, NotFound
from fracctl.flows.context import Context
from fracctl.sandbox import controlplane
from fracctl.sandbox.layout import REPO_ROOT, Sandbox

# How long the operator simulation may take to connect and finish its first pass, and
# how long it must then stay up, before `up` counts it as started.
SIM_START_TIMEOUT = 30.0
SIM_SETTLE = 0.5


def simulation_argv(box: Sandbox) -> list[str]:
    """The command line of the operator simulation.

    Not ``python -m fracctl``: that imports ``fracctl`` from the working directory
    first, so a folder of that name there would be run instead. The package is taken
    from where this one was loaded, and the working directory is left off the path.
    """
    boot = (
        "import sys; "
        f"sys.path[:] = [{str(REPO_ROOT)!r}, *(p for p in sys.path if p)]; "
        "from fracctl.cli.main import main; main()"
    )
    return [
        sys.executable,
        "-c",
        boot,
        "--config",
        str(box.config_file),
        "sandbox",
        "operator-sim",
        "--ready-file",
        str(box.sim_ready_file),
    ]


def _simulation_env() -> dict[str, str]:
    # The simulation reads the sandbox's own fracctl.yaml; the caller's shell may still
    # point at another cluster (or at a sandbox that is gone).
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("FRACCTL_CONFIG", "KUBECONFIG") and not k.startswith("FRACCTL_KUBE_")
    }


def launch_simulation(
    box: Sandbox, argv: list[str], *, timeout: float = SIM_START_TIMEOUT, settle: float = SIM_SETTLE
) -> None:
    """Start ``argv`` detached as the operator simulation; return once it has started.

    Started means: its ready file appeared within ``timeout`` seconds and it still runs
    ``settle`` seconds later.

    Raises:
        ExternalError: it exited (the last lines of its log say why) or did not get
            ready in time; it is stopped either way.
    """
    box.sim_ready_file.unlink(missing_ok=True)
    log_path = box.root / "operator-sim.log"
    with open(log_path, "ab") as log:
        sim = controlplane.spawn(argv, log, detach=True, cwd=box.root, env=_simulation_env())
    box.sim_pid_file.write_text(str(sim.pid))
    deadline = time.monotonic() + timeout
    settled: float | None = None
    while True:
        code = sim.poll()
        if code is not None:
            raise ExternalError(
                f"the operator simulation exited at start (exit {code}): {_tail(log_path)}",
                hint=f"see {log_path}",
            )
        now = time.monotonic()
        if settled is None and box.sim_ready_file.is_file():
            settled = now + settle
        if settled is not None and now >= settled:
            return
        if settled is None and now >= deadline:
            controlplane.terminate(sim.pid, 5.0)
            raise ExternalError(
                f"the operator simulation did not get ready within {timeout:g}s",
                hint=f"see {log_path}",
            )
        time.sleep(0.1)


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "no log"
    last = [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(last) or "no output"


def run_operator_simulation(
    ctx: Context, *, ready_file: Path | None = None, run_pods: bool = False
) -> None:
    """Run the operator simulation in the foreground until SIGTERM.

    A first reconcile runs before anything else: a failure there (no cluster, no CRD,
    bad credentials) ends the process with the error. Then ``ready_file`` is written.
    With ``run_pods`` the pod runner runs fracctl's pods too (a fleet's member).
    """
    import threading

    from fracctl.sandbox.kai_sim import KaiSimulation
    from fracctl.sandbox.operator_sim import OperatorSimulation

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sim = OperatorSimulation(ctx.kube, ctx.config, delay=2.0)
    for attempt in range(10):
        try:
            sim.reconcile()
            break
        except (Conflict, NotFound):  # raced with a writer: the next pass sees the new state
            if attempt == 9:
                raise
            time.sleep(0.2)
    # A client of its own: the two run side by side.
    kai = threading.Thread(target=KaiSimulation(ctx.kube_factory(), ctx.config).run, args=(stop,))
    kai.start()
    if run_pods:
        _start_pod_runner(ctx, stop)
    if ready_file is not None:
        ready_file.write_text(f"{os.getpid()}\n")
    try:
        sim.run(stop)
    finally:
        stop.set()
        kai.join(timeout=10)


def _start_pod_runner(ctx: Context, stop: threading.Event) -> None:
    """The pod runner for the control plane of the sandbox whose fracctl.yaml this is."""
    from fracctl.sandbox.pod_runner.runner import PodRunner

    box = Sandbox(Path(ctx.config.source or ".").resolve().parent)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is None:
        raise ExternalError(f"no control plane under {box.cp_dir} for the pod runner")
    runner = PodRunner(
        ctx.kube_factory(), server=cp.url, ca_file=cp.ca_file, work=box.root / "pod-runner"
    )
    threading.Thread(target=runner.run, args=(stop,), daemon=True).start()
