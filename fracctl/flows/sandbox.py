"""``fracctl sandbox``: a real local control plane seeded with a scenario.

The control plane is a real kube-apiserver + etcd; the GPU nodes are Node objects and
the gpu-fractioning operator is a clearly named simulation (:mod:`operator_sim`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fracctl.adapters import controlplane
from fracctl.adapters.git import init_repo
from fracctl.adapters.kube import Kube
from fracctl.config import Config
from fracctl.core.crd import fractioning_crd
from fracctl.core.nodes import condition
from fracctl.core.resources import CRDS, NAMESPACES, NODES, split_api_version
from fracctl.errors import Conflict, TimedOut, UsageError
from fracctl.flows.context import Context

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = REPO_ROOT / "examples" / "sandbox" / "incident.yaml"


@dataclass
class Sandbox:
    """Paths of a sandbox's state."""

    root: Path

    @property
    def cp_dir(self) -> Path:
        """Control-plane state."""
        return self.root / "controlplane"

    @property
    def config_file(self) -> Path:
        """The fracctl.yaml that points at the sandbox."""
        return self.root / "fracctl.yaml"

    @property
    def gitops(self) -> Path:
        """The sandbox's local git repository."""
        return self.root / "gitops"

    @property
    def sim_pid_file(self) -> Path:
        """PID of the operator simulation."""
        return self.root / "operator-sim.pid"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig."""
        return self.cp_dir / "kubeconfig"


def default_root(env: dict[str, str]) -> Path:
    """``$FRACCTL_SANDBOX_DIR`` or ``~/.local/state/fracctl/sandbox``."""
    base = env.get("FRACCTL_SANDBOX_DIR") or os.path.join(
        env.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "fracctl", "sandbox"
    )
    return Path(base)


def load_scenario(path: Path) -> dict[str, Any]:
    """Read and minimally validate a scenario file."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    if not path.is_file():
        raise UsageError(f"{path}: scenario file not found")
    try:
        doc = YAML(typ="safe").load(path.read_text())
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list):
        raise UsageError(f"{path}: a scenario needs a 'nodes' list")
    for i, node in enumerate(doc["nodes"]):
        if not isinstance(node, dict) or not node.get("name"):
            raise UsageError(f"{path}: nodes[{i}] needs a name")
    return doc


def install_crd(kube: Kube, config: Config, *, timeout: float = 30.0) -> None:
    """Create (or keep) the fractioning CRD and wait until it is established."""
    t = config.target
    crd = fractioning_crd(group=t.group, kind=t.kind, plural=t.plural, version=t.version)
    try:
        kube.create(CRDS, crd)
    except Conflict:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = kube.get(CRDS, crd["metadata"]["name"])
        for c in (live.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Established" and c.get("status") == "True":
                # Discovery can lag a moment behind Established.
                try:
                    kube.request("GET", f"/apis/{t.group}/{t.version}/{t.plural}")
                    return
                except Exception:  # noqa: BLE001 - retried until the deadline
                    break
        time.sleep(0.2)
    raise TimedOut(f"CRD {crd['metadata']['name']} not established after {timeout:.0f}s")


def node_object(
    name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    """A Node as a cloud provider would register it (no kubelet here)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints or []},
    }


def seed(kube: Kube, scenario: dict[str, Any]) -> None:
    """Create the scenario's namespaces, nodes and objects (existing ones are kept)."""
    for ns in scenario.get("namespaces") or []:
        try:
            kube.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            )
        except Conflict:
            pass
    for node in scenario["nodes"]:
        body = node_object(node["name"], dict(node.get("labels") or {}), node.get("taints"))
        if node.get("annotations"):
            body["metadata"]["annotations"] = dict(node["annotations"])
        try:
            kube.create(NODES, body)
        except Conflict:
            pass
    for obj in scenario.get("objects") or []:
        ref = kube.resolve(obj["apiVersion"], obj["kind"])
        try:
            kube.create(ref, obj)
        except Conflict:
            pass


def sandbox_config(box: Sandbox, gitops_path: str) -> str:
    """The fracctl.yaml that points every command at the sandbox."""
    return (
        "# Written by `fracctl sandbox up`: points fracctl at the local sandbox.\n"
        "kube:\n"
        f"  kubeconfig: {box.kubeconfig}\n"
        "git:\n"
        f"  repo: {box.gitops}\n"
        f"  path: {gitops_path}\n"
        "  revision: HEAD\n"
        "recreate:\n"
        "  backend: apply\n"
        "  lock_namespace: gpu-fractioning\n"
        f"  state_dir: {box.root / 'state'}\n"
        "timeouts:\n"
        "  ready: 2m\n"
        "  delete: 1m\n"
    )


def up(ctx: Context, *, root: Path, scenario_file: Path) -> dict[str, Any]:
    """Start the sandbox (or report the running one) and seed the scenario."""
    box = Sandbox(root)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is not None and cp.alive():
        return {**status(ctx, root=root), "already_running": True}
    scenario = load_scenario(scenario_file)
    if cp is not None:  # a dead leftover: clear it out first
        down(ctx, root=root)
    root.mkdir(parents=True, exist_ok=True)
    binaries = controlplane.find_binaries()
    ctx.info(f"starting kube-apiserver and etcd from {binaries}")
    cp = controlplane.start(box.cp_dir, binaries=binaries, detach=True)
    kube = Kube.connect(kubeconfig=cp.kubeconfig)
    install_crd(kube, ctx.config)
    seed(kube, scenario)

    gitops_src = (scenario_file.parent / str(scenario.get("gitops") or "")).resolve()
    gitops_path = "."
    if scenario.get("gitops") and gitops_src.is_dir():
        shutil.copytree(gitops_src, box.gitops, dirs_exist_ok=True)
        subdirs = [p.name for p in box.gitops.iterdir() if p.is_dir() and p.name != ".git"]
        gitops_path = subdirs[0] if len(subdirs) == 1 else "."
        if not (box.gitops / ".git").exists():
            init_repo(box.gitops, message="desired state: select the opt-in label")
    box.config_file.write_text(sandbox_config(box, gitops_path))

    with open(root / "operator-sim.log", "ab") as log:
        argv = [sys.executable, "-m", "fracctl", "--config", str(box.config_file)]
        sim = controlplane.spawn([*argv, "sandbox", "operator-sim"], log, detach=True)
    box.sim_pid_file.write_text(str(sim.pid))
    return status(ctx, root=root)


def down(ctx: Context, *, root: Path) -> bool:
    """Stop everything the sandbox started and remove its state. Idempotent."""
    box = Sandbox(root)
    found = False
    if box.sim_pid_file.is_file():
        found = True
        try:
            controlplane.terminate(int(box.sim_pid_file.read_text().strip()), 5.0)
        except ValueError:
            pass
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is not None:
        found = True
        cp.stop()
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
    return found


def status(ctx: Context, *, root: Path) -> dict[str, Any]:
    """What runs, where, and the scenario nodes with their readiness."""
    box = Sandbox(root)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is None or not cp.alive():
        return {"running": False, "state_dir": str(root)}
    kube = Kube.connect(kubeconfig=cp.kubeconfig)
    cond = ctx.config.condition
    nodes = []
    for node in kube.list(NODES):
        c = condition(node, cond)
        nodes.append(
            {
                "name": node["metadata"]["name"],
                "labels": node["metadata"].get("labels") or {},
                "ready": c.get("status") if c else "missing",
            }
        )
    t = ctx.config.target
    group, _ = split_api_version(t.api_version)
    obj = kube.get_or_none(kube.resolve(t.api_version, t.kind), t.name)
    sim_alive = False
    if box.sim_pid_file.is_file():
        sim_alive = controlplane.alive(int(box.sim_pid_file.read_text().strip() or 0))
    return {
        "running": True,
        "state_dir": str(root),
        "server": cp.url,
        "kubeconfig": cp.kubeconfig,
        "config": str(box.config_file),
        "pids": {"etcd": cp.etcd_pid, "kube-apiserver": cp.apiserver_pid},
        "operator_simulation": "running" if sim_alive else "stopped",
        "nodes": nodes,
        "target": {
            "name": f"{t.kind}/{t.name}",
            "nodeSelector": (obj or {}).get("spec", {}).get("nodeSelector") if obj else None,
        },
    }


def env_lines(root: Path) -> list[str]:
    """Shell lines that point kubectl and fracctl at the sandbox."""
    box = Sandbox(root)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is None or not cp.alive():
        raise UsageError("the sandbox is not running; start it with 'fracctl sandbox up'")
    return [f"export KUBECONFIG={box.kubeconfig}", f"export FRACCTL_CONFIG={box.config_file}"]


def run_operator_simulation(ctx: Context) -> None:
    """Run the operator simulation in the foreground until SIGTERM."""
    import threading

    from fracctl.flows.operator_sim import OperatorSimulation

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    OperatorSimulation(ctx.kube, ctx.config, delay=2.0).run(stop)


def dump(data: dict[str, Any]) -> str:
    """JSON for ``status -o json``."""
    return json.dumps(data, indent=2)
