"""Shared test helpers: the in-process CLI runner, the fake clock and the cluster builders."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fracctl.adapters.git import git
from fracctl.adapters.kube import Kube
from fracctl.config import Config
from fracctl.core.kube.resources import (
    DAEMONSETS,
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    ResourceRef,
)
from fracctl.errors import Conflict, NotFound
from fracctl.flows.guards.probe_pod import PROBE_LABEL
from fracctl.sandbox.controllers import KWOK_NODE, KWOK_NODE_VALUE, wait_node_ready
from tests.support.kubelet import report_ready

SMP = "application/strategic-merge-patch+json"
#: The tolerations the upstream chart's default config gives the agents.
GPU_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def ensure_namespace(kube: Kube, name: str, timeout: float = 120.0) -> None:
    """``name`` exists and is active: one another test deleted is waited out first (the
    namespace controller empties it; until then it takes nothing new)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": name}})  # fmt: skip
            return
        except Conflict:
            pass
        try:
            phase = kube.get(NAMESPACES, name).get("status", {}).get("phase")
        except NotFound:
            continue
        if phase != "Terminating":
            return
        assert time.monotonic() < deadline, f"namespace {name} stayed Terminating"
        time.sleep(0.5)


def wait_deleted(kube: Kube, ref: ResourceRef, name: str, namespace: str | None = None,
                 timeout: float = 120.0) -> None:  # fmt: skip
    """Until ``name`` is gone (its finalizers done)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.get(ref, name, namespace)
        except NotFound:
            return
        assert time.monotonic() < deadline, f"{ref.plural}/{name} was not deleted"
        time.sleep(0.5)


def pods_report(kube: Kube, namespace: str) -> str:
    """Each pod of ``namespace`` with its phase, node and why it is not scheduled, and the
    namespace's last events: what a failed wait on pods says."""
    lines = []
    for pod in kube.list(PODS, namespace=namespace):
        st = pod.get("status") or {}
        scheduled = next(
            (c for c in st.get("conditions") or [] if c.get("type") == "PodScheduled"), {}
        )
        lines.append(
            f"{pod['metadata']['name']}: {st.get('phase')} on {pod['spec'].get('nodeName')}"
            f" (PodScheduled={scheduled.get('status')} {scheduled.get('message') or ''})"
        )
    claims = ResourceRef("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
    for pvc in kube.list(claims, namespace=namespace):
        st, spec = pvc.get("status") or {}, pvc.get("spec") or {}
        notes = sorted(pvc["metadata"].get("annotations") or {})
        lines.append(
            f"claim {pvc['metadata']['name']}: {st.get('phase')} volume "
            f"{spec.get('volumeName') or '-'} rv {pvc['metadata'].get('resourceVersion')} "
            f"annotations {notes}"
        )
    events = sorted(
        kube.list(EVENTS, namespace=namespace),
        key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "",
    )
    lines += [
        f"event {e['involvedObject'].get('name')}: {e.get('reason')}: {e.get('message')}"
        for e in events[-12:]
    ]
    return "; ".join(lines) or "no pods, no events"


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str) -> Result:
    """Run ``fracctl ARGS`` in-process through the real entry point and error boundary."""
    from fracctl.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = int(e.code or 0)
    return Result(code, out.getvalue(), err.getvalue())


def commit_all(path: Path, *, message: str) -> str:
    """Commit every change in the repository at ``path``; return the commit."""
    git(["add", "-A"], cwd=path)
    git(["commit", "-q", "--allow-empty", "-m", message], cwd=path)
    return git(["rev-parse", "HEAD"], cwd=path).stdout.strip()


def parse_env_file(text: str) -> dict[str, str]:
    """Read an ``EnvironmentFile=`` body back the way systemd does (quoted values)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        out[key.strip()] = value
    return out


class FakeClock:
    """A clock that moves only when slept on; every sleep is recorded."""

    def __init__(self, *, start: float = 0.0, epoch: float = 1_767_225_600.0) -> None:
        self.t = start  # monotonic seconds
        self.epoch = epoch  # wall-clock seconds at t == 0 (2026-01-01T00:00:00Z)
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.epoch + self.t

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


CLUSTER_ROLES = ResourceRef("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = ResourceRef(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)


@contextlib.contextmanager
def granted(kube: Kube, user: str, rules: list[dict[str, Any]], name: str) -> Iterator[None]:
    """``user`` holds exactly ``rules`` cluster-wide (a ClusterRole and its binding) inside."""
    kube.create(CLUSTER_ROLES, {"metadata": {"name": name}, "rules": rules})
    try:
        kube.create(
            CLUSTER_ROLE_BINDINGS,
            {
                "metadata": {"name": name},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": name,
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}
                ],
            },
        )
        try:
            yield
        finally:
            kube.delete(CLUSTER_ROLE_BINDINGS, name)
    finally:
        kube.delete(CLUSTER_ROLES, name)


def unit_context(config: Config | None = None, **kwargs: Any) -> Any:
    """A context for unit tests: the cluster and Argo CD are out of reach, and touching
    either fails the test by name instead of as an ``AttributeError`` on None."""
    from fracctl.flows.context import Context

    def no_cluster() -> Any:
        raise AssertionError("a unit test touched the cluster")

    def no_argocd() -> Any:
        raise AssertionError("a unit test touched Argo CD")

    kwargs.setdefault("env", {})
    return Context(
        config=config or Config(), kube_factory=no_cluster, argocd_factory=no_argocd, **kwargs
    )


def ref_for(config: Config) -> ResourceRef:
    return config.target.ref


@dataclass
class Cluster:
    """Builders on the shared control plane; everything made here is removed afterwards."""

    kube: Kube
    config: Config
    kubeconfig: str
    created_namespaces: list[str] = field(default_factory=list)
    kwok: bool = True  # whether KWOK runs beside this API server (then it plays the nodes)

    # --- nodes ------------------------------------------------------------------------

    def node(
        self,
        name: str,
        *,
        labels: dict[str, str] | None = None,
        gpu_class: str | None = None,
        opt_in: bool = False,
        ready: bool | None = None,
        taints: list[dict[str, str]] | None = None,
        annotations: dict[str, str] | None = None,
        kubelet_ready: bool = True,
        kwok: bool | None = None,
        gpus: int | None = None,
    ) -> dict[str, Any]:
        """A node whose kubelet KWOK plays (Ready, runs its pods).

        ``kwok=False``: the test plays its kubelet (:func:`report_ready` once, and each
        pod's status as the test writes it); ``kubelet_ready=False``: a bare Node whose
        kubelet never reported. ``gpus`` (default 8 on a node of a GPU class, else none)
        is its ``nvidia.com/gpu`` capacity.
        """
        lab = {"kubernetes.io/hostname": name, **(labels or {})}
        if gpu_class:
            lab[self.config.labels.class_key] = gpu_class
        if opt_in:
            lab[self.config.labels.opt_in_key] = self.config.labels.opt_in_value
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": lab, "annotations": dict(annotations or {})},
            "spec": {"taints": taints or []},
        }
        capacity = {"cpu": "64", "memory": "512Gi", "pods": "110"}
        if gpus or (gpus is None and gpu_class):
            capacity["nvidia.com/gpu"] = str(8 if gpus is None else gpus)
        body["status"] = {"capacity": capacity, "allocatable": capacity}
        managed = kubelet_ready and (self.kwok if kwok is None else kwok)
        if managed:
            body["metadata"]["annotations"][KWOK_NODE] = KWOK_NODE_VALUE
        obj = self.kube.create(NODES, body)
        if managed:
            obj = wait_node_ready(self.kube, name)
        elif kubelet_ready:
            obj = report_ready(self.kube, name, lifecycle_controller=self.kwok)
        if ready is not None:
            obj = self.set_ready(name, ready)
        return obj

    def stop_kubelet(self, name: str) -> dict[str, Any]:
        """The node's kubelet stops: KWOK no longer plays it (its status stays as written)."""
        return self.kube.patch(NODES, name, {"metadata": {"annotations": {KWOK_NODE: None}}})

    def set_ready(self, name: str, ready: bool, reason: str | None = None) -> dict[str, Any]:
        cond = {
            "type": self.config.condition,
            "status": "True" if ready else "False",
            "reason": reason or ("AllDaemonsReady" if ready else "DaemonsNotReady"),
            "message": "test",
            "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        return self.kube.patch(
            NODES, name, {"status": {"conditions": [cond]}}, content_type=SMP, subresource="status"
        )

    def label(self, name: str, labels: dict[str, str | None]) -> dict[str, Any]:
        return self.kube.patch(NODES, name, {"metadata": {"labels": labels}})

    # --- namespaces and pods ----------------------------------------------------------

    def namespace(self, name: str) -> str:
        ensure_namespace(self.kube, name)
        if name not in self.created_namespaces:
            self.created_namespaces.append(name)
        return name

    def pod(
        self,
        namespace: str,
        name: str,
        *,
        annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        node: str | None = None,
        phase: str = "Running",
        containers: list[str] | None = None,
        scheduler: str | None = None,
    ) -> dict[str, Any]:
        """A pod whose status the test writes (``phase``). Without ``node`` it is placed by
        ``scheduler`` (kube-scheduler when None, and KWOK then runs it, where a node
        exists: name a scheduler nothing plays to keep a Pending pod pending).

        A pod given another phase than Running and no node is left to a scheduler nothing
        plays: kube-scheduler would place it and KWOK would then overwrite the phase.
        """
        self.namespace(namespace)
        if phase != "Running" and node is None and scheduler is None:
            scheduler = "nobody-schedules-this"
        spec: dict[str, Any] = {
            "containers": [{"name": c, "image": "busybox"} for c in (containers or ["main"])]
        }
        if node:
            spec["nodeName"] = node
        if scheduler:
            spec["schedulerName"] = scheduler
        self.kube.create(
            PODS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "annotations": annotations or {},
                    "labels": labels or {},
                },
                "spec": spec,
            },
        )
        return self.kube.patch(
            PODS, name, {"status": {"phase": phase}}, namespace=namespace, subresource="status"
        )

    # --- the target object ------------------------------------------------------------

    def target(
        self,
        selector: dict[str, str],
        *,
        name: str = "default",
        tolerations: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        """The fractioning config; its agents tolerate the GPU taint unless ``tolerations``
        says otherwise (as the upstream chart's default config, and examples/gitops)."""
        t = self.config.target
        spec: dict[str, Any] = {"nodeSelector": selector}
        spec["tolerations"] = GPU_TOLERATIONS if tolerations is None else tolerations
        if not spec["tolerations"]:
            del spec["tolerations"]
        return self.kube.create(
            ref_for(self.config),
            {"apiVersion": t.api_version, "kind": t.kind, "metadata": {"name": name}, "spec": spec},
        )

    def runtime_class(self, name: str = "nvidia") -> None:
        """The RuntimeClass the GPU Operator installs (the agents' pods name it)."""
        from fracctl.core.doctor import RUNTIME_CLASSES

        try:
            self.kube.create(RUNTIME_CLASSES, {"metadata": {"name": name}, "handler": name})
        except Conflict:
            pass

    def live_target(self) -> dict[str, Any] | None:
        return self.kube.get_or_none(ref_for(self.config), self.config.target.name)

    # --- cleanup ----------------------------------------------------------------------

    def unguard(self) -> None:
        """Remove fracctl's guard policies (a test that installed one may have failed)."""
        import time

        from fracctl.errors import FracctlError
        from fracctl.flows.policy import BINDINGS, POLICIES

        removed = False
        for ref in (BINDINGS, POLICIES):
            for obj in self.kube.list(ref):
                if obj["metadata"]["name"].startswith("fracctl-guard-"):
                    removed = True
                    try:
                        self.kube.delete(ref, obj["metadata"]["name"])
                    except NotFound:
                        pass
        target = ref_for(self.config)
        deadline = time.monotonic() + 30
        while removed and self.kube.list(target):  # the API server stops enforcing a moment later
            try:
                self.kube.delete(target, self.config.target.name, dry_run=True)
                return
            except NotFound:
                return
            except FracctlError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def wipe_target(self) -> None:
        self.unguard()  # a guarded object cannot be wiped
        ref = ref_for(self.config)
        for obj in self.kube.list(ref):
            name = obj["metadata"]["name"]
            try:
                self.kube.patch(ref, name, {"metadata": {"finalizers": None}})
                self.kube.delete(ref, name)
            except NotFound:
                pass

    def operator_leads(self, lease_duration: int = 3600) -> None:
        """The gpu-fractioning operator as a healthy install has it: an available
        Deployment and a fresh leader-election Lease (long-lived, so no thread needs to
        renew it), without running its reconcile loop."""
        from fracctl.sandbox.operator_sim import OperatorSimulation

        OperatorSimulation(self.kube, self.config, lease_duration=lease_duration).lead()
        self.wait_available(self.config.cluster.operator_deployment)

    def wait_available(self, name: str, timeout: float = 30.0) -> dict[str, Any]:
        """Until the Deployment ``name`` (in the agents' namespace) has an available
        replica: its controller, the scheduler and KWOK run its pod."""
        import time

        namespace = self.config.cluster.agent_namespace
        deadline = time.monotonic() + timeout
        while True:
            deploy = self.kube.get(DEPLOYMENTS, name, namespace)
            if int((deploy.get("status") or {}).get("availableReplicas") or 0) >= 1:
                return deploy
            if time.monotonic() > deadline:
                raise AssertionError(f"Deployment {namespace}/{name} never became available")
            time.sleep(0.1)

    def cleanup(self) -> None:
        self.wipe_target()
        for lease in self.kube.list(LEASES, namespace="fracctl-test"):
            try:
                self.kube.delete(LEASES, lease["metadata"]["name"], "fracctl-test")
            except NotFound:
                pass
        for node in self.kube.list(NODES):
            try:
                self.kube.delete(NODES, node["metadata"]["name"])
            except NotFound:
                pass
        # Their Leases now, not when the garbage collector gets to them: the next test
        # makes nodes of the same names, and KWOK, finding the old Lease (or updating it
        # as the collector deletes it), fails to renew the new node's until the node
        # lifecycle controller calls it unreachable and taints it: pods wait unplaced.
        for lease in self.kube.list(LEASES, namespace="kube-node-lease"):
            with contextlib.suppress(NotFound):
                self.kube.delete(LEASES, lease["metadata"]["name"], "kube-node-lease")
        # What an operator simulation left: its Lease, its Deployment, the agents'
        # DaemonSets, and their pods at once (their nodes are gone).
        k = self.config.cluster
        left = [(LEASES, k.operator_lease), (DEPLOYMENTS, k.operator_deployment)]
        left += [(DAEMONSETS, name) for name in k.agent_daemonsets]
        for ref, name in left:
            try:
                self.kube.delete(ref, name, k.agent_namespace)
            except NotFound:
                pass
        from fracctl.core.doctor import RUNTIME_CLASSES

        try:
            self.kube.delete(RUNTIME_CLASSES, k.runtime_class)
        except NotFound:
            pass
        for pod in self.kube.list(PODS, namespace=k.agent_namespace):
            try:
                self.kube.delete(PODS, pod["metadata"]["name"], k.agent_namespace, grace_period=0)
            except NotFound:
                pass
        # The test namespaces' workloads first: a StatefulSet left behind makes its pods
        # again, and they land on the nodes of whichever test runs next in this worker.
        for ns in self.created_namespaces:
            for api_version, kind in WORKLOADS:
                ref = self.kube.resolve(api_version, kind)
                for obj in self.kube.list(ref, namespace=ns):
                    with contextlib.suppress(NotFound):
                        self.kube.delete(ref, obj["metadata"]["name"], ns)
        # The test namespaces' pods, and probe pods wherever a failed test left one (a
        # leftover fractional pod would make every later guard refuse).
        leftovers = [
            p for ns in self.created_namespaces for p in self.kube.list(PODS, namespace=ns)
        ]
        leftovers += self.kube.list(PODS, label_selector=f"{PROBE_LABEL}=true")
        for pod in leftovers:
            meta = pod["metadata"]
            try:
                self.kube.delete(PODS, meta["name"], meta["namespace"], grace_period=0)
            except NotFound:
                pass


#: The workload controllers whose objects a test's namespaces are emptied of.
WORKLOADS = (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet"),
             ("apps/v1", "DaemonSet"), ("batch/v1", "Job"))  # fmt: skip


def wait_enforced(cluster: Cluster, timeout: float = 30.0) -> None:
    """Until the guard policy refuses a delete: the API server compiles a new policy a
    moment after it is created."""
    import time

    from fracctl.core.recreate.guard_policy import policy_name
    from fracctl.errors import FracctlError

    t = cluster.config.target
    deadline = time.monotonic() + timeout
    while True:
        try:
            cluster.kube.delete(t.ref, t.name, dry_run=True)
        except FracctlError as e:
            if policy_name(t) in e.message:
                return
        if time.monotonic() > deadline:
            raise AssertionError("the guard policy was never enforced")
        time.sleep(0.2)
