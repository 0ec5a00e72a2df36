"""A fleet gated by fracctl under the real Argo CD: member clusters registered with it, an
ApplicationSet with RollingSync over them whose application carries the config and
deploy/components/argocd-gate, and in each member the incident, the guard policy, the
operator simulation and the pod runner that runs the gate's hook pods.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import CONFIGMAPS, LEASES, NAMESPACES, ResourceRef
from fracctl.errors import NotFound
from fracctl.sandbox import argocd_local, fleet_wiring
from fracctl.sandbox.argocd_local.applications import put_object
from fracctl.sandbox.controlplane import ControlPlane
from fracctl.sandbox.operator_sim import OperatorSimulation
from fracctl.sandbox.pod_runner.runner import PodRunner
from tests.support.argocd_real import RealArgoCD
from tests.support.fleet_fixtures import seed_incident
from tests.support.helpers import Cluster, commit_all, run_cli, wait_deleted, wait_enforced
from tests.support.recreate_fixtures import NEW, OLD

REPO = Path(__file__).resolve().parents[2]
APPSETS = fleet_wiring.APPSETS
CLUSTERROLES = ResourceRef("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                           False)  # fmt: skip
CLUSTERROLEBINDINGS = ResourceRef("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                                  "ClusterRoleBinding", False)  # fmt: skip
ROLES = ResourceRef("rbac.authorization.k8s.io", "v1", "roles", "Role", True)
ROLEBINDINGS = ResourceRef("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
PROJECT, APPSET = "gated", "gated"
MEMBERS = {"fracctl.io/fleet": APPSET}  # the label of every member's cluster Secret
#: Argo CD retries a failed sync every 2 s (the rollout's own operation keeps it).
RETRY = {"limit": 60, "backoff": {"duration": "2s", "factor": 1, "maxDuration": "2s"}}
Obj = dict[str, Any]


@dataclass
class Member:
    """One member cluster of the fleet."""

    name: str
    step: str
    plane: ControlPlane
    cluster: Cluster
    runner: PodRunner
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def app(self) -> str:
        return f"gated-{self.name}"

    def uid(self) -> str | None:
        live = self.cluster.live_target()
        return None if live is None else str(live["metadata"]["uid"])

    def selector(self) -> dict[str, str] | None:
        live = self.cluster.live_target()
        return None if live is None else dict(live["spec"]["nodeSelector"])


@dataclass
class GateFleet:
    """The fleet, its git repository and the Argo CD that rolls it out."""

    argocd: RealArgoCD
    members: dict[str, Member]
    repo: Path

    def commit(self, selector: dict[str, str], message: str, **extra: str) -> None:
        """The config in git with ``selector`` (and ``extra`` annotations), committed."""
        path = self.repo / "app" / "gpufractioningconfig.yaml"
        text = (REPO / "examples" / "gitops" / "gpu-fractioning" / "gpufractioningconfig.yaml"
                ).read_text()  # fmt: skip
        key, value = next(iter(NEW.items()))
        new_key, new_value = next(iter(selector.items()))
        text = text.replace(f"    {key}: {value}", f"    {new_key}: {new_value}")
        if extra:
            notes = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in extra.items())
            text = text.replace("  name: default\n", f"  name: default\n  annotations:\n{notes}")
        path.write_text(text)
        commit_all(self.repo, message=message)

    def refresh(self) -> None:
        """What a git webhook does: every Application compares with git again now."""
        for m in self.members.values():
            with contextlib.suppress(NotFound):
                self.argocd.kube.patch(argocd_local.APPLICATIONS, m.app, {"metadata": {
                    "annotations": {"argocd.argoproj.io/refresh": "normal"}}},
                    namespace=argocd_local.NAMESPACE)  # fmt: skip

    def rollout(self) -> dict[str, Obj]:
        """The ApplicationSet's rollout status, by application."""
        status = self.argocd.kube.get(APPSETS, APPSET, argocd_local.NAMESPACE).get("status") or {}
        return {a["application"]: a for a in status.get("applicationStatus") or []}

    def application(self, member: str) -> Obj:
        return self.argocd.kube.get(argocd_local.APPLICATIONS, self.members[member].app,
                                    argocd_local.NAMESPACE)  # fmt: skip

    def wait(self, done: Any, what: str, timeout: float = 240) -> list[dict[str, str]]:
        """Poll the rollout until ``done(rollout)``; every distinct state seen, in order."""
        seen: list[dict[str, str]] = []
        deadline = time.monotonic() + timeout
        while True:
            rollout = self.rollout()
            now = {name: a.get("status", "") for name, a in rollout.items()}
            if now and (not seen or seen[-1] != now):
                seen.append(now)
            if done(rollout):
                return seen
            assert time.monotonic() < deadline, f"{what}: {seen}"
            time.sleep(0.3)


def cluster_secret(name: str, cp: ControlPlane, step: str) -> Obj:
    """A member as Argo CD reads it, labelled as this fleet's."""
    return fleet_wiring.cluster_secret(name, cp, step, fleet=MEMBERS)


def appset(repo: Path) -> Obj:
    """examples/argocd/gate-applicationset.yaml, pointed at this fleet and its repository."""
    return fleet_wiring.appset(repo, name=APPSET, project=PROJECT, fleet=MEMBERS,
                               prefix="gated", retry=RETRY)  # fmt: skip


def gitops(root: Path) -> Path:
    """The application's repository: examples/argocd/gate with the component beside it."""
    text = (REPO / "examples" / "argocd" / "gate" / "gpufractioningconfig.yaml").read_text()
    return fleet_wiring.gated_repo(root / "gated-git", text)


def seed_member(cp: ControlPlane) -> Cluster:
    """The incident in a member, its guard policy enforced, a node for the hook pods."""
    cluster = Cluster(kube=Kube.connect(kubeconfig=cp.kubeconfig), config=cfg.Config(),
                      kubeconfig=cp.kubeconfig)  # fmt: skip
    cluster.cleanup()
    seed_incident(cluster)
    cluster.node("cpu-0")
    r = run_cli("--kubeconfig", cp.kubeconfig, "policy", "apply")
    assert r.exit_code == 0, r.output
    wait_enforced(cluster)
    return cluster


def start_member(name: str, step: str, cp: ControlPlane, work: Path) -> Member:
    cluster = seed_member(cp)
    runner = PodRunner(cluster.kube, server=cp.url, ca_file=cp.ca_file, work=work / name)
    member = Member(name, step, cp, cluster, runner)
    sim = OperatorSimulation(cluster.kube, cluster.config, delay=0.2)
    for target in (sim.run, runner.run):
        threading.Thread(target=target, args=(member.stop,), daemon=True).start()
    return member


def wipe_member(member: Member) -> None:
    """What the gated application and the gate left in a member."""
    member.stop.set()
    kube = member.cluster.kube
    made = [(CLUSTERROLEBINDINGS, ""), (CLUSTERROLES, "")]
    made += [(ref, ns) for ns in ("default", "gpu-fractioning") for ref in (ROLEBINDINGS, ROLES)]
    for ref, ns in made:
        for obj in kube.list(ref, namespace=ns) if ns else kube.list(ref):
            if obj["metadata"]["name"].startswith("fracctl-gate-"):
                with contextlib.suppress(NotFound):
                    kube.delete(ref, obj["metadata"]["name"], ns or None)
    for cm in kube.list(CONFIGMAPS, namespace="default"):
        if cm["metadata"]["name"].startswith("fracctl-"):
            with contextlib.suppress(NotFound):
                kube.delete(CONFIGMAPS, cm["metadata"]["name"], "default")
    with contextlib.suppress(NotFound):
        kube.delete(LEASES, "fracctl-recreate", "default")
    with contextlib.suppress(NotFound):
        kube.delete(NAMESPACES, "fracctl")
    wait_deleted(kube, NAMESPACES, "fracctl")  # the next test on this plane may want it
    member.cluster.cleanup()


@contextlib.contextmanager
def gate_fleet(argocd: RealArgoCD, planes: dict[str, tuple[ControlPlane, str]], root: Path,
               hub: ControlPlane) -> Iterator[GateFleet]:  # fmt: skip
    """The gated fleet (``planes``: name -> (control plane, step label)), each member's gate
    reading the rollout's order from ``hub`` (where Argo CD runs); all removed after."""
    kube = argocd.kube
    members: dict[str, Member] = {}
    project = fleet_wiring.project(PROJECT)
    try:
        for name, (cp, step) in planes.items():
            members[name] = start_member(name, step, cp, root / "runner")
        repo = gitops(root)
        fleet = GateFleet(argocd, members, repo)
        fleet.commit(OLD, "the fleet as it runs")
        put_object(kube, argocd_local.APPPROJECTS, project)
        for name, (cp, step) in planes.items():
            put_object(kube, argocd_local.SECRETS, cluster_secret(name, cp, step))
        reader = fleet_wiring.hub_reader(kube, hub)
        for member in members.values():
            fleet_wiring.put_gate_fleet(member.cluster.kube, reader)
        yield fleet
    finally:
        with contextlib.suppress(NotFound):
            kube.delete(APPSETS, APPSET, argocd_local.NAMESPACE)
        deadline = time.monotonic() + 30
        while any(kube.get_or_none(argocd_local.APPLICATIONS, m.app, argocd_local.NAMESPACE)
                  for m in members.values()):  # fmt: skip
            assert time.monotonic() < deadline, "the ApplicationSet's Applications stayed"
            time.sleep(0.2)
        for name in planes:
            with contextlib.suppress(NotFound):
                kube.delete(argocd_local.SECRETS, f"cluster-{name}", argocd_local.NAMESPACE)
        with contextlib.suppress(NotFound):
            kube.delete(argocd_local.APPPROJECTS, PROJECT, argocd_local.NAMESPACE)
        for member in members.values():
            wipe_member(member)
