"""A Helm release of built-in objects in a :class:`~tests.support.kinds_fixtures.Shop`.

The chart lives in git (``app/``); each object is one template, written as plain YAML,
so a commit of a changed object is a change of the chart. The release is installed and
upgraded by the real helm (3 or 4), as a team runs it, and fracctl.yaml renders the
chart as that release (``git.renderer: helm``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from fracctl.core.gitops import helm_release
from fracctl.flows.engines.helm.release import SECRETS
from tests.support.helm import Helm
from tests.support.helpers import Cluster, commit_all
from tests.support.kinds_fixtures import Shop

Obj = dict[str, Any]
RELEASE = "app"


class HelmShop:
    """The shop's chart, its release, and a fracctl.yaml for ``--backend helm``."""

    def __init__(self, shop: Shop, helm: Helm) -> None:
        self.shop, self.helm = shop, helm
        self.chart = shop.repo / RELEASE
        (self.chart / "templates").mkdir(parents=True)
        (self.chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {RELEASE}\nversion: 0.1.0\n")
        root = shop.config.parent
        shop.config.write_text(
            f"kube:\n  kubeconfig: {shop.cluster.kubeconfig}\n"
            # Only the keys runbooks/helm-releases.md lists: the chart's templates name
            # no namespace (as `helm create` scaffolds them), and they land in the
            # release's, as helm installs them.
            f"git:\n  repo: {shop.repo}\n  path: {RELEASE}\n  revision: HEAD\n"
            f"  renderer: helm\n  helm_release: {RELEASE}\n  helm_namespace: {shop.ns}\n"
            "recreate:\n  backend: helm\n  lock_namespace: fracctl-test\n"
            f"  state_dir: {root / 'state'}\n"
            f"helm:\n  binary: {helm.path}\n  timeout: 60s\n"
            "timeouts:\n  ready: 60s\n  delete: 30s\n  sync: 60s\n"
        )

    def commit(self, *objects: Obj, message: str = "change") -> None:
        """Write each object as a template of the chart, and commit."""
        for obj in objects:
            name = f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
            (self.chart / "templates" / name).write_text(yaml.safe_dump(obj))
        commit_all(self.shop.repo, message=message)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``helm ARGS -n NS`` on the shop's cluster."""
        return self.helm.run(*args, "--namespace", self.shop.ns,
                             kubeconfig=self.shop.cluster.kubeconfig, check=check)  # fmt: skip

    def install(self) -> None:
        self.run("install", RELEASE, str(self.chart))

    def upgrade(self, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run("upgrade", RELEASE, str(self.chart), check=check)

    def for_flux(self, served: Any) -> None:
        """fracctl.yaml for ``--backend flux`` through ``served``'s HelmRelease
        (a :class:`tests.support.flux_real.ServedChart`)."""
        config = self.shop.config
        text = config.read_text().replace("  backend: helm\n", "  backend: flux\n")
        config.write_text(
            text + f"flux:\n  namespace: {served.namespace}\n  helmrelease: {served.name}\n"
            "  leases: []\n"
        )

    def release(self) -> helm_release.Release:
        """The release's newest revision, from Helm's own records."""
        secrets = self.shop.kube.list(
            SECRETS, namespace=self.shop.ns, label_selector=f"owner=helm,name={RELEASE}"
        )
        return helm_release.latest(secrets)[(self.shop.ns, RELEASE)]


@contextmanager
def helm_shop(cluster: Cluster, tmp_path: Path, helm: Helm) -> Iterator[HelmShop]:
    """A :class:`HelmShop` in a fresh namespace, cleaned up after: its release uninstalled
    (its workloads gone from the shared cluster), then the shop's own objects."""
    s = Shop(cluster, tmp_path)
    found = HelmShop(s, helm)
    try:
        yield found
    finally:
        found.run("uninstall", RELEASE, check=False)
        s.cleanup()
