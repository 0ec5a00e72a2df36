"""The sandbox as a gated fleet: ``fracctl sandbox up --argocd --clusters N``.

Beside the sandbox's own cluster (where the real Argo CD runs), N member clusters, each a
real control plane with KWOK nodes, the scenario seeded, fracctl's guard policy, and one
process running the operator and KAI simulations and the pod runner
(:mod:`fracctl.sandbox.pod_runner`) that runs the gate's hook pods. Argo CD has every
member registered (a cluster Secret labelled with its step: the first member is the
canary, the second early, the others the rest) and the fleet's ApplicationSet,
``examples/argocd/gate-applicationset.yaml`` pointed at a local git repository whose
``app`` folder is ``examples/argocd/gate`` with the clusters' live config: the fleet
starts in sync, and a commit that changes the selector is the rollout.
"""

from __future__ import annotations

import base64
import copy
import json
import shutil
from pathlib import Path
from typing import Any

from fracctl.adapters.git import commit_all, init_repo
from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import ResourceRef
from fracctl.sandbox import argocd_local
from fracctl.sandbox.argocd_local.applications import put_object
from fracctl.sandbox.controlplane import ControlPlane
from fracctl.sandbox.layout import REPO_ROOT

Obj = dict[str, Any]
APPSETS = ResourceRef("argoproj.io", "v1alpha1", "applicationsets", "ApplicationSet", True)
EXAMPLE = REPO_ROOT / "examples" / "argocd"
APPSET = "gpu-fractioning"  # the example's ApplicationSet
PROJECT = "gpu-fractioning-fleet"
FLEET = {"fracctl.io/fleet": APPSET}  # every member's cluster Secret carries it
STEP = "fracctl.io/step"  # and its step: canary, early or rest
#: On the hub: the identity each member's gate reads the rollout's order as.
HUB_READER = "fracctl-fleet-hub-reader"
#: In each member: the Secret holding its kubeconfig (mounted by the PreSync hook), in
#: the namespace the hooks run in (the Applications' destination namespace).
GATE_FLEET = "fracctl-gate-fleet"
HOOKS_NAMESPACE = "fracctl"
#: How long that identity's token lasts (a sandbox outlives a test session).
TOKEN_SECONDS = 7 * 24 * 3600
#: How the sandbox's Applications retry a failed sync: every 5 s (the example's is slower).
RETRY = {"limit": 60, "backoff": {"duration": "5s", "factor": 1, "maxDuration": "5s"}}


def member_names(count: int) -> list[str]:
    """The members' names: ``member-1`` (the canary) to ``member-N``."""
    return [f"member-{i}" for i in range(1, count + 1)]


def step_of(index: int) -> str:
    """The example's steps: the first member is the canary, the second early, then the rest."""
    return ("canary", "early")[index] if index < 2 else "rest"


def cluster_secret(name: str, cp: ControlPlane, step: str, *, fleet: Obj | None = None) -> Obj:
    """A member as Argo CD reads it (``util/db/cluster.go``, ``SecretToCluster``).

    The secret-type label, ``name``, ``server`` and a JSON ``config`` with the bearer
    token and the API server's CA; labelled with the fleet and its step.
    """
    ca = base64.b64encode(Path(cp.ca_file).read_bytes()).decode()
    config = {"bearerToken": cp.admin_token, "tlsClientConfig": {"caData": ca}}
    data = {"name": name, "server": cp.url, "config": json.dumps(config)}
    labels = {"argocd.argoproj.io/secret-type": "cluster", **(fleet or FLEET), STEP: step}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"cluster-{name}",
            "namespace": argocd_local.NAMESPACE,
            "labels": labels,
        },
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def appset(
    repo: Path,
    *,
    name: str = APPSET,
    project: str = PROJECT,
    fleet: Obj | None = None,
    prefix: str = "gpu-fractioning",
    retry: Obj | None = None,
) -> Obj:
    """examples/argocd/gate-applicationset.yaml, pointed at ``repo`` (``file://``).

    Only its names, its source and its retry's pace change: the steps, the labels, the
    template's shape and the deletion policy are the example's.
    """
    import yaml

    doc: Obj = yaml.safe_load((EXAMPLE / "gate-applicationset.yaml").read_text())
    doc["metadata"] = {"name": name, "namespace": argocd_local.NAMESPACE}
    doc["spec"]["generators"][0]["clusters"]["selector"]["matchLabels"] = dict(fleet or FLEET)
    template = doc["spec"]["template"]
    template["metadata"]["name"] = f"{prefix}-{{{{name}}}}"
    spec = template["spec"]
    spec["project"] = project
    spec["source"] = {"repoURL": f"file://{repo}", "path": "app", "targetRevision": "HEAD"}
    spec["syncPolicy"]["retry"] = copy.deepcopy(retry or RETRY)
    return doc


def project(name: str = PROJECT) -> Obj:
    """An AppProject that may deploy anything to any registered cluster."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": name, "namespace": argocd_local.NAMESPACE},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }


def gated_repo(folder: Path, config_text: str) -> Path:
    """A git repository whose ``app`` is examples/argocd/gate, ``config_text`` its config.

    The component is beside it (``components/argocd-gate``).
    """
    shutil.copytree(EXAMPLE / "gate", folder / "app")
    shutil.copytree(
        REPO_ROOT / "deploy" / "components" / "argocd-gate", folder / "components" / "argocd-gate"
    )
    kustomization = folder / "app" / "kustomization.yaml"
    kustomization.write_text(
        kustomization.read_text().replace(
            "../../../deploy/components/argocd-gate", "../components/argocd-gate"
        )
    )
    (folder / "app" / "gpufractioningconfig.yaml").write_text(config_text)
    if not (folder / ".git").exists():
        init_repo(folder, message="the gated application, as the clusters run")
    return folder


def commit_config(repo: Path, config_text: str, message: str) -> None:
    """Commit ``config_text`` as the config's manifest of the gated application."""
    (repo / "app" / "gpufractioningconfig.yaml").write_text(config_text)
    commit_all(repo, message=message)


def register(
    kube: Kube, repo: Path, members: dict[str, tuple[ControlPlane, str]], hub: ControlPlane
) -> None:
    """Argo CD's side and each member's: what a gated fleet needs registered.

    On the hub, the project, every member's cluster Secret and the ApplicationSet; in each
    member, the hub's read-only kubeconfig its gate keeps the rollout's order with.
    """
    put_object(kube, argocd_local.APPPROJECTS, project())
    for name, (cp, step) in members.items():
        put_object(kube, argocd_local.SECRETS, cluster_secret(name, cp, step))
    reader = hub_reader(kube, hub)
    for cp, _step in members.values():
        member = Kube.connect(kubeconfig=cp.kubeconfig)
        try:
            put_gate_fleet(member, reader)
        finally:
            member.close()
    put_object(kube, APPSETS, appset(repo))


def hub_reader(kube: Kube, hub: ControlPlane) -> str:
    """A kubeconfig for the hub, as what each member's gate reads the rollout's order.

    The ServiceAccount ``HUB_READER`` with exactly the ``fleet-status`` role (``fracctl
    rbac print --role fleet-status``), its token from a TokenRequest.
    """
    import yaml

    from fracctl.config import Config
    from fracctl.core import rbac
    from fracctl.core.rbac.render import to_yaml
    from fracctl.flows.rbac import params

    p = params(Config())
    namespace = argocd_local.NAMESPACE
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": HUB_READER, "namespace": namespace},
    }
    text = to_yaml("fleet-status", rbac.roles("fleet-status", p), p)
    roles = [d for d in yaml.safe_load_all(text) if d]
    for obj in [account, *roles, *(_binding(r) for r in roles)]:
        put_object(kube, kube.resolve(obj["apiVersion"], obj["kind"]), obj)
    token = kube.service_account_token(namespace, HUB_READER, TOKEN_SECONDS)
    return hub.kubeconfig_text(token=token, user=HUB_READER)


def _binding(role: Obj) -> Obj:
    """A binding of ``role`` (a ClusterRole or a Role) to ``HUB_READER``."""
    kind = "ClusterRoleBinding" if role["kind"] == "ClusterRole" else "RoleBinding"
    meta = {k: v for k, v in role["metadata"].items() if k in ("name", "namespace")}
    subject = {"kind": "ServiceAccount", "name": HUB_READER, "namespace": argocd_local.NAMESPACE}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role["kind"],
            "name": role["metadata"]["name"],
        },
        "subjects": [subject],
    }


def put_gate_fleet(member: Kube, kubeconfig: str) -> None:
    """In the hooks' namespace, the Secret the PreSync hook mounts: the hub's kubeconfig."""
    member.ensure_namespace(HOOKS_NAMESPACE)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": GATE_FLEET, "namespace": HOOKS_NAMESPACE},
        "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
    }
    put_object(member, argocd_local.SECRETS, secret)
