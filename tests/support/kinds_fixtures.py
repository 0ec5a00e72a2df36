"""A namespace, a KWOK node and a git repository of built-in objects, for ``recreate KIND/NAME``.

:class:`Shop` writes manifests into git (and commits), creates them on the cluster the
way a GitOps engine did, and reads back what the procedures must keep: each pod's uid,
restart count and controller.
"""

from __future__ import annotations

import copy
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from fracctl.adapters.git import init_repo
from fracctl.core.kube.resources import PODS, ResourceRef
from fracctl.errors import NotFound
from tests.support.helpers import Cluster, commit_all, pods_report

Obj = dict[str, Any]
PVS = ResourceRef("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PVCS = ResourceRef("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", namespaced=True)
STORAGE_CLASSES = ResourceRef("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
REPLICASETS = ResourceRef("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)


class Shop:
    """One test's namespace, node, git repository and fracctl.yaml."""

    def __init__(self, cluster: Cluster, tmp_path: Path) -> None:
        self.cluster, self.kube = cluster, cluster.kube
        self.ns = cluster.namespace(f"kinds-{uuid.uuid4().hex[:8]}")
        self.node = cluster.node(f"{self.ns}-node")["metadata"]["name"]
        self.repo = tmp_path / "gitops"
        self.repo.mkdir()
        (self.repo / "README").write_text("objects\n")
        init_repo(self.repo, message="start")
        self.config = tmp_path / "fracctl.yaml"
        self.config.write_text(
            f"kube:\n  kubeconfig: {cluster.kubeconfig}\n"
            f"git:\n  repo: {self.repo}\n  path: .\n  revision: HEAD\n  namespace: {self.ns}\n"
            "recreate:\n  backend: apply\n  lock_namespace: fracctl-test\n"
            f"  state_dir: {tmp_path / 'state'}\n"
        )
        self.cluster_scoped: list[tuple[ResourceRef, str]] = []

    # --- git and cluster ----------------------------------------------------------------

    def commit(self, *objects: Obj, message: str = "change") -> None:
        """Write each object as ``<kind>-<name>.yaml`` in git and commit."""
        for obj in objects:
            name = f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
            (self.repo / name).write_text(yaml.safe_dump(obj))
        commit_all(self.repo, message=message)

    def create(self, obj: Obj) -> Obj:
        """Create ``obj`` on the cluster as the GitOps engine did (in the namespace)."""
        obj = copy.deepcopy(obj)
        ref = self.kube.resolve(obj["apiVersion"], obj["kind"])
        if ref.namespaced:
            obj["metadata"]["namespace"] = self.ns
        else:
            self.cluster_scoped.append((ref, obj["metadata"]["name"]))
        return self.kube.create(ref, obj)

    def live(self, api_version: str, kind: str, name: str) -> Obj | None:
        ref = self.kube.resolve(api_version, kind)
        return self.kube.get_or_none(ref, name, self.ns if ref.namespaced else None)

    def written(self, api_version: str, kind: str, name: str) -> Obj | None:
        """What a writer of the object decides: identity, generation, labels, annotations
        and spec. A controller's status updates (and the resourceVersion they bump) are
        left out, since they land whenever the controller catches up.
        """
        obj = self.live(api_version, kind, name)
        if obj is None:
            return None
        meta = obj["metadata"]
        return {
            "uid": meta["uid"],
            "generation": meta.get("generation"),
            "labels": meta.get("labels"),
            "annotations": meta.get("annotations"),
            "spec": obj.get("spec"),
        }

    def pods(self) -> dict[str, Obj]:
        """The namespace's pods by name."""
        return {p["metadata"]["name"]: p for p in self.kube.list(PODS, namespace=self.ns)}

    def running(self, count: int, timeout: float = 60) -> dict[str, Obj]:
        """Wait until ``count`` pods run (KWOK plays their kubelet)."""
        deadline = time.monotonic() + timeout
        while True:
            pods = self.pods()
            up = {
                n: p for n, p in pods.items() if (p.get("status") or {}).get("phase") == "Running"
            }  # noqa: E501
            if len(up) >= count:
                return up
            assert time.monotonic() < deadline, (
                f"{len(up)} of {count} pods run: {pods_report(self.kube, self.ns)}"
            )
            time.sleep(0.3)

    def bound_claims(
        self, names: list[str], size: str = "1Gi", cls: str = "expandable", request: str = "1Gi",
        *, claims: bool = True,
    ) -> None:  # fmt: skip
        """A StorageClass that allows expansion, and each claim (asking ``request``, as
        :func:`statefulset`'s template does) bound to a PersistentVolume of ``size``.

        Each pair is written bound, as the PersistentVolume controller leaves one: the
        claim names its volume and carries ``pv.kubernetes.io/bind-completed``, the
        volume's ``claimRef`` holds the claim's uid, both report ``Bound``. A StatefulSet
        then takes the claims as they are (its controller creates only missing ones), and
        its pods are placed at once: no wait on the binder's pass, which under load can
        leave a pod "unbound immediate PersistentVolumeClaims" past a test's wait.
        Without ``claims`` only the volumes are made, each reserved for its claim by name
        (the claim the test creates, which the controller binds).
        """
        self.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                     "metadata": {"name": f"{self.ns}-{cls}"}, "provisioner": "example.org/none",
                     "allowVolumeExpansion": True, "volumeBindingMode": "Immediate"})  # fmt: skip
        for claim in names:
            volume = f"{self.ns}-{claim}"
            if not claims:
                self.create({
                    "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
                    "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                             "storageClassName": f"{self.ns}-{cls}",
                             "hostPath": {"path": f"/tmp/{claim}"},
                             "claimRef": {"namespace": self.ns, "name": claim}},
                })  # fmt: skip
                continue
            pvc = self.create({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "annotations": {
                    "pv.kubernetes.io/bind-completed": "yes",
                    "pv.kubernetes.io/bound-by-controller": "yes"}},
                "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": volume,
                         "storageClassName": f"{self.ns}-{cls}",
                         "resources": {"requests": {"storage": request}}},
            })  # fmt: skip
            self.create({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": volume},
                "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                         "storageClassName": f"{self.ns}-{cls}",
                         "hostPath": {"path": f"/tmp/{claim}"},
                         "claimRef": {"namespace": self.ns, "name": claim, "kind":
                                      "PersistentVolumeClaim", "apiVersion": "v1",
                                      "uid": pvc["metadata"]["uid"]}},
            })  # fmt: skip
            self.kube.patch(PVS, volume, {"status": {"phase": "Bound"}}, subresource="status")
            bound = {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                     "capacity": {"storage": size}}  # fmt: skip
            self.kube.patch(PVCS, claim, {"status": bound}, namespace=self.ns,
                            subresource="status")  # fmt: skip

    def cleanup(self) -> None:
        for ref, name in reversed(self.cluster_scoped):
            try:
                self.kube.delete(ref, name)
            except NotFound:
                pass

    def free_ips(self) -> tuple[str, str]:
        """Two cluster IPs no Service holds, from the low band of the service range that
        the API server keeps for IPs asked for by name (a /24 allocates dynamic ones from
        .16 up: a fixed IP there may be another Service's already)."""
        from fracctl.core.kube.resources import SERVICES

        taken = {ip for svc in self.kube.list(SERVICES)
                 for ip in (svc.get("spec") or {}).get("clusterIPs") or []}  # fmt: skip
        free = [f"10.0.0.{n}" for n in range(2, 16) if f"10.0.0.{n}" not in taken]
        assert len(free) >= 2, f"the low band of 10.0.0.0/24 is taken: {sorted(taken)}"
        return free[0], free[1]


# --- objects ---------------------------------------------------------------------------


def statefulset(shop: Shop, *, service: str = "db", size: str = "1Gi") -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {
            "serviceName": service, "replicas": 2,
            "selector": {"matchLabels": {"app": "db"}},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                "containers": [{"name": "db", "image": "registry.invalid/db:1",
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "storageClassName": f"{shop.ns}-expandable",
                "resources": {"requests": {"storage": size}}}}],
        },
    }  # fmt: skip


def deployment(selector: dict[str, str], labels: dict[str, str]) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": selector},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     "containers": [{"name": "web", "image": "registry.invalid/web:1"}]}}},
    }  # fmt: skip


def job(image: str) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
            "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never",
                     "containers": [{"name": "m", "image": image}]}}}}  # fmt: skip


def job_done(shop: Shop) -> bool:
    """Whether the shop's Job ``migrate`` is Complete."""
    j = shop.live("batch/v1", "Job", "migrate") or {}
    conds = (j.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conds)


def wait_for(check: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(0.3)


def identity(pods: dict[str, Obj]) -> dict[str, tuple[str, int]]:
    """Each pod's uid and restart count: what must not change."""
    out = {}
    for name, p in pods.items():
        statuses = (p.get("status") or {}).get("containerStatuses") or []
        out[name] = (p["metadata"]["uid"], sum(int(s.get("restartCount") or 0) for s in statuses))
    return out


def controller_of(obj: Obj) -> str:
    """The uid of the object's controller, or ""."""
    refs = obj["metadata"].get("ownerReferences") or []
    return next((r["uid"] for r in refs if r.get("controller")), "")
