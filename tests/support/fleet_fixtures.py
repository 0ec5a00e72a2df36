"""Several real API servers as one fleet: a kubeconfig with a context per cluster, seeds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fracctl import config as cfg
from fracctl.adapters.git import init_repo
from fracctl.flows.context import Context
from fracctl.sandbox import controlplane
from fracctl.sandbox.operator_sim import OperatorSimulation, SimulationThread
from tests.support.helpers import Cluster
from tests.support.recreate_fixtures import NEW, OLD

REPO = Path(__file__).resolve().parents[2]
FRACTIONAL = {"gpu-fraction": "0.5"}


def merged_kubeconfig(
    planes: dict[str, controlplane.ControlPlane], path: Path, *, unreachable: str | None = None
) -> str:
    """One kubeconfig with a context per control plane (named as the keys of ``planes``).

    ``unreachable`` adds a context of that name pointing at a closed loopback port.
    """
    clusters, users, contexts = [], [], []
    first: dict[str, Any] = {}
    for name, cp in planes.items():
        doc = json.loads(Path(cp.kubeconfig).read_text())
        cluster = doc["clusters"][0]["cluster"]
        first = first or cluster
        clusters.append({"name": name, "cluster": cluster})
        users.append({"name": name, "user": doc["users"][0]["user"]})
        contexts.append({"name": name, "context": {"cluster": name, "user": name}})
    if unreachable:
        closed = {**first, "server": f"https://127.0.0.1:{controlplane.free_port()}"}
        clusters.append({"name": unreachable, "cluster": closed})
        contexts.append(
            {"name": unreachable, "context": {"cluster": unreachable, "user": users[0]["name"]}}
        )
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": contexts[0]["name"],
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return str(path)


def nodes(cluster: Cluster, *, b200_ready: bool = False) -> None:
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True, ready=True)
    cluster.node("b200-0", gpu_class="b200", opt_in=True, ready=b200_ready or None)
    cluster.node("h200-0", gpu_class="h200")
    cluster.runtime_class()


def seed_clean(cluster: Cluster) -> None:
    """In sync with git, every selected node ready."""
    nodes(cluster, b200_ready=True)
    cluster.target(NEW)


def seed_incident(cluster: Cluster) -> None:
    """The incident: the live object has the old selector and the operator's finalizer."""
    nodes(cluster)
    cluster.target(OLD)
    t = cluster.config.target
    cluster.kube.patch(t.ref, t.name, {"metadata": {"finalizers": [t.finalizer]}})
    cluster.operator_leads()  # the operator put the finalizer there, and leads


def seed_fractional(cluster: Cluster) -> None:
    """The incident, and a fractional pod running on the RTX node."""
    seed_incident(cluster)
    cluster.pod("team-a", "trainer-0", annotations=FRACTIONAL, node="rtx-pro-6000-0")


@dataclass
class Fleet:
    """Three clusters (eu, us, ap) on three API servers, a git repo and a config file."""

    clusters: dict[str, Cluster]
    kubeconfig: str
    root: Path
    gitops: Path
    config_file: Path = field(init=False)

    def __post_init__(self) -> None:
        self.config_file = self.root / "fracctl.yaml"
        self.write_config()

    def write_config(self, fleet: list[dict[str, Any]] | None = None, *, ready: str = "20s") -> str:
        doc: dict[str, Any] = {
            "kube": {"kubeconfig": self.kubeconfig},
            "git": {"repo": str(self.gitops), "path": "gpu-fractioning"},
            "recreate": {
                "backend": "apply",
                "lock_namespace": "fracctl-test",
                "state_dir": str(self.root / "state"),
            },
            "timeouts": {"ready": ready, "delete": "20s", "sync": "20s", "lock_lease": "30s"},
        }
        if fleet is not None:
            doc["fleet"] = {"clusters": fleet}
        self.config_file.write_text(yaml.safe_dump(doc))
        return str(self.config_file)

    def context(self) -> Context:
        return Context(
            config=cfg.load(str(self.config_file), env={}),
            kube_factory=lambda: self.clusters["eu"].kube,
            env={},
        )

    def operators(self, *names: str) -> Iterator[SimulationThread]:
        for name in names:
            c = self.clusters[name]
            yield SimulationThread(OperatorSimulation(c.kube, c.config, delay=0.2))

    def uid(self, name: str) -> str | None:
        live = self.clusters[name].live_target()
        return None if live is None else str(live["metadata"]["uid"])

    def selector(self, name: str) -> dict[str, str] | None:
        live = self.clusters[name].live_target()
        return None if live is None else dict(live["spec"]["nodeSelector"])


def make_fleet(clusters: dict[str, Cluster], kubeconfig: str, root: Path) -> Fleet:
    gitops = root / "gitops"
    shutil.copytree(REPO / "examples" / "gitops", gitops)
    init_repo(gitops, message="desired")
    return Fleet(clusters, kubeconfig, root, gitops)
