"""The incident on the shared control plane: nodes, the live object, a git repo, a config."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fracctl import config as cfg
from fracctl.adapters.git import init_repo
from fracctl.flows.context import Context
from fracctl.sandbox.operator_sim import LEASE_DURATION, OperatorSimulation, SimulationThread
from tests.support.config_files import edit_config, merged, write_config
from tests.support.helpers import Cluster

REPO = Path(__file__).resolve().parents[2]
OLD = {"example.org/gpu-class": "rtx-pro-6000"}
NEW = {"example.org/gpu-fractions": "enabled"}


@dataclass
class Incident:
    cluster: Cluster
    root: Path
    config_file: Path

    def edit_config(self, *, to: Path | None = None, **changes: Mapping[str, Any]) -> Path:
        """The incident's fracctl.yaml with ``changes`` merged in, section by section
        (``timeouts={"delete": "2s"}``), written to ``to`` or back in place."""
        return edit_config(self.config_file, to=to, **changes)

    def config(self, **overrides: Any) -> cfg.Config:
        flags = {k.replace("__", "."): v for k, v in overrides.items()}
        return cfg.load(str(self.config_file), env={}, overrides=flags)

    def context(self, env: dict[str, str] | None = None, **overrides: Any) -> Context:
        kube = self.cluster.kube
        return Context(config=self.config(**overrides), kube_factory=lambda: kube, env=env or {})

    def operator(
        self, delay: float = 0.2, lease_duration: int = LEASE_DURATION
    ) -> SimulationThread:
        """The operator simulation, leading (a fresh Lease) while the context is open.

        A short ``lease_duration`` lets a test see the Lease go stale soon after it stops.
        """
        sim = OperatorSimulation(
            self.cluster.kube, self.cluster.config, delay=delay, lease_duration=lease_duration
        )
        return SimulationThread(sim)

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    def desired(self) -> list[dict[str, Any]]:
        from fracctl.flows.render import render_desired

        return render_desired(self.context())


def make_incident(
    cluster: Cluster, root: Path, *, label_b200: bool = True, **settings: Mapping[str, Any]
) -> Incident:
    """The incident on ``cluster``, its git repo and fracctl.yaml under ``root``.

    The file uses the apply backend and short timeouts; ``settings`` are merged into it,
    section by section (``timeouts={"ready": "90s"}``).
    """
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True, ready=True)
    cluster.node("b200-0", gpu_class="b200", opt_in=label_b200)
    cluster.node("h200-0", gpu_class="h200")
    cluster.runtime_class()
    cluster.target(OLD)
    cluster.kube.patch(
        _ref(cluster), "default", {"metadata": {"finalizers": [cluster.config.target.finalizer]}}
    )
    cluster.operator_leads()  # the operator put the finalizer there, and leads
    gitops = root / "gitops"
    shutil.copytree(REPO / "examples" / "gitops", gitops)
    init_repo(gitops, message="desired")
    base: dict[str, dict[str, Any]] = {
        "kube": {"kubeconfig": cluster.kubeconfig},
        "git": {"repo": gitops, "path": "gpu-fractioning"},
        "recreate": {
            "backend": "apply",
            "lock_namespace": "fracctl-test",
            "state_dir": root / "state",
        },
        "timeouts": {"ready": "20s", "delete": "20s", "sync": "20s", "lock_lease": "30s"},
    }
    config_file = write_config(root / "fracctl.yaml", merged(base, settings))
    return Incident(cluster, root, config_file)


def _ref(cluster: Cluster):  # type: ignore[no-untyped-def]
    from tests.support.helpers import ref_for

    return ref_for(cluster.config)
