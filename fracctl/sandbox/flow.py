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

from fracctl.adapters.git import init_repo
from fracctl.adapters.kube import Kube
from fracctl.config import Config
from fracctl.core.crd import fractioning_crd, kai_config_crd
from fracctl.core.doctor import KAI_CONFIG
from fracctl.core.nodes import condition
from fracctl.core.resources import CRDS, NAMESPACES, NODES, split_api_version
from fracctl.errors import Conflict, ExternalError, NotFound, TimedOut, UsageError
from fracctl.flows.context import Context
from fracctl.sandbox import argocd_local, controlplane

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SCENARIO = REPO_ROOT / "examples" / "sandbox" / "incident.yaml"
SANDBOX_APP = "gpu-fractioning"  # the Argo CD application and project of `up --argocd`


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
    def sim_ready_file(self) -> Path:
        """Written by the operator simulation once its first reconcile succeeded."""
        return self.root / "operator-sim.ready"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig."""
        return self.cp_dir / "kubeconfig"

    @property
    def argocd_dir(self) -> Path:
        """State of the real Argo CD started with ``up --argocd``."""
        return self.root / "argocd"


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
        what = "is a directory, not a scenario file" if path.is_dir() else "scenario file not found"
        raise UsageError(f"{path}: {what}")
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
    _establish(kube, crd, f"/apis/{t.group}/{t.version}/{t.plural}", timeout)


def install_kai_config_crd(kube: Kube, *, timeout: float = 30.0) -> None:
    """Create (or keep) a minimal CRD for KAI's ``Config``, as a KAI install brings it."""
    _establish(kube, kai_config_crd(), KAI_CONFIG.path(), timeout)


def _establish(kube: Kube, crd: dict[str, Any], list_path: str, timeout: float) -> None:
    """Create ``crd`` unless it exists; return once it is established and served."""
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
                    kube.request("GET", list_path)
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


def up(ctx: Context, *, root: Path, scenario_file: Path, argocd: bool = False) -> dict[str, Any]:
    """Start the sandbox (or report the running one) and seed the scenario.

    With ``argocd`` a real Argo CD runs beside it and owns the target (see
    :func:`start_argocd`).
    """
    root = Path(os.path.abspath(root))  # written into fracctl.yaml; the simulation runs there
    box = Sandbox(root)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is not None and cp.alive():
        if argocd and not _argocd_running(box):
            raise UsageError(
                "the sandbox runs without Argo CD",
                hint="stop it with 'fracctl sandbox down', then 'fracctl sandbox up --argocd'",
            )
        return {**status(ctx, root=root), "already_running": True}
    scenario = load_scenario(scenario_file)
    if cp is not None:  # a dead leftover: clear it out first
        down(ctx, root=root)
    root.mkdir(parents=True, exist_ok=True)
    binaries = controlplane.find_binaries()
    ctx.info(f"starting kube-apiserver and etcd from {binaries}")
    cp = controlplane.start(box.cp_dir, binaries=binaries, detach=True)
    try:
        gitops_path = _populate(ctx, box, cp, scenario, scenario_file)
        start_simulation(box)
        if argocd:
            start_argocd(ctx, box, gitops_path)
    except BaseException:
        _stop(box)  # a failed start leaves nothing running; its logs stay for a look
        raise
    return status(ctx, root=root)


def _populate(
    ctx: Context,
    box: Sandbox,
    cp: controlplane.ControlPlane,
    scenario: dict[str, Any],
    scenario_file: Path,
) -> str:
    """Install the CRD, seed the scenario, write the gitops repository and fracctl.yaml.

    Returns the manifests' path inside the gitops repository.
    """
    kube = Kube.connect(kubeconfig=cp.kubeconfig)
    install_crd(kube, ctx.config)
    install_kai_config_crd(kube)
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
    return gitops_path


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


def start_simulation(box: Sandbox) -> None:
    """Start the operator simulation detached, and return once it has started.

    Started means: it connected and finished a first reconcile (it writes its ready
    file then) and is still running a moment later.

    Raises:
        ExternalError: it exited (the last lines of its log say why) or did not get
            ready in time; it is stopped either way.
    """
    box.sim_ready_file.unlink(missing_ok=True)
    log_path = box.root / "operator-sim.log"
    with open(log_path, "ab") as log:
        sim = controlplane.spawn(
            simulation_argv(box), log, detach=True, cwd=box.root, env=_simulation_env()
        )
    box.sim_pid_file.write_text(str(sim.pid))
    deadline = time.monotonic() + SIM_START_TIMEOUT
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
            settled = now + SIM_SETTLE
        if settled is not None and now >= settled:
            return
        if settled is None and now >= deadline:
            controlplane.terminate(sim.pid, 5.0)
            raise ExternalError(
                f"the operator simulation did not get ready within {SIM_START_TIMEOUT:g}s",
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


def down(ctx: Context, *, root: Path) -> bool:
    """Stop everything the sandbox started and remove its state. Idempotent."""
    found = _stop(Sandbox(root))
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
    return found


def _stop(box: Sandbox) -> bool:
    """Stop every process the sandbox started (by recorded PID); whether any was found."""
    found = False
    if box.sim_pid_file.is_file():
        found = True
        try:
            controlplane.terminate(int(box.sim_pid_file.read_text().strip()), 5.0)
        except ValueError:
            pass
    local = argocd_local.LocalArgoCD.load(box.argocd_dir)
    if local is not None:  # before the control plane it talks to
        found = True
        local.stop()
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is not None:
        found = True
        cp.stop()
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
        "argocd": _argocd_status(box),
    }


def env_lines(root: Path) -> list[str]:
    """Shell lines that point kubectl and fracctl at the sandbox."""
    box = Sandbox(root)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is None or not cp.alive():
        raise UsageError("the sandbox is not running; start it with 'fracctl sandbox up'")
    lines = [f"export KUBECONFIG={box.kubeconfig}", f"export FRACCTL_CONFIG={box.config_file}"]
    local = argocd_local.LocalArgoCD.load(box.argocd_dir)
    if local is not None and local.alive():
        lines += [
            f"export ARGOCD_SERVER={local.address}",
            f"export FRACCTL_ARGOCD_TOKEN_FILE={local.token_file()}",
            "export ARGOCD_OPTS=--plaintext",
        ]
    return lines


# --- the real Argo CD beside the sandbox ----------------------------------------------


def start_argocd(ctx: Context, box: Sandbox, gitops_path: str) -> argocd_local.LocalArgoCD:
    """Start the real Argo CD beside the sandbox and point fracctl.yaml at it.

    Argo CD is built on first use. The sandbox's fracctl.yaml gets an ``argocd:``
    section and ``recreate.backend: argocd``.

    The application ``gpu-fractioning`` in project ``gpu-fractioning`` deploys the
    sandbox's git repository (``file://``); fracctl uses the CI account's token, which
    may only get and sync applications in that project.
    """
    binaries = argocd_local.locate() or argocd_local.build("build-argocd.sh")
    kustomize = argocd_local.locate_kustomize() or argocd_local.build("build-kustomize.sh")
    ctx.info(f"starting Argo CD {argocd_local.VERSION} from {binaries}")
    local = argocd_local.start(
        box.argocd_dir,
        kubeconfig=str(box.kubeconfig),
        binaries=binaries,
        kustomize=kustomize,
        project=SANDBOX_APP,
        detach=True,
    )
    kube = Kube.connect(kubeconfig=str(box.kubeconfig))
    try:
        argocd_local.put_application(
            kube,
            argocd_local.application(
                SANDBOX_APP,
                project=SANDBOX_APP,
                repo_url=f"file://{box.gitops}",
                path=gitops_path,
            ),
        )
    finally:
        kube.close()
    argocd_local.wait_compared(local, SANDBOX_APP)
    text = box.config_file.read_text().replace("  backend: apply\n", "  backend: argocd\n")
    text += (
        "argocd:\n"
        f"  server: {local.address}\n"
        "  plaintext: true\n"
        f"  app: {SANDBOX_APP}\n"
        f"  token_file: {local.token_file()}\n"
    )
    box.config_file.write_text(text)
    return local


def _argocd_running(box: Sandbox) -> bool:
    local = argocd_local.LocalArgoCD.load(box.argocd_dir)
    return local is not None and local.alive()


def _argocd_status(box: Sandbox) -> dict[str, Any] | None:
    local = argocd_local.LocalArgoCD.load(box.argocd_dir)
    if local is None:
        return None
    return {
        "server": local.url,
        "version": local.version,
        "app": SANDBOX_APP,
        "token_file": local.token_file(),
        "running": local.alive(),
        "pids": dict(local.pids),
    }


def run_operator_simulation(ctx: Context, *, ready_file: Path | None = None) -> None:
    """Run the operator simulation in the foreground until SIGTERM.

    A first reconcile runs before anything else: a failure there (no cluster, no CRD,
    bad credentials) ends the process with the error. Then ``ready_file`` is written.
    """
    import threading

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
    if ready_file is not None:
        ready_file.write_text(f"{os.getpid()}\n")
    sim.run(stop)


def dump(data: dict[str, Any]) -> str:
    """JSON for ``status -o json``."""
    return json.dumps(data, indent=2)
