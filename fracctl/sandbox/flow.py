"""``fracctl sandbox``: a real local control plane seeded with a scenario.

The control plane is real (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler); KWOK plays the nodes' kubelets (:mod:`.controllers`); the
gpu-fractioning operator and the KAI scheduler are clearly named simulations
(:mod:`.operator_sim`, :mod:`.kai_sim`), run by one process beside them.

This module is the life cycle: ``up``, ``down``, ``status`` and ``env``. Populating a
new sandbox is in :mod:`.seed`, the simulation process in :mod:`.simulation`, the Argo
CD beside it in :mod:`.argocd_wiring` and the state dir's layout in :mod:`.layout`;
their names are importable from here as well.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.core.kube.nodes import condition
from fracctl.core.kube.resources import NODES, split_api_version
from fracctl.errors import FracctlError, UsageError
from fracctl.flows.context import Context
from fracctl.sandbox import (
    argocd_local,
    controllers,
    controlplane,
    fleet_box,
    fleet_wiring,
    flux_local,
)
from fracctl.sandbox.argocd_wiring import (
    HUB_APP,
    argocd_running,
    argocd_status,
    start_argocd,
)
from fracctl.sandbox.chart import chart_key
from fracctl.sandbox.flux_wiring import flux_running, flux_status, start_flux
from fracctl.sandbox.layout import (
    DEFAULT_SCENARIO,
    REPO_ROOT,
    SANDBOX_APP,
    Sandbox,
    default_root,
)
from fracctl.sandbox.seed import (
    install_crd,
    install_crds,
    install_kai_config_crd,
    load_scenario,
    node_object,
    populate,
    sandbox_config,
    seed,
)
from fracctl.sandbox.simulation import (
    SIM_SETTLE,
    SIM_START_TIMEOUT,
    launch_simulation,
    run_operator_simulation,
    simulation_argv,
)

__all__ = [
    "DEFAULT_SCENARIO",
    "REPO_ROOT",
    "SANDBOX_APP",
    "SIM_SETTLE",
    "SIM_START_TIMEOUT",
    "Sandbox",
    "argocd_local",
    "controlplane",
    "default_root",
    "down",
    "dump",
    "env_lines",
    "install_crd",
    "install_kai_config_crd",
    "load_scenario",
    "node_object",
    "run_operator_simulation",
    "sandbox_config",
    "seed",
    "simulation_argv",
    "start_argocd",
    "start_simulation",
    "status",
    "up",
]


def up(
    ctx: Context,
    *,
    root: Path,
    scenario_file: Path,
    argocd: bool = False,
    flux: bool = False,
    clusters: int = 0,
) -> dict[str, Any]:
    """Start the sandbox (or report the running one) and seed the scenario.

    With ``argocd`` a real Argo CD runs beside it and owns the target (see
    :func:`start_argocd`); with ``flux`` a real Flux does (:func:`start_flux`). With
    ``clusters`` (and ``argocd``) that many member clusters run beside it as a gated
    fleet that Argo CD rolls out (:mod:`.fleet_box`, :mod:`.fleet_wiring`).
    """
    _check_flags(argocd=argocd, flux=flux, clusters=clusters)
    root = Path(os.path.abspath(root))  # written into fracctl.yaml; the simulation runs there
    box = Sandbox(root)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is not None and cp.alive():
        for wanted, running, flag in (
            (argocd, argocd_running, "--argocd"),
            (flux, flux_running, "--flux"),
        ):
            if wanted and not running(box):
                raise UsageError(
                    f"the sandbox runs without {'Argo CD' if flag == '--argocd' else 'Flux'}",
                    hint=f"stop it with 'fracctl sandbox down', then 'fracctl sandbox up {flag}'",
                )
        return {**status(ctx, root=root), "already_running": True}
    scenario = load_scenario(scenario_file)
    if cp is not None:  # a dead leftover: clear it out first
        down(root=root)
    binaries = controlplane.find_binaries()
    kwok = controllers.find_kwok()
    root.mkdir(parents=True, exist_ok=True)
    ctx.info(f"starting the control plane from {binaries}, KWOK from {kwok}")
    cp = controlplane.start(box.cp_dir, binaries=binaries, detach=True)
    try:
        install_crds(ctx, cp)  # before the garbage collector reads discovery
        controllers.start_beside(cp, binaries=binaries, kwok=kwok, detach=True)
        gitops_path = populate(ctx, box, cp, scenario, scenario_file, flux=flux)
        key = chart_key(scenario) if flux else None
        chart = scenario[key] if key else None
        if chart is not None:  # its HelmRelease installs the chart first
            start_flux(ctx, box, gitops_path, chart=chart)
        start_simulation(box)
        if argocd:
            start_argocd(ctx, box, gitops_path, app=HUB_APP if clusters else SANDBOX_APP)
        if clusters:
            _start_fleet(ctx, box, cp, clusters, scenario, scenario_file, binaries, kwok)
        if flux and chart is None:
            start_flux(ctx, box, gitops_path)
    except BaseException:
        _stop(box)  # a failed start leaves nothing running; its logs stay for a look
        raise
    return status(ctx, root=root)


#: The fleet's git repository in the sandbox's folder: a commit there is the rollout.
FLEET_GIT = "fleet-git"


def _check_flags(*, argocd: bool, flux: bool, clusters: int) -> None:
    """Refuse (exit 2) flags that do not go together, before anything starts."""
    if argocd and flux:
        raise UsageError("--argocd and --flux each own the target: choose one")
    if clusters and not argocd:
        raise UsageError("--clusters needs --argocd: Argo CD rolls the fleet out")
    if clusters < 0 or clusters > 8:
        raise UsageError(f"--clusters {clusters}: give 1 to 8 member clusters")


def _start_fleet(
    ctx: Context,
    box: Sandbox,
    hub: controlplane.ControlPlane,
    count: int,
    scenario: dict[str, Any],
    scenario_file: Path,
    binaries: Path,
    kwok: Path,
) -> None:
    """The member clusters, the fleet's git repository and Argo CD's side of it."""
    members = fleet_box.start_members(
        ctx, box, count, scenario, scenario_file, binaries=binaries, kwok=kwok
    )
    text = fleet_box.live_config_text(scenario, ctx.config.target.kind)
    repo = fleet_wiring.gated_repo(box.root / FLEET_GIT, text)
    for member in fleet_box.members_of(box).values():  # git is the fleet's, as Argo CD's
        member.config_file.write_text(
            sandbox_config(member, "app", repo=repo, lock_namespace=fleet_box.GATE_LOCK_NAMESPACE)
        )
    kube = Kube.connect(kubeconfig=str(box.kubeconfig))
    try:
        fleet_wiring.register(kube, repo, members, hub=hub)
    finally:
        kube.close()


def start_simulation(box: Sandbox) -> None:
    """Start the operator simulation detached, and return once it has started.

    Started means: it connected and finished a first reconcile (it writes its ready
    file then) and is still running a moment later. The command line and the timeout
    are looked up here (:func:`simulation_argv`, ``SIM_START_TIMEOUT``) at each call.

    Raises:
        ExternalError: it exited (the last lines of its log say why) or did not get
            ready in time; it is stopped either way.
    """
    launch_simulation(box, simulation_argv(box), timeout=SIM_START_TIMEOUT, settle=SIM_SETTLE)


def down(*, root: Path) -> bool:
    """Stop everything the sandbox started and remove its state. Idempotent.

    It reads only what the sandbox recorded under ``root`` (process ids, the control
    plane's state), never fracctl.yaml: a configuration made invalid since ``up`` must
    not leave the processes running with their state gone.
    """
    found = _stop(Sandbox(root))
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
    return found


def _stop(box: Sandbox) -> bool:
    """Stop every process the sandbox started (by recorded PID); whether any was found."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:  # the members beside the hub
        members = pool.submit(fleet_box.stop_members, box)
        found = _stop_hub(box)
        return members.result() or found


def _stop_hub(box: Sandbox) -> bool:
    found = fleet_box.stop_recorded(box.sim_pid_file)
    for local in (
        argocd_local.LocalArgoCD.load(box.argocd_dir),
        flux_local.LocalFlux.load(box.flux_dir),
    ):
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
        "pids": {"etcd": cp.etcd_pid, "kube-apiserver": cp.apiserver_pid, **cp.components},
        "components": {
            name: "running" if controlplane.alive(pid) else "stopped"
            for name, pid in {
                "etcd": cp.etcd_pid,
                "kube-apiserver": cp.apiserver_pid,
                **cp.components,
            }.items()
        },
        "operator_simulation": "running" if sim_alive else "stopped",
        "kai_simulation": "running" if sim_alive else "stopped",
        "nodes": nodes,
        "target": {
            "name": f"{t.kind}/{t.name}",
            "nodeSelector": (obj or {}).get("spec", {}).get("nodeSelector") if obj else None,
        },
        "argocd": argocd_status(box),
        "flux": flux_status(box),
        "members": fleet_box.members_status(ctx, box),
        "fleet_git": str(box.root / FLEET_GIT) if (box.root / FLEET_GIT).is_dir() else None,
    }


def env_lines(root: Path, *, cluster: str = "") -> list[str]:
    """Shell lines that point kubectl and fracctl at the sandbox (or at a member)."""
    box = Sandbox(root)
    cp = controlplane.ControlPlane.load(box.cp_dir)
    if cp is None or not cp.alive():
        raise UsageError("the sandbox is not running; start it with 'fracctl sandbox up'")
    if cluster:
        return fleet_box.member_env(box, cluster) + _argocd_lines(box, fleet=True)
    lines = [f"export KUBECONFIG={box.kubeconfig}", f"export FRACCTL_CONFIG={box.config_file}"]
    if helm := _helm_folder(box):  # the helm the sandbox installed its chart with
        lines.append(f'export PATH="{helm}:$PATH"')
    return lines + _argocd_lines(box)


def _argocd_lines(box: Sandbox, *, fleet: bool = False) -> list[str]:
    """Argo CD's CLI (``argocd``, as admin) and, for fracctl, its server and CI token."""
    local = argocd_local.LocalArgoCD.load(box.argocd_dir)
    if local is None or not local.alive():
        return []
    cli = Path(local.state_dir) / "cli"
    lines = [f"export ARGOCD_SERVER={local.address}"]
    if not fleet:  # a member's fracctl.yaml names no Argo CD: its gate needs none
        lines.append(f"export FRACCTL_ARGOCD_TOKEN_FILE={local.token_file()}")
    if (cli / "config").is_file():
        lines.append(f'export PATH="{cli / "bin"}:$PATH"')
        lines.append(f'export ARGOCD_OPTS="--plaintext --config {cli / "config"}"')
    else:  # started before the CLI's config was written
        lines.append("export ARGOCD_OPTS=--plaintext")
    return lines


def _helm_folder(box: Sandbox) -> str:
    """The folder of the helm the sandbox's fracctl.yaml names (``helm.binary``), if any."""
    from fracctl.config import load

    try:
        binary = load(str(box.config_file), env={}).section("helm").binary
    except FracctlError:  # a configuration that no longer loads: nothing to add
        return ""
    return str(Path(binary).parent) if "/" in binary else ""


def dump(data: dict[str, Any]) -> str:
    """JSON for ``status -o json``."""
    return json.dumps(data, indent=2)
