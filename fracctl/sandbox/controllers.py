"""The rest of a control plane beside the API server: controllers, scheduler, KWOK nodes.

Nothing here is a fake. ``kube-controller-manager`` and ``kube-scheduler`` are the
upstream v1.34 binaries (built with the API server by ``scripts/build-control-plane.sh``);
KWOK (``sigs.k8s.io/kwok``, built by ``scripts/build-kwok.sh``) plays the kubelets of the
nodes annotated ``kwok.x-k8s.io/node: fake`` with the stages its module ships: it keeps
them Ready (a node Lease renewed like a kubelet's) and carries their pods from Pending to
Running and, honouring the grace period, through their deletion.

So garbage collection, PodDisruptionBudget status, the Eviction API's answers, the
workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job) and the node
lifecycle controller's taints behave as on a real cluster. Each process runs with the
admin's kubeconfig, without leader election, and serves nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from fracctl.errors import ExternalError, TimedOut, UsageError
from fracctl.sandbox.controlplane import ControlPlane, Process, spawn, terminate

#: The annotation that makes a node KWOK's (``--manage-nodes-with-annotation-selector``).
KWOK_NODE = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE = "fake"

#: KWOK's stages, as ``scripts/build-kwok.sh`` copies them from its module.
STAGES = ("node-fast.yaml", "node-heartbeat-with-lease.yaml", "pod-general.yaml")

#: A pod annotated with this keeps Terminating for its whole grace period: KWOK deletes
#: it at the later of this delay and its ``deletionTimestamp`` (without it, at a random
#: moment up to the ``deletionTimestamp``, as a container that handles SIGTERM would).
SLOW_DELETE = "pod-delete.stage.kwok.x-k8s.io/delay"

COMPONENTS = ("kube-controller-manager", "kube-scheduler", "kwok")


def find_kwok(repo_root: Path | None = None) -> Path:
    """The folder holding ``kwok`` and its ``stages/``; builds them if needed."""
    folder = os.environ.get("FRACCTL_KWOK_DIR")
    if folder:
        if (Path(folder) / "kwok").is_file() and (Path(folder) / "stages").is_dir():
            return Path(folder)
        raise UsageError(f"FRACCTL_KWOK_DIR={folder} lacks kwok or stages/")
    from fracctl.sandbox.argocd_local.binaries import build
    from fracctl.sandbox.layout import REPO_ROOT, built

    cached = built("kwok", ("kwok", "stages"))
    if repo_root is None and not (REPO_ROOT / "scripts").is_dir() and cached is not None:
        return cached  # an installed fracctl: no build scripts, the parts already built
    return build("build-kwok.sh", repo_root)


def argv(component: str, *, binaries: Path, kwok: Path, state: Path, kubeconfig: str) -> list[str]:
    """The command line of one component."""
    if component == "kube-controller-manager":
        return [
            str(binaries / component),
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
            # The tokens controller signs with the key the API server verifies.
            f"--service-account-private-key-file={state / 'certs' / 'sa.key'}",
            f"--root-ca-file={state / 'certs' / 'apiserver.crt'}",
            "--controllers=*",
            "--v=0",
        ]
    if component == "kube-scheduler":
        return [
            str(binaries / component),
            f"--kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
            "--v=0",
        ]
    if component == "kwok":
        stages = [f"--config={path}" for path in stage_files(kwok, state)]
        return [
            str(kwok / "kwok"),
            f"--kubeconfig={kubeconfig}",
            *stages,
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE}={KWOK_NODE_VALUE}",
            "--node-lease-duration-seconds=40",
            # Addresses for pods that carry no traffic: nothing listens on them.
            "--cidr=10.240.0.1/12",
            "--node-ip=10.240.0.1",
            "--server-address=",
            "--v=WARN",
        ]
    raise ValueError(component)


def stage_files(kwok: Path, state: Path) -> list[Path]:
    """KWOK's stages from ``kwok/stages``, fracctl's own pods left to the pod runner.

    Written under ``state/kwok-stages`` (:func:`fracctl.sandbox.pod_runner.leave_to_runner`).
    """
    import yaml

    from fracctl.sandbox.pod_runner import leave_to_runner

    folder = state / "kwok-stages"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in STAGES:
        docs = [d for d in yaml.safe_load_all((kwok / "stages" / name).read_text()) if d]
        (folder / name).write_text(yaml.safe_dump_all([leave_to_runner(d) for d in docs]))
        out.append(folder / name)
    return out


def start_beside(cp: ControlPlane, *, binaries: Path, kwok: Path, detach: bool = False) -> None:
    """Start kube-controller-manager, kube-scheduler and KWOK beside ``cp``; record them.

    Start them once the CRDs are installed: the garbage collector learns the kinds that
    own objects from discovery, and looks again only every 30 seconds.
    """
    cp.components = start(
        cp.state_dir, binaries=binaries, kwok=kwok, kubeconfig=cp.kubeconfig, detach=detach
    )
    cp.save()


def start(
    state_dir: str | Path,
    *,
    binaries: Path,
    kwok: Path,
    kubeconfig: str,
    detach: bool,
) -> dict[str, int]:
    """Start the three components; their PIDs by name. Each logs to ``logs/<name>.log``."""
    state = Path(state_dir)
    pids: dict[str, int] = {}
    procs: list[Process] = []
    try:
        for component in COMPONENTS:
            line = argv(component, binaries=binaries, kwok=kwok, state=state, kubeconfig=kubeconfig)
            with open(state / "logs" / f"{component}.log", "ab") as log:
                proc = spawn(line, log, detach)
            procs.append(proc)
            pids[component] = proc.pid
        _settle(state, procs)
    except BaseException:
        for pid in reversed(list(pids.values())):
            terminate(pid, 5.0)
        raise
    return pids


def _settle(state: Path, procs: list[Process], settle: float = 1.0) -> None:
    """Fail at once, with the log's last lines, when a component exits at start."""
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                name = Path(str(proc.args[0])).name  # type: ignore[index]
                raise ExternalError(
                    f"{name} exited at start ({proc.returncode}): {_tail(state, name)}",
                    hint=f"see {state / 'logs' / (name + '.log')}",
                )
        time.sleep(0.1)


def _tail(state: Path, name: str, lines: int = 3) -> str:
    try:
        text = (state / "logs" / f"{name}.log").read_text(errors="replace")
    except OSError:
        return "no log"
    last = [ln.strip() for ln in text.strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(last) or "no output"


def kwok_node(
    name: str,
    labels: dict[str, str],
    *,
    taints: list[dict[str, str]] | None = None,
    annotations: dict[str, str] | None = None,
    gpus: int = 0,
) -> dict[str, Any]:
    """A Node that KWOK plays the kubelet of, with its capacity as a kubelet registers it.

    ``gpus`` adds ``nvidia.com/gpu`` to its capacity, as the NVIDIA device plugin would.
    """
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **labels},
            "annotations": {**(annotations or {}), KWOK_NODE: KWOK_NODE_VALUE},
        },
        "spec": {"taints": taints or []},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def wait_node_ready(kube: Any, name: str, *, timeout: float = 30.0) -> dict[str, Any]:
    """Until KWOK reported the node Ready and its not-ready taint is gone.

    The node lifecycle controller lifts the taint; then a scheduler places pods there.
    """
    from fracctl.core.kube.nodes import is_ready
    from fracctl.core.kube.resources import NODES

    deadline = time.monotonic() + timeout
    while True:
        node = kube.get(NODES, name)
        taints = (node.get("spec") or {}).get("taints") or []
        if is_ready(node, "Ready") and not any(
            t.get("key") == "node.kubernetes.io/not-ready" for t in taints
        ):
            return dict(node)
        if time.monotonic() > deadline:
            raise TimedOut(
                f"node {name} not Ready after {timeout:.0f}s: is KWOK running? "
                "(see the control plane's logs/kwok.log)"
            )
        time.sleep(0.1)
