"""Each role of `fracctl rbac print` on the real API server: enough, and no more.

Every command runs as a ServiceAccount (its token from the TokenRequest API) bound to only
the role `fracctl rbac print` prints for the test's configuration. Sufficient: the command
succeeds with the same answer the admin gets. Minimal: every verb the role grants was
used by the run, and a SubjectAccessReview refuses each verb of the other roles that this
one does not grant.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.config import Config, load
from fracctl.core import rbac
from fracctl.core.kube.resources import NAMESPACES, ResourceRef
from fracctl.errors import Conflict, ExitCode, NotFound
from fracctl.flows import rbac as flow
from fracctl.flows.context import Context
from fracctl.sandbox.controlplane import ControlPlane
from tests.support.fake_mps import fake_mps, wait_for
from tests.support.flux_real import RealFlux
from tests.support.helm import CHART, Helm
from tests.support.helpers import Cluster, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident, make_incident

RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = ResourceRef(RBAC, "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = ResourceRef(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False)
ROLES = ResourceRef(RBAC, "v1", "roles", "Role", True)
ROLE_BINDINGS = ResourceRef(RBAC, "v1", "rolebindings", "RoleBinding", True)
SERVICE_ACCOUNTS = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True)
SA_NAMESPACE = "fracctl-rbac-test"
REPO = Path(__file__).resolve().parents[2]

# Calls every identity may make (discovery, SelfSubjectAccessReview, SelfSubjectReview:
# system:basic-user grants them to every authenticated identity): not the role's.
BASIC = {("create", "selfsubjectaccessreviews"), ("create", "selfsubjectreviews")}


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


# --- recording what an identity does ---------------------------------------------------


def classify(method: str, path: str) -> tuple[str, str] | None:
    """``(verb, resource)`` of a request path, None for discovery."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    start = 2 if parts[:1] == ["api"] else 3
    if len(parts) > start + 2 and parts[start] == "namespaces":
        parts = parts[:start] + parts[start + 2 :]
    if len(parts) <= start:
        return None
    resource, named = parts[start], len(parts) > start + 1
    if len(parts) > start + 2:  # a subresource: pods/eviction, nodes/status
        resource = f"{resource}/{parts[start + 2]}"
    verb = {
        "GET": "get" if named else "list",
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
    }[method]
    return verb, resource


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> set[tuple[str, str]]:
    """``(verb, resource)`` of every request a Kube client connected from now on sends.

    Recorded where every request leaves the adapter (``_send``), so no helper is missed.
    """
    used: set[tuple[str, str]] = set()
    connect, send = Kube.connect.__func__, Kube._send  # type: ignore[attr-defined]

    def connect_recording(cls: type[Kube], **kwargs: Any) -> Kube:
        kube = connect(cls, **kwargs)
        kube._fracctl_record = True  # type: ignore[attr-defined]
        return kube

    def send_recording(self: Kube, method: str, path: str, **kwargs: Any) -> Any:
        if getattr(self, "_fracctl_record", False):
            found = classify(method, path)
            if found and (kwargs.get("query") or {}).get("watch"):
                found = ("watch", found[1])
            if found:
                used.add(found)
        return send(self, method, path, **kwargs)

    monkeypatch.setattr(Kube, "connect", classmethod(connect_recording))
    monkeypatch.setattr(Kube, "_send", send_recording)
    return used


def granted(roles: list[rbac.Role]) -> set[tuple[str, str]]:
    return {
        (v, res) for r in roles for rule in r.rules for res in rule.resources for v in rule.verbs
    }


# --- an identity bound to one role -----------------------------------------------------


def _create(kube: Kube, ref: ResourceRef, body: dict[str, Any]) -> None:
    try:
        kube.create(ref, body)
    except Conflict:
        kube.delete(ref, body["metadata"]["name"], body["metadata"].get("namespace"))
        kube.create(ref, body)


def ensure_namespace(kube: Kube, name: str) -> None:
    try:
        kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        )
    except Conflict:
        pass


class Identity:
    """A ServiceAccount bound to exactly the objects of one role, with a kubeconfig."""

    def __init__(self, kube: Kube, role: str, roles: list[rbac.Role]) -> None:
        self.kube = kube
        self.role = role
        self.roles = roles
        self.name = f"fracctl-test-{role}"
        self.user = f"system:serviceaccount:{SA_NAMESPACE}:{self.name}"
        self.groups = ["system:serviceaccounts", f"system:serviceaccounts:{SA_NAMESPACE}",
                       "system:authenticated"]  # fmt: skip
        self.made: list[tuple[ResourceRef, str, str | None]] = []
        self.kubeconfig = ""

    def setup(self, cp: ControlPlane, folder: Path) -> None:
        kube = self.kube
        ensure_namespace(kube, SA_NAMESPACE)
        sa = {"apiVersion": "v1", "kind": "ServiceAccount",
              "metadata": {"name": self.name, "namespace": SA_NAMESPACE}}  # fmt: skip
        _create(kube, SERVICE_ACCOUNTS, sa)
        self.made.append((SERVICE_ACCOUNTS, self.name, SA_NAMESPACE))
        subject = {"kind": "ServiceAccount", "name": self.name, "namespace": SA_NAMESPACE}
        for r in self.roles:
            body = r.to_dict()
            body["metadata"]["name"] = self.name  # the test's own, beside any shipped one
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": f"{r.kind}Binding",
                "metadata": {"name": self.name},
                "roleRef": {"apiGroup": RBAC, "kind": r.kind, "name": self.name},
                "subjects": [subject],
            }
            if r.namespace:
                ensure_namespace(kube, r.namespace)
                binding["metadata"]["namespace"] = r.namespace
                pair = ((ROLES, body), (ROLE_BINDINGS, binding))
            else:
                pair = ((CLUSTER_ROLES, body), (CLUSTER_ROLE_BINDINGS, binding))
            for ref, obj in pair:
                _create(kube, ref, obj)
                self.made.append((ref, self.name, r.namespace or None))
        token = kube.request(
            "POST",
            SERVICE_ACCOUNTS.path(namespace=SA_NAMESPACE, name=self.name, subresource="token"),
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                  "spec": {"expirationSeconds": 3600}},
        )["status"]["token"]  # fmt: skip
        self.kubeconfig = str(folder / f"{self.name}.kubeconfig")
        cp.write_kubeconfig(self.kubeconfig, token=token, user=self.name)
        # RBAC reads its objects from an informer: wait until the grants are seen.
        for r in self.roles:
            for rule in r.rules:
                verb, resource = rule.verbs[0], rule.resources[0]
                name = rule.resource_names[0] if rule.resource_names else None
                probe = (verb, rule.api_groups[0], resource, name, r.namespace)
                assert wait_for(lambda p=probe: self.allowed(*p), timeout=10), (  # type: ignore[misc]
                    f"{self.role}: {probe} never became allowed"
                )

    def allowed(
        self, verb: str, group: str, resource: str, name: str | None = None, namespace: str = ""
    ) -> bool:
        resource, _, subresource = resource.partition("/")
        attrs = {"verb": verb, "group": group, "resource": resource}
        if subresource:
            attrs["subresource"] = subresource
        if name:
            attrs["name"] = name
        if namespace:
            attrs["namespace"] = namespace
        review = self.kube.request(
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            body={
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {"user": self.user, "groups": self.groups, "resourceAttributes": attrs},
            },
        )
        return bool((review.get("status") or {}).get("allowed"))

    def teardown(self) -> None:
        for ref, name, namespace in reversed(self.made):
            try:
                self.kube.delete(ref, name, namespace)
            except NotFound:
                pass


@contextmanager
def bound(
    cluster: Cluster,
    cp: ControlPlane,
    folder: Path,
    role: str,
    config: Config | None = None,
    backend: str | None = None,
) -> Iterator[Identity]:
    ctx = Context(config=config or Config(), kube_factory=lambda: cluster.kube)
    roles, _text = flow.roles(ctx, role=role, backend=backend)
    identity = Identity(cluster.kube, role, roles)
    try:
        identity.setup(cp, folder)
        yield identity
    finally:
        identity.teardown()


#: What the recreate role grants for ``--drain`` only: a run without it uses none of them.
DRAIN_ONLY = {
    ("create", "pods/eviction"), ("patch", "nodes/status"),
    ("list", "poddisruptionbudgets"), ("get", "configs"), ("create", "configmaps"),
    ("get", "configmaps"), ("update", "configmaps"), ("delete", "configmaps"),
}  # fmt: skip


#: What the recreate role grants for a change that restarts the daemons in place (the wait
#: for their rollout, a changed RuntimeClass): a recreate may find them rolled out already.
IN_PLACE_ONLY = {("get", "runtimeclasses"), ("list", "daemonsets"), ("watch", "daemonsets")}


def assert_all_used(
    identity: Identity, used: set[tuple[str, str]], *, but: set[tuple[str, str]] = frozenset()
) -> None:
    unused = granted(identity.roles) - used - but
    assert not unused, f"{identity.role} grants what the run never used: {sorted(unused)}"
    assert used - BASIC <= granted(identity.roles), "the run used more than the role grants"


# --- sufficient: each command, as its role --------------------------------------------


def test_drift_runs_as_its_role_and_uses_every_grant(
    incident: Incident, control_plane: ControlPlane, recorded: set[tuple[str, str]]
) -> None:
    cfg_file = str(incident.config_file)
    admin = run_cli("-c", cfg_file, "drift", "-o", "json")
    with bound(incident.cluster, control_plane, incident.root, "drift", incident.config()) as who:
        recorded.clear()
        r = run_cli("-c", cfg_file, "--kubeconfig", who.kubeconfig, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json == admin.json
    assert "needs-recreate" in r.stdout
    assert "forbidden" not in r.stderr.lower()
    assert_all_used(who, recorded)
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == OLD  # dry runs only


def test_preflight_runs_as_its_role_and_uses_every_grant(
    incident: Incident, control_plane: ControlPlane, recorded: set[tuple[str, str]]
) -> None:
    # A KAI reservation pod: preflight fetches each pod its metadata scan matched.
    reservations = incident.cluster.config.pods.reservation_namespace
    incident.cluster.pod(reservations, "gpu-reservation-b200-0", node="b200-0")
    cfg_file = str(incident.config_file)
    with bound(incident.cluster, control_plane, incident.root, "preflight") as who:
        admin, r, used = as_admin_and_role(cfg_file, who.kubeconfig, recorded, "preflight")
    assert r.exit_code == admin.exit_code == ExitCode.OK, r.output
    assert r.json == admin.json
    assert [p["name"] for p in r.json["pods"]["reservations"]] == ["gpu-reservation-b200-0"]
    assert_all_used(who, used)


def as_admin_and_role(
    cfg_file: str, kubeconfig: str, recorded: set[tuple[str, str]], *command: str
) -> tuple[Any, Any, set[tuple[str, str]]]:
    """``command -o json`` as the admin, then as the role: both results, and the role's
    requests.

    The shared cluster holds other tests' workloads, which may still be moving: the
    role's report is held to the admin's when the admin's, taken again after it, agrees
    (nothing changed meanwhile); up to three tries.
    """
    for _ in range(3):
        admin = run_cli("-c", cfg_file, *command, "-o", "json")
        recorded.clear()
        r = run_cli("-c", cfg_file, "--kubeconfig", kubeconfig, *command, "-o", "json")
        used = set(recorded)
        if run_cli("-c", cfg_file, *command, "-o", "json").json == admin.json:
            break
    return admin, r, used


def test_doctor_runs_as_its_role_and_uses_every_grant(
    incident: Incident, control_plane: ControlPlane, recorded: set[tuple[str, str]]
) -> None:
    # A pending fractional pod: doctor reads the events of its namespace.
    # KAI places it, and no KAI runs here: kube-scheduler would place it, KWOK run it,
    # and doctor would have no event to read.
    incident.cluster.pod("team-a", "frac-0", annotations={"gpu-fraction": "0.5"},
                         phase="Pending", scheduler="kai-scheduler")  # fmt: skip
    cfg_file = str(incident.config_file)
    config = incident.config()  # the guard check reads its lock Lease in fracctl-test
    with bound(incident.cluster, control_plane, incident.root, "doctor", config) as who:
        admin, r, used = as_admin_and_role(cfg_file, who.kubeconfig, recorded, "doctor")
    assert r.exit_code == admin.exit_code, r.output
    assert r.exit_code != ExitCode.EXTERNAL, r.output
    assert r.json == admin.json
    # Helm's release records are read only when the live config is a hook (next test).
    assert_all_used(who, used, but=HOOK_ONLY)
    assert not HOOK_ONLY & used


#: What the doctor role grants for a config that is a chart's hook only.
HOOK_ONLY = {("list", "secrets")}


def test_doctor_as_its_role_names_the_release_of_a_hook(
    cluster: Cluster,
    control_plane: ControlPlane,
    tmp_path: Path,
    recorded: set[tuple[str, str]],
    helm_bin: Helm,
) -> None:
    # The operator's chart installed by the real helm: the config is its hook, and the
    # release records are Secrets in the agents' namespace, where the role may list them
    # (not in every namespace: doctor falls back to that one).
    ns = cluster.namespace(cluster.config.cluster.agent_namespace)
    helm_bin.run("install", "gpu-fractioning", str(CHART), "-n", ns, kubeconfig=cluster.kubeconfig)
    try:
        with bound(cluster, control_plane, tmp_path, "doctor") as who:
            admin = run_cli("--kubeconfig", cluster.kubeconfig, "doctor", "-o", "json")
            recorded.clear()
            r = run_cli("--kubeconfig", who.kubeconfig, "doctor", "-o", "json")
    finally:
        helm_bin.run(
            "uninstall", "gpu-fractioning", "-n", ns, kubeconfig=cluster.kubeconfig, check=False
        )
        cluster.wipe_target()
    assert r.exit_code == admin.exit_code == ExitCode.FINDING, r.output

    def hook(result: Any) -> list[dict[str, Any]]:
        return [f for f in result.json["findings"] if f["check"] == "config-hook"]

    assert hook(r) == hook(admin)
    (f,) = hook(r)
    assert f"every `helm upgrade` of release {ns}/gpu-fractioning" in f["symptom"]
    assert HOOK_ONLY <= recorded


def test_doctor_without_list_secrets_says_what_it_could_not_read(
    cluster: Cluster, control_plane: ControlPlane, tmp_path: Path, helm_bin: Helm
) -> None:
    import dataclasses

    # The doctor role less its Secrets rule: the hook is still reported, with why no
    # release is named, and the run is a finding (exit 1), not an error.
    ctx = Context(config=Config(), kube_factory=lambda: cluster.kube)
    roles, _text = flow.roles(ctx, role="doctor")
    less = [
        dataclasses.replace(r, rules=tuple(x for x in r.rules if "secrets" not in x.resources))
        for r in roles
    ]
    assert less != roles
    ns = cluster.namespace(cluster.config.cluster.agent_namespace)
    helm_bin.run("install", "gpu-fractioning", str(CHART), "-n", ns, kubeconfig=cluster.kubeconfig)
    who = Identity(cluster.kube, "doctor", less)
    try:
        who.setup(control_plane, tmp_path)
        r = run_cli("--kubeconfig", who.kubeconfig, "doctor", "-o", "json")
    finally:
        who.teardown()
        helm_bin.run(
            "uninstall", "gpu-fractioning", "-n", ns, kubeconfig=cluster.kubeconfig, check=False
        )
        cluster.wipe_target()
    assert r.exit_code == ExitCode.FINDING, r.output
    (f,) = [f for f in r.json["findings"] if f["check"] == "config-hook"]
    assert "no Helm release record found" in f["symptom"]
    assert "Helm's release records could not be read" in " ".join(f["evidence"])
    assert 'cannot list resource "secrets"' in " ".join(f["evidence"])
    assert "fracctl rbac print --role doctor" in f["fix"]


def test_recreate_runs_as_its_role_and_uses_every_grant(
    incident: Incident, control_plane: ControlPlane, recorded: set[tuple[str, str]]
) -> None:
    reservations = incident.cluster.config.pods.reservation_namespace
    incident.cluster.pod(reservations, "gpu-reservation-b200-0", node="b200-0")
    config = incident.config()  # its lock Lease lives in fracctl-test
    ensure_namespace(incident.cluster.kube, config.recreate.lock_namespace)
    with bound(incident.cluster, control_plane, incident.root, "recreate", config) as who:
        recorded.clear()
        with incident.operator():
            r = run_cli(
                "-c", str(incident.config_file), "--kubeconfig", who.kubeconfig,
                "recreate", "--yes", "--backend", "apply",
            )  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    assert "could not record an Event" not in r.stderr
    assert "could not release" not in r.stderr
    assert_all_used(who, recorded, but=DRAIN_ONLY | IN_PLACE_ONLY)
    assert not DRAIN_ONLY & recorded, "a run without --drain fences and evicts nothing"


def test_an_in_place_change_runs_as_the_recreate_role_and_uses_its_grants(
    cluster: Cluster, control_plane: ControlPlane, recorded: set[tuple[str, str]], tmp_path: Path
) -> None:
    """Tolerations and a RuntimeClass that exists: the update, the RuntimeClass proof and
    the wait for the rollout, each allowed by the role."""
    from fracctl.core.doctor import RUNTIME_CLASSES
    from tests.recreate.test_restarts_daemons_cluster import (
        TOLERATIONS_YAML,
        git_wants,
        incident_without_b200,
        settled,
    )

    incident = incident_without_b200(cluster, tmp_path)
    cluster.runtime_class("nvidia-rbac-test")  # cluster-scoped: removed after
    git_wants(incident, TOLERATIONS_YAML + "  runtimeClassName: nvidia-rbac-test\n")
    config = incident.config()
    ensure_namespace(cluster.kube, config.recreate.lock_namespace)
    try:
        with incident.operator():
            settled(cluster)
            with bound(cluster, control_plane, incident.root, "recreate", config) as who:
                recorded.clear()
                r = run_cli("-c", str(incident.config_file), "--kubeconfig", who.kubeconfig,
                            "recreate", "--yes", "-o", "json")  # fmt: skip
    finally:
        cluster.kube.delete(RUNTIME_CLASSES, "nvidia-rbac-test")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "updated"
    assert "forbidden" not in r.stderr.lower()
    assert IN_PLACE_ONLY <= recorded, recorded
    assert recorded - BASIC <= granted(who.roles)


def test_recreate_drain_runs_as_its_role_and_uses_every_grant(
    cluster: Cluster, control_plane: ControlPlane, recorded: set[tuple[str, str]], tmp_path: Path
) -> None:
    from tests.support.drain_fixtures import busy_cluster

    with busy_cluster(cluster, tmp_path, groups=2, per_group=2) as busy:
        busy.kai.kube._fracctl_record = False  # the KAI stand-in's calls are not the run's
        config = busy.incident.config()
        ensure_namespace(cluster.kube, config.recreate.lock_namespace)
        with bound(cluster, control_plane, busy.incident.root, "recreate", config) as who:
            recorded.clear()
            r = run_cli(
                "-c", str(busy.incident.config_file), "--kubeconfig", who.kubeconfig,
                "recreate", "--drain", "--yes", "--backend", "apply",
            )  # fmt: skip
        assert r.exit_code == ExitCode.OK, r.output
        assert "4/4 pod(s)" in r.output and busy.fences() == {} and busy.journal() is None
        live = busy.incident.cluster.live_target()
        assert live is not None and live["spec"]["nodeSelector"] == NEW
    assert "forbidden" not in r.stderr.lower()
    assert_all_used(who, recorded, but=IN_PLACE_ONLY)


@pytest.mark.e2e
def test_recreate_through_flux_runs_as_its_role(
    incident: Incident,
    control_plane: ControlPlane,
    recorded: set[tuple[str, str]],
    real_flux: RealFlux,
) -> None:
    """With --backend flux the role adds get and patch on the one Kustomization, and get on
    its source; the real Flux does the create."""
    reservations = incident.cluster.config.pods.reservation_namespace
    incident.cluster.pod(reservations, "gpu-reservation-b200-0", node="b200-0")
    with incident.operator(), real_flux.serving(incident) as served:
        path = served.configure(incident)
        config = load(path, env={})
        ensure_namespace(incident.cluster.kube, config.recreate.lock_namespace)
        with bound(
            incident.cluster, control_plane, incident.root, "recreate", config, backend="flux"
        ) as who:
            recorded.clear()
            r = run_cli("-c", path, "--kubeconfig", who.kubeconfig, "recreate", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    assert ("patch", "kustomizations") in recorded and ("get", "kustomizations") in recorded
    assert ("get", "gitrepositories") in recorded
    # Flux creates the object: this identity's create is its dry run only.
    assert_all_used(who, recorded, but=DRAIN_ONLY | IN_PLACE_ONLY)


def test_node_agent_needs_no_api_access(tmp_path: Path) -> None:
    """The DaemonSet's pods run without a token: supervise and the readiness probe work."""
    assert rbac.roles("node-agent", flow.params(Config()))[0].rules == ()
    with fake_mps() as fake:
        env = fake.env(health_interval=0.1, start_timeout=3, command_timeout=2, graceful_stop=3)
        # Any API call would fail loudly: no kubeconfig, and no in-cluster token.
        env.update(PYTHONPATH=str(REPO), KUBECONFIG=str(tmp_path / "none"),
                   FRACCTL_KUBE_IN_CLUSTER="true", HOME=str(tmp_path))  # fmt: skip
        env.pop("KUBERNETES_SERVICE_HOST", None)
        fracctl = [sys.executable, "-m", "fracctl"]
        proc = subprocess.Popen(
            [*fracctl, "node", "mps", "install", "--foreground"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=fake.root, start_new_session=True,
        )  # fmt: skip
        try:
            assert wait_for(
                lambda: fake.commands().count("get_default_active_thread_percentage") >= 2
            )
            probe = subprocess.run(
                [*fracctl, "node", "mps", "status"], env=env, cwd=fake.root,
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert probe.returncode == ExitCode.OK, probe.stdout + probe.stderr
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == ExitCode.OK, stderr


# --- minimal: each role lacks what the others have ------------------------------------


def _probes(roles: list[rbac.Role]) -> list[tuple[str, str, str, str | None, str]]:
    return [
        (verb, rule.api_groups[0], res, rule.resource_names[0] if rule.resource_names else None,
         r.namespace)
        for r in roles for rule in r.rules for res in rule.resources for verb in rule.verbs
    ]  # fmt: skip


def _covers(roles: list[rbac.Role], probe: tuple[str, str, str, str | None, str]) -> bool:
    verb, group, resource, name, namespace = probe
    for r in roles:
        if r.namespace and r.namespace != namespace:
            continue
        for rule in r.rules:
            if (
                group in rule.api_groups
                and resource in rule.resources
                and verb in rule.verbs
                and (not rule.resource_names or name in rule.resource_names)
            ):
                return True
    return False


# Verbs no role grants, refused to every role.
NEVER = [
    ("get", "", "secrets", None, "default"),
    ("list", "", "secrets", None, ""),
    ("patch", "", "nodes", None, ""),
    ("update", "", "nodes", None, ""),  # node status: no role writes node conditions
    ("delete", "", "pods", None, "default"),
    ("create", "", "pods", None, "default"),
    ("create", "", "namespaces", None, ""),
    ("update", "gpu-fractioning.kai.scheduler", "gpufractioningconfigs", "default", ""),
    ("delete", "gpu-fractioning.kai.scheduler", "gpufractioningconfigs", "other", ""),
    ("update", "coordination.k8s.io", "leases", "kube-scheduler", "kube-system"),
    ("create", "coordination.k8s.io", "leases", None, "kube-node-lease"),
    ("escalate", RBAC, "clusterroles", None, ""),
    ("impersonate", "", "users", None, ""),
]


def test_each_role_lacks_the_other_roles_verbs(
    cluster: Cluster, control_plane: ControlPlane, tmp_path: Path
) -> None:
    every = {role: rbac.roles(role, flow.params(Config())) for role in rbac.ROLES}
    for role in rbac.ROLES:
        with bound(cluster, control_plane, tmp_path, role) as who:
            for probe in _probes(who.roles):
                assert who.allowed(*probe), f"{role} should be allowed {probe}"
            for other in rbac.ROLES:
                for probe in _probes(every[other]):
                    if not _covers(who.roles, probe):
                        assert not who.allowed(*probe), f"{role} may {probe} ({other}'s)"
            for probe in NEVER:
                assert not who.allowed(*probe), f"{role} may {probe}"


def test_the_next_role_verbs_are_refused(
    cluster: Cluster, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Spelled out: drift cannot delete, preflight cannot write, recreate cannot touch others."""
    target = ("gpu-fractioning.kai.scheduler", "gpufractioningconfigs")
    with bound(cluster, control_plane, tmp_path, "drift") as who:
        assert who.allowed("create", *target)
        assert not who.allowed("delete", *target, "default")
        assert not who.allowed("watch", *target)
        assert not who.allowed("create", "coordination.k8s.io", "leases", None, "default")
        assert not who.allowed("list", "", "pods")
    with bound(cluster, control_plane, tmp_path, "preflight") as who:
        assert who.allowed("list", "", "pods")
        assert not who.allowed("patch", *target, "default")
        assert not who.allowed("create", *target)
        assert not who.allowed("get", "apiextensions.k8s.io", "customresourcedefinitions",
                               "gpufractioningconfigs.gpu-fractioning.kai.scheduler")  # fmt: skip
    with bound(cluster, control_plane, tmp_path, "recreate") as who:
        assert who.allowed("delete", *target, "default")
        assert not who.allowed("delete", *target, "another")
        assert not who.allowed("delete", "coordination.k8s.io", "leases", "someone-else", "default")
        assert not who.allowed("get", "coordination.k8s.io", "leases", "fracctl-recreate",
                               "kube-system")  # fmt: skip
        assert not who.allowed("create", "", "events", None, "kube-system")
        assert who.allowed("create", "", "pods/eviction", "any", "team-a")
        assert not who.allowed("delete", "", "pods", "any", "team-a")
        assert who.allowed("patch", "", "nodes/status", "b200-0")
        assert not who.allowed("patch", "", "nodes", "b200-0")
        assert not who.allowed("update", "", "configmaps", "someone-else", "default")
    with bound(cluster, control_plane, tmp_path, "node-agent") as who:
        assert not who.allowed("get", "", "nodes", "b200-0")
        assert not who.allowed("patch", "", "nodes", "b200-0")
        assert not who.allowed("list", "", "pods")


def test_recreate_of_a_statefulset_runs_as_its_role(
    cluster: Cluster, control_plane: ControlPlane, recorded: set[tuple[str, str]], tmp_path: Path
) -> None:
    """``recreate KIND/NAME`` as ``recreate-objects``: a StatefulSet uses every grant of its
    kind (the other kinds' grants are the same verbs on their own resources)."""
    from tests.support.kinds_fixtures import Shop, identity, statefulset

    shop = Shop(cluster, tmp_path)
    try:
        shop.bound_claims(["data-db-0", "data-db-1"], size="5Gi")
        shop.commit(statefulset(shop))
        shop.create(statefulset(shop))
        before = identity(shop.running(2))
        shop.commit(statefulset(shop, service="db-v2", size="2Gi"))
        config = load(str(shop.config), env={})
        ensure_namespace(cluster.kube, config.recreate.lock_namespace)
        with bound(cluster, control_plane, tmp_path, "recreate-objects", config) as who:
            recorded.clear()
            r = run_cli("-c", str(shop.config), "--kubeconfig", who.kubeconfig, "recreate",
                        "StatefulSet/db", "-n", shop.ns, "--yes")  # fmt: skip
        assert r.exit_code == ExitCode.OK, r.output
        assert identity(shop.pods()) == before
        mine = {"statefulsets", "pods", "persistentvolumeclaims", "storageclasses", "leases",
                "namespaces"}  # fmt: skip
        assert_all_used(who, recorded, but={g for g in granted(who.roles) if g[1] not in mine})
    finally:
        shop.cleanup()


def test_as_its_role_an_admitted_eviction_is_waited_for_not_finished(
    cluster: Cluster, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The recreate role may not delete pods: a pod whose eviction an earlier run left
    admitted is not finished by a delete; the plan waits until the API server forgets it."""
    from fracctl.flows import drain
    from tests.support.drain_fixtures import admit_without_deleting, busy_cluster
    from tests.support.waiting import until

    with busy_cluster(cluster, tmp_path, groups=1, per_group=2) as busy:
        (first, _) = sorted(p["metadata"]["name"] for p in busy.pods("app=frac"))
        admit_without_deleting(busy, [first])
        config = busy.incident.config()
        with bound(cluster, control_plane, busy.incident.root, "recreate", config) as who:
            kube = Kube.connect(kubeconfig=who.kubeconfig)
            ctx = Context(config=config, kube_factory=lambda: kube)
            live = busy.incident.cluster.live_target() or {}

            def planned() -> Any:
                p = drain.plan(ctx, live=live, desired=live, force=False, journal=None)
                return p.budget_wait and p

            p = until("the budget lists the admitted pod", planned)
        assert p.finish == frozenset() and 100 < p.budget_wait <= 121, p
