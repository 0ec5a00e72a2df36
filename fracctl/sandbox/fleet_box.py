"""The member clusters of ``fracctl sandbox up --argocd --clusters N``: start, stop, status.

Each member is a sandbox of its own under ``members/NAME`` (:class:`~.layout.Sandbox`:
its control plane, fracctl.yaml and simulation files), seeded with the same scenario;
:mod:`.fleet_wiring` registers them with the Argo CD of the sandbox they belong to.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from fracctl.adapters.kube import Kube
from fracctl.errors import UsageError
from fracctl.flows.context import Context
from fracctl.sandbox import controllers, controlplane, fleet_wiring
from fracctl.sandbox.layout import Sandbox
from fracctl.sandbox.seed import install_crds, populate
from fracctl.sandbox.simulation import (
    SIM_SETTLE,
    SIM_START_TIMEOUT,
    launch_simulation,
    simulation_argv,
)

MEMBERS = "members"
GATE_LOCK_NAMESPACE = "default"  # recreate.lock_namespace's default


def members_of(box: Sandbox) -> dict[str, Sandbox]:
    """The sandbox's members by name (those it started), in order."""
    folder = box.root / MEMBERS
    if not folder.is_dir():
        return {}
    return {p.name: Sandbox(p) for p in sorted(folder.iterdir()) if p.is_dir()}


def start_members(
    ctx: Context,
    box: Sandbox,
    count: int,
    scenario: dict[str, Any],
    scenario_file: Path,
    *,
    binaries: Path,
    kwok: Path,
) -> dict[str, tuple[controlplane.ControlPlane, str]]:
    """Start ``count`` members, each seeded, guarded, simulated and running its pods."""
    started: dict[str, tuple[controlplane.ControlPlane, str]] = {}
    for i, name in enumerate(fleet_wiring.member_names(count)):
        member = Sandbox(box.root / MEMBERS / name)
        member.root.mkdir(parents=True, exist_ok=True)
        ctx.info(f"starting member cluster {name}")
        cp = controlplane.start(member.cp_dir, binaries=binaries, detach=True)
        started[name] = (cp, fleet_wiring.step_of(i))
        install_crds(ctx, cp)
        controllers.start_beside(cp, binaries=binaries, kwok=kwok, detach=True)
        # The gate's hooks run with fracctl's defaults (the component's roles are generated
        # for them): the lock, and the guard policy's Lease, live in "default".
        populate(ctx, member, cp, scenario, scenario_file, lock_namespace=GATE_LOCK_NAMESPACE)
        launch_simulation(
            member,
            [*simulation_argv(member), "--run-pods"],
            timeout=SIM_START_TIMEOUT,
            settle=SIM_SETTLE,
        )
    return started


def live_config_text(scenario: dict[str, Any], kind: str) -> str:
    """The scenario's live config object as YAML: what the fleet's git starts with."""
    import yaml

    (obj,) = [o for o in scenario.get("objects") or [] if o.get("kind") == kind]
    return str(yaml.safe_dump(obj, sort_keys=False))


def stop_recorded(pid_file: Path, timeout: float = 5.0) -> bool:
    """Terminate the process whose PID ``pid_file`` records; whether the file existed."""
    if not pid_file.is_file():
        return False
    with contextlib.suppress(ValueError):
        controlplane.terminate(int(pid_file.read_text().strip()), timeout)
    return True


def stop_members(box: Sandbox) -> bool:
    """Stop every member's simulation and control plane; whether any was found.

    The members side by side: each API server takes seconds to shut down.
    """
    from concurrent.futures import ThreadPoolExecutor

    members = list(members_of(box).values())
    if not members:
        return False
    with ThreadPoolExecutor(max_workers=len(members)) as pool:
        return any(list(pool.map(_stop_member, members)))


def _stop_member(member: Sandbox) -> bool:
    found = stop_recorded(member.sim_pid_file)
    cp = controlplane.ControlPlane.load(member.cp_dir)
    if cp is not None:
        found = True
        cp.stop()
    return found


def members_status(ctx: Context, box: Sandbox) -> list[dict[str, Any]]:
    """Each member: its server, kubeconfig, whether it runs, and its live selector."""
    out = []
    t = ctx.config.target
    for i, (name, member) in enumerate(members_of(box).items()):
        cp = controlplane.ControlPlane.load(member.cp_dir)
        alive = cp is not None and cp.alive()
        row: dict[str, Any] = {
            "name": name,
            "step": fleet_wiring.step_of(i),
            "running": alive,
            "kubeconfig": str(member.kubeconfig),
            "config": str(member.config_file),
        }
        if alive and cp is not None:
            row["server"] = cp.url
            kube = Kube.connect(kubeconfig=cp.kubeconfig)
            try:
                obj = kube.get_or_none(kube.resolve(t.api_version, t.kind), t.name)
            finally:
                kube.close()
            row["nodeSelector"] = (obj or {}).get("spec", {}).get("nodeSelector")
        out.append(row)
    return out


def member_env(box: Sandbox, name: str) -> list[str]:
    """The export lines that point kubectl and fracctl at member ``name``."""
    members = members_of(box)
    if name not in members:
        known = (
            ", ".join(members) or "none: start it with 'fracctl sandbox up --argocd --clusters 3'"
        )
        raise UsageError(f"the sandbox has no member cluster {name!r} (members: {known})")
    member = members[name]
    return [f"export KUBECONFIG={member.kubeconfig}", f"export FRACCTL_CONFIG={member.config_file}"]
