"""Argo CD's own fleet rollout, for real: an ApplicationSet with a cluster generator and
RollingSync (progressive syncs) over two member clusters, on the real applicationset-
controller v3.2.11 the sandbox's Argo CD runs beside its application controller.

The facts it holds (argo-cd v3.2.11, ``applicationset/controllers/
applicationset_controller.go``): a step's Applications are synced by setting their
``operation`` only once every Application of the steps before it is healthy
(``buildAppSyncMap``, ``isApplicationHealthy``: health Healthy, not OutOfSync, operation
Succeeded or none); the rollout's state per Application is ``status.applicationStatus[]``
(Waiting → Pending → Progressing → Healthy), with its ``step``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.git import git
from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import NotFound
from fracctl.sandbox import argocd_local
from fracctl.sandbox.argocd_local.applications import put_object
from fracctl.sandbox.controlplane import ControlPlane
from tests.support.argocd_real import RealArgoCD
from tests.support.helpers import commit_all

pytestmark = pytest.mark.e2e

APPSETS = ResourceRef("argoproj.io", "v1alpha1", "applicationsets", "ApplicationSet", True)
NAMESPACES = ResourceRef("", "v1", "namespaces", "Namespace", False)
CONFIGMAPS = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
PROJECT = "fleet"
APPSET = "rollout"
TARGET_NS = "fleet-rollout"
STEPS = {"canary": "us", "rest": "ap"}  # the step label of each member cluster

Obj = dict[str, Any]


def cluster_secret(name: str, cp: ControlPlane, step: str) -> Obj:
    """A member cluster registered as Argo CD reads it (``util/db/cluster.go``,
    ``SecretToCluster``): the secret-type label, ``server``, ``name`` and a JSON
    ``config`` with the bearer token and the API server's CA."""
    ca = base64.b64encode(Path(cp.ca_file).read_bytes()).decode()
    config = {"bearerToken": cp.admin_token, "tlsClientConfig": {"caData": ca}}
    data = {"name": name, "server": cp.url, "config": json.dumps(config)}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"cluster-{name}",
            "namespace": argocd_local.NAMESPACE,
            "labels": {
                "argocd.argoproj.io/secret-type": "cluster",
                "fracctl.io/fleet": "rollout",
                "step": step,
            },
        },
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def appset(repo: Path) -> Obj:
    """One Application per registered member, synced canary step first, then the rest."""
    members = {"matchLabels": {"fracctl.io/fleet": "rollout"}}
    steps = [
        {"matchExpressions": [{"key": "step", "operator": "In", "values": [step]}]}
        for step in STEPS
    ]
    source = {"repoURL": f"file://{repo}", "path": "app", "targetRevision": "HEAD"}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": APPSET, "namespace": argocd_local.NAMESPACE},
        "spec": {
            "generators": [{"clusters": {"selector": members}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": steps}},
            "template": {
                "metadata": {
                    "name": "fleet-{{name}}",
                    "labels": {"step": "{{metadata.labels.step}}"},
                },
                "spec": {
                    "project": PROJECT,
                    "source": source,
                    "destination": {"server": "{{server}}", "namespace": TARGET_NS},
                    "syncPolicy": {"syncOptions": ["CreateNamespace=true"]},
                },
            },
        },
    }


@pytest.fixture
def members(
    real_argocd: RealArgoCD, extra_control_planes: list[ControlPlane], tmp_path: Path
) -> Iterator[dict[str, ControlPlane]]:
    """The two extra control planes registered with Argo CD, an AppProject that may deploy
    to them, and a git repository with one ConfigMap; all removed afterwards."""
    kube = real_argocd.kube
    planes = dict(zip(("us", "ap"), extra_control_planes, strict=True))
    project = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": PROJECT, "namespace": argocd_local.NAMESPACE},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "clusterResourceWhitelist": [{"group": "", "kind": "Namespace"}],
        },
    }
    put_object(kube, argocd_local.APPPROJECTS, project)
    for step, name in STEPS.items():
        put_object(kube, argocd_local.SECRETS, cluster_secret(name, planes[name], step))
    repo = tmp_path / "fleet-git"
    (repo / "app").mkdir(parents=True)
    git(["init", "-q", "-b", "main"], cwd=repo)
    (repo / "app" / "configmap.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rolled\ndata:\n  wave: one\n"
    )
    commit_all(repo, message="the app")
    try:
        yield {**planes, "repo": repo}  # type: ignore[dict-item]
    finally:
        _delete(kube, APPSETS, APPSET)
        deadline = time.monotonic() + 30
        while any(_exists(kube, argocd_local.APPLICATIONS, f"fleet-{n}") for n in STEPS.values()):
            assert time.monotonic() < deadline, "the ApplicationSet's Applications stayed"
            time.sleep(0.2)
        for name in STEPS.values():
            _delete(kube, argocd_local.SECRETS, f"cluster-{name}")
            member = Kube.connect(kubeconfig=planes[name].kubeconfig)
            _delete(member, NAMESPACES, TARGET_NS, namespaced=False)
        _delete(kube, argocd_local.APPPROJECTS, PROJECT)


def _exists(kube: Kube, ref: ResourceRef, name: str) -> bool:
    return kube.get_or_none(ref, name, argocd_local.NAMESPACE) is not None


def _delete(kube: Kube, ref: ResourceRef, name: str, *, namespaced: bool = True) -> None:
    try:
        kube.delete(ref, name, argocd_local.NAMESPACE if namespaced else None)
    except NotFound:
        pass


def test_a_rolling_sync_syncs_the_canary_step_before_the_rest(
    real_argocd: RealArgoCD, members: dict[str, Any]
) -> None:
    kube = real_argocd.kube
    kube.create(APPSETS, appset(members["repo"]), namespace=argocd_local.NAMESPACE)
    canary, rest = (f"fleet-{STEPS[s]}" for s in ("canary", "rest"))
    seen: list[dict[str, str]] = []
    deadline = time.monotonic() + 120
    while True:
        status = kube.get(APPSETS, APPSET, argocd_local.NAMESPACE).get("status") or {}
        rollout = {a["application"]: a for a in status.get("applicationStatus") or []}
        now = {name: a.get("status", "") for name, a in rollout.items()}
        if now and (not seen or seen[-1] != now):
            seen.append(now)
        if now.get(canary) == now.get(rest) == "Healthy":
            break
        assert time.monotonic() < deadline, f"the rollout did not finish: {seen}"
        time.sleep(0.2)
    # The rest's step was never started before the canary's was healthy.
    for state in seen:
        if state.get(rest) in ("Pending", "Progressing", "Healthy"):
            assert state.get(canary) == "Healthy", seen
    assert rollout[canary]["step"] == "1" and rollout[rest]["step"] == "2", rollout
    print("the rollout as polled:", seen)
    # Each member runs git's ConfigMap, applied by Argo CD's sync the rollout triggered.
    for name in STEPS.values():
        member = Kube.connect(kubeconfig=members[name].kubeconfig)
        assert member.get(CONFIGMAPS, "rolled", TARGET_NS)["data"] == {"wave": "one"}
        op = finished_operation(kube, f"fleet-{name}")
        assert op["phase"] == "Succeeded", op
        assert op["operation"]["initiatedBy"]["username"] == "applicationset-controller", op


def finished_operation(kube: Kube, app: str, timeout: float = 30) -> dict[str, Any]:
    """The Application's operation once it has ended (a CI run once read it ``Running``,
    with the message of a finished sync, right after the rollout reported it Healthy)."""
    deadline = time.monotonic() + timeout
    while True:
        got = kube.get(argocd_local.APPLICATIONS, app, argocd_local.NAMESPACE)
        op: dict[str, Any] = got["status"]["operationState"]
        if op.get("phase") != "Running" or time.monotonic() > deadline:
            return op
        time.sleep(0.2)
