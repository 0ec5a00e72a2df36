"""The operator installed from its chart (examples/charts/gpu-fractioning) by the real helm.

The chart is shaped like upstream's: the ``default`` config is a post-install,post-upgrade
hook with the selector hard-coded ``nvidia.com/gpu.present: "true"``. :func:`chart_incident`
installs it on the shared control plane (helm 3 or 4, each built from its Go module),
commits it to a git repository, then commits the change git wants (the selector patched
to the opt-in label, as a team that vendors the chart does) and writes a fracctl.yaml for
``recreate.backend: helm``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fracctl.adapters.git import init_repo
from fracctl.core.gitops import helm_release
from fracctl.flows.engines.helm.release import SECRETS
from tests.support.config_files import merged, write_config
from tests.support.helm import CHART
from tests.support.helpers import Cluster, commit_all
from tests.support.recreate_fixtures import Incident

RELEASE = "gpu-fractioning"  # as the operator's namespace and Deployment are named
UPSTREAM = 'nvidia.com/gpu.present: "true"'
OPT_IN = "example.org/gpu-fractions: enabled"
GPU = {"nvidia.com/gpu.present": "true"}


@dataclass
class ChartIncident(Incident):
    helm: str = "helm"
    namespace: str = RELEASE

    @property
    def gitops(self) -> Path:
        return self.root / "gitops"

    def run_helm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [self.helm, *args, "--namespace", self.namespace,
                "--kubeconfig", self.cluster.kubeconfig]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args[:2])}: {proc.stderr}")
        return proc

    def release(self) -> helm_release.Release:
        secrets = self.cluster.kube.list(
            SECRETS, namespace=self.namespace, label_selector=f"owner=helm,name={RELEASE}"
        )
        return helm_release.latest(secrets)[(self.namespace, RELEASE)]

    def git_selector(self, selector_line: str, *, message: str) -> None:
        """Commit the chart with its hook's selector line replaced."""
        cr = self.gitops / RELEASE / "templates" / "default-cr.yaml"
        text = cr.read_text()
        for line in (UPSTREAM, OPT_IN):
            text = text.replace(line, selector_line)
        cr.write_text(text)
        commit_all(self.gitops, message=message)

    def uid(self) -> str:
        live = self.cluster.live_target()
        return str(live["metadata"]["uid"]) if live else ""

    def remove(self) -> None:
        """Uninstall the release; the hook's config stays (as with helm), so wipe it too."""
        self.run_helm("uninstall", RELEASE, "--no-hooks", check=False)
        for s in self.cluster.kube.list(SECRETS, namespace=self.namespace,
                                        label_selector="owner=helm"):  # fmt: skip
            self.cluster.kube.delete(SECRETS, s["metadata"]["name"], self.namespace)
        self.cluster.wipe_target()


def chart_incident(
    cluster: Cluster, root: Path, helm: str, **settings: dict[str, Any]
) -> ChartIncident:
    """Nodes, the operator's release installed from the upstream-shaped chart, git wanting
    the opt-in selector, and a fracctl.yaml for the helm backend."""
    cluster.node("rtx-pro-6000-0", gpu_class="rtx-pro-6000", opt_in=True, labels=GPU)
    cluster.node("b200-0", gpu_class="b200", opt_in=True, labels=GPU)
    cluster.node("h200-0", gpu_class="h200", labels=GPU)
    cluster.runtime_class()
    cluster.wipe_target()
    gitops = root / "gitops"
    shutil.copytree(CHART, gitops / RELEASE)
    init_repo(gitops, message="the operator's chart, as upstream ships it")
    base: dict[str, dict[str, Any]] = {
        "kube": {"kubeconfig": cluster.kubeconfig},
        "git": {
            "repo": gitops,
            "path": RELEASE,
            "renderer": "helm",
            "helm_namespace": RELEASE,
        },  # fmt: skip
        "recreate": {
            "backend": "helm",
            "lock_namespace": "fracctl-test",
            "state_dir": root / "state",
        },  # fmt: skip
        "helm": {"binary": helm, "timeout": "60s"},
        "timeouts": {"ready": "30s", "delete": "30s", "lock_lease": "30s"},
    }
    config_file = write_config(root / "fracctl.yaml", merged(base, settings))
    incident = ChartIncident(cluster, root, config_file, helm=helm)
    incident.remove()  # a failed earlier test's release
    cluster.namespace(RELEASE)
    incident.run_helm("install", RELEASE, str(gitops / RELEASE), "--wait", "--timeout", "60s")
    cluster.operator_leads()
    incident.git_selector(OPT_IN, message="select the opt-in label, not every GPU node")
    return incident
