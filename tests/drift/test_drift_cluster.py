"""``fracctl drift`` against the real API server: verdicts, messages, formats, cost."""

from __future__ import annotations

import copy
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from fracctl import config as cfg
from fracctl.adapters.git import init_repo
from fracctl.adapters.kube import Kube
from fracctl.core import drift as d
from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import ExitCode, NotFound
from fracctl.flows import drift as flow
from fracctl.flows.context import Context
from fracctl.sandbox.controlplane import ControlPlane
from tests.support.helpers import Cluster, commit_all, granted, run_cli

REPO = Path(__file__).resolve().parents[2]
GITOPS = REPO / "examples" / "gitops"
CEL = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
RTX = {"example.org/gpu-class": "rtx-pro-6000"}
OPT_IN = {"example.org/gpu-fractions": "enabled"}

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kustomize") or shutil.which("kubectl")), reason="needs kustomize or kubectl"
)


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture
def gitops(tmp_path: Path) -> Path:
    """The example gitops repository, committed."""
    dest = tmp_path / "gitops"
    shutil.copytree(GITOPS, dest)
    init_repo(dest, message="desired state: select the opt-in label")
    return dest


def write_config(tmp_path: Path, kubeconfig: str, repo: Path, path: str, extra: str = "") -> str:
    f = tmp_path / "fracctl.yaml"
    f.write_text(
        f"kube:\n  kubeconfig: {kubeconfig}\n"
        f"git:\n  repo: {repo}\n  path: {path}\n  revision: HEAD\n" + extra
    )
    return str(f)


@pytest.fixture
def sandbox_config(tmp_path: Path, cluster: Cluster, gitops: Path) -> str:
    """A fracctl.yaml like the sandbox writes: the cluster plus the gitops repo."""
    return write_config(tmp_path, cluster.kubeconfig, gitops, "gpu-fractioning")


class Objects:
    """Creates namespaced test objects in a fresh namespace and removes them afterwards."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.kube = cluster.kube
        self.ns = cluster.namespace(f"drift-{uuid.uuid4().hex[:8]}")
        self.made: list[tuple[ResourceRef, str]] = []

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        obj["metadata"]["namespace"] = self.ns
        ref = self.kube.resolve(obj["apiVersion"], obj["kind"])
        out = self.kube.create(ref, obj)
        self.made.append((ref, obj["metadata"]["name"]))
        return out

    def cleanup(self) -> None:
        for ref, name in self.made:
            try:
                self.kube.delete(ref, name, self.ns)
            except NotFound:
                pass


@pytest.fixture
def objects(cluster: Cluster) -> Iterator[Objects]:
    o = Objects(cluster)
    try:
        yield o
    finally:
        o.cleanup()


def context(kubeconfig: str, **sections: Any) -> Context:
    kube = Kube.connect(kubeconfig=kubeconfig)
    config = cfg.Config(**sections)
    return Context(config=config, kube_factory=lambda: kube)


def deployment(
    name: str, labels: dict[str, str], replicas: int = 1, **extra: Any
) -> dict[str, Any]:
    container = {"name": "main", "image": "registry.invalid/app:1", **extra}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def configmap(name: str, data: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data,
        **extra,
    }


def in_ns(obj: dict[str, Any], ns: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = ns
    return obj


# --- the incident ----------------------------------------------------------------------------


@needs_kustomize
def test_incident_drift_exits_1_naming_the_selector_both_values_and_the_cel_message(
    cluster: Cluster, sandbox_config: str
) -> None:
    cluster.target(RTX)
    r = run_cli("-c", sandbox_config, "drift")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "needs-recreate" in r.stdout
    assert "spec.nodeSelector" in r.stdout
    assert '{"example.org/gpu-class": "rtx-pro-6000"}' in r.stdout
    assert '{"example.org/gpu-fractions": "enabled"}' in r.stdout
    assert CEL in r.stdout
    assert "gpu-fractioning/gpufractioningconfig.yaml:8" in r.stdout
    # a dry run only: the live object still has the old selector
    live = cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == RTX


@needs_kustomize
def test_incident_as_json_keeps_the_api_servers_message_and_causes(
    cluster: Cluster, sandbox_config: str
) -> None:
    cluster.target(RTX)
    r = run_cli("-c", sandbox_config, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    (o,) = r.json["objects"]
    assert o["verdict"] == "needs-recreate"
    assert o["fields"][0]["path"] == "spec.nodeSelector"
    assert o["fields"][0]["live"] == RTX
    assert o["fields"][0]["desired"] == OPT_IN
    assert CEL in o["message"]
    assert {"field": "spec.nodeSelector"}.items() <= o["causes"][0].items()
    assert f'Invalid value: "object": {CEL}' in o["causes"][0]["message"]
    assert r.json["source"]["renderer"] == "kustomize"
    assert r.json["drifted"] is True


@needs_kustomize
def test_live_equal_to_git_exits_0(cluster: Cluster, sandbox_config: str) -> None:
    cluster.target(OPT_IN)
    r = run_cli("-c", sandbox_config, "drift")
    assert r.exit_code == ExitCode.OK, r.output
    assert "in-sync" in r.stdout
    assert "1 object: 1 in-sync" in r.stdout


@needs_kustomize
def test_missing_live_object_exits_1(cluster: Cluster, sandbox_config: str) -> None:
    r = run_cli("-c", sandbox_config, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["objects"][0]["verdict"] == "missing-live"
    r = run_cli("-c", sandbox_config, "drift")
    assert "missing-live" in r.stdout
    # Not "create it (sync)": the recreate creates it through its backend, as the run
    # that deleted it would resume, and the command names this run's configuration.
    assert (
        f"Next: fracctl --config {sandbox_config} recreate --yes creates it from git through "
        "recreate.backend (argocd), after its guards"
    ) in r.stdout, r.stdout
    assert "create it (sync)" not in r.stdout


def test_target_missing_from_git_is_missing_desired(tmp_path: Path, cluster: Cluster) -> None:
    repo = tmp_path / "repo"
    (repo / "apps").mkdir(parents=True)
    (repo / "apps" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
    )
    init_repo(repo, message="no target")
    cluster.target(RTX)
    config = write_config(tmp_path, cluster.kubeconfig, repo, "apps")
    r = run_cli("-c", config, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["objects"][0]["verdict"] == "missing-desired"


@needs_kustomize
def test_a_later_git_revision_is_judged_without_checking_it_out(
    cluster: Cluster, sandbox_config: str, gitops: Path
) -> None:
    cluster.target(RTX)
    first = commit_all(gitops, message="noop")
    f = gitops / "gpu-fractioning" / "gpufractioningconfig.yaml"
    f.write_text(
        f.read_text().replace(
            "example.org/gpu-fractions: enabled", "example.org/gpu-class: rtx-pro-6000"
        )
    )
    commit_all(gitops, message="back to rtx")
    assert run_cli("-c", sandbox_config, "drift").exit_code == ExitCode.OK
    r = run_cli("-c", sandbox_config, "drift", "--revision", first)
    assert r.exit_code == ExitCode.FINDING, r.output


# --- check_target / check_objects (the flow API) ------------------------------------------


def test_check_target_takes_given_desired_objects(cluster: Cluster) -> None:
    cluster.target(RTX)
    ctx = context(cluster.kubeconfig)
    t = ctx.config.target
    desired: dict[str, Any] = {
        "apiVersion": t.api_version,
        "kind": t.kind,
        "metadata": {"name": "default"},
        "spec": {"nodeSelector": OPT_IN},
    }
    o = flow.check_target(ctx, desired_objects=[desired])
    assert o.verdict == d.NEEDS_RECREATE
    assert o.key == "GpuFractioningConfig/default"
    assert [(f.path, f.live, f.desired) for f in o.fields] == [("spec.nodeSelector", RTX, OPT_IN)]
    assert CEL in o.message
    assert o.live is not None and o.desired == desired
    # the same with the selector git already has: in sync, validated by a dry-run
    # create, no dry-run apply sent
    ctx.kube.calls.clear()
    same = copy.deepcopy(desired)
    same["spec"]["nodeSelector"] = RTX
    assert flow.check_target(ctx, desired_objects=[same]).verdict == d.IN_SYNC
    assert ctx.kube.calls["POST gpufractioningconfigs"] == 1
    assert not any(k.startswith("PATCH") for k in ctx.kube.calls)
    # and with no target among the desired objects
    assert flow.check_target(ctx, desired_objects=[]).verdict == d.MISSING_DESIRED


def test_deployment_selector_change_needs_recreate_with_the_api_servers_message(
    cluster: Cluster, objects: Objects
) -> None:
    objects.create(deployment("web", {"app": "web"}))
    ctx = context(cluster.kubeconfig)
    report = flow.check_objects(ctx, [in_ns(deployment("web", {"app": "web-v2"}), objects.ns)])
    (o,) = report.objects
    assert o.verdict == d.NEEDS_RECREATE, o
    assert "field is immutable" in o.message
    paths = [f.path for f in o.fields]
    assert paths[0] == "spec.selector"
    assert o.fields[0].live == {"matchLabels": {"app": "web"}}
    assert o.fields[0].desired == {"matchLabels": {"app": "web-v2"}}
    assert report.drifted


def test_the_next_step_for_another_kind_names_its_procedure_or_refusal(
    cluster: Cluster, objects: Objects
) -> None:
    from fracctl.core.drift.report import describe

    objects.create(deployment("web", {"app": "web"}, replicas=0))
    ctx = context(cluster.kubeconfig)
    (o,) = flow.check_objects(
        ctx, [in_ns(deployment("web", {"app": "web-v2"}, replicas=0), objects.ns)]
    ).objects
    assert o.verdict == d.NEEDS_RECREATE, o
    text = describe(o)
    assert "fracctl recreate runs it guarded" not in text
    # no pod runs, so none lacks the new selector's labels: adoption is safe
    assert f"fracctl recreate Deployment/web -n {objects.ns} --backend apply runs the " in text
    assert o.procedure is not None and o.procedure["procedure"] == "orphan-and-adopt"
    assert o.to_dict()["procedure"] == o.procedure
    # the configured target keeps the guarded path
    cluster.target(RTX)
    t = ctx.config.target
    target = flow.check_target(
        ctx,
        desired_objects=[
            {
                "apiVersion": t.api_version,
                "kind": t.kind,
                "metadata": {"name": t.name},
                "spec": {"nodeSelector": OPT_IN},
            }
        ],
    )
    assert "Next: only delete + recreate can change it (fracctl recreate runs it guarded)" in (
        describe(target)
    )


def test_deployment_replicas_change_applies_in_place(cluster: Cluster, objects: Objects) -> None:
    objects.create(deployment("web", {"app": "web"}))
    ctx = context(cluster.kubeconfig)
    report = flow.check_objects(ctx, [in_ns(deployment("web", {"app": "web"}, 3), objects.ns)])
    (o,) = report.objects
    assert o.verdict == d.APPLIES_IN_PLACE, o
    assert o.fields == []
    assert [(c.path, c.live, c.desired) for c in o.changes] == [("spec.replicas", 1, 3)]
    live = ctx.kube.get(ctx.kube.resolve("apps/v1", "Deployment"), "web", objects.ns)
    assert live["spec"]["replicas"] == 1  # dry run only


def test_differences_the_server_normalises_are_in_sync(cluster: Cluster, objects: Objects) -> None:
    objects.create(deployment("web", {"app": "web"}, resources={"limits": {"cpu": "500m"}}))
    ctx = context(cluster.kubeconfig)
    desired = in_ns(
        deployment("web", {"app": "web"}, resources={"limits": {"cpu": "0.5"}}), objects.ns
    )
    (o,) = flow.check_objects(ctx, [desired]).objects
    assert o.verdict == d.IN_SYNC, o
    assert o.note == "differences are server-side defaults only"
    assert ctx.kube.calls["PATCH deployments"] == 1


def test_a_desired_object_the_server_rejects_for_another_reason(
    cluster: Cluster, objects: Objects
) -> None:
    objects.create(deployment("web", {"app": "web"}))
    ctx = context(cluster.kubeconfig)
    (o,) = flow.check_objects(
        ctx, [in_ns(deployment("web", {"app": "web"}, -1), objects.ns)]
    ).objects
    assert o.verdict == d.REJECTED, o
    assert "spec.replicas" in o.message
    assert "must be greater than or equal to 0" in o.message


def test_immutable_configmap_data_needs_recreate(cluster: Cluster, objects: Objects) -> None:
    objects.create(configmap("frozen", {"a": "1"}, immutable=True))
    ctx = context(cluster.kubeconfig)
    (o,) = flow.check_objects(
        ctx, [in_ns(configmap("frozen", {"a": "2"}, immutable=True), objects.ns)]
    ).objects
    assert o.verdict == d.NEEDS_RECREATE, o
    assert [f.path for f in o.fields] == ["data"]
    assert "immutable" in o.message


def test_unknown_kinds_and_missing_objects(cluster: Cluster, objects: Objects) -> None:
    ctx = context(cluster.kubeconfig)
    thing = {"apiVersion": "example.org/v1", "kind": "Thing", "metadata": {"name": "t"}}
    report = flow.check_objects(ctx, [thing, in_ns(configmap("absent", {}), objects.ns)])
    assert [o.verdict for o in report.objects] == [d.MISSING_LIVE, d.MISSING_LIVE]
    assert "the server has no resource Thing" in report.objects[0].note


def test_objects_without_a_namespace_use_the_configured_one(
    cluster: Cluster, objects: Objects
) -> None:
    objects.create(configmap("cm", {"a": "1"}))
    ctx = context(cluster.kubeconfig, git=cfg.GitConfig(namespace=objects.ns))
    (o,) = flow.check_objects(ctx, [configmap("cm", {"a": "1"})]).objects
    assert (o.verdict, o.namespace) == (d.IN_SYNC, objects.ns)


def test_an_object_without_a_name_is_a_usage_error(cluster: Cluster) -> None:
    from fracctl.errors import UsageError

    ctx = context(cluster.kubeconfig)
    with pytest.raises(UsageError, match="lacks apiVersion, kind or metadata.name"):
        flow.check_objects(ctx, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}])


# --- cost ------------------------------------------------------------------------------------


def test_200_objects_cost_one_list_per_kind_one_validation_each_and_one_apply_per_difference(
    cluster: Cluster, objects: Objects
) -> None:
    desired: list[dict[str, Any]] = []
    for i in range(190):
        objects.create(configmap(f"cm-{i:03}", {"i": str(i)}))
        desired.append(in_ns(configmap(f"cm-{i:03}", {"i": str(i)}), objects.ns))
    for i in range(10):
        objects.create(deployment(f"web-{i}", {"app": f"web-{i}"}))
        desired.append(in_ns(deployment(f"web-{i}", {"app": f"web-{i}"}), objects.ns))
    desired[5]["data"]["i"] = "changed"  # applies in place
    desired[190]["spec"]["replicas"] = 4  # applies in place
    desired[191]["spec"]["selector"]["matchLabels"]["app"] = "moved"  # needs recreate
    desired[191]["spec"]["template"]["metadata"]["labels"]["app"] = "moved"
    ctx = context(cluster.kubeconfig)
    report = flow.check_objects(ctx, desired)
    counts = report.counts()
    assert counts["in-sync"] == 197, (counts, report.objects[0])
    assert counts["applies-in-place"] == 2
    assert counts["needs-recreate"] == 1
    calls = ctx.kube.calls
    assert calls["GET configmaps"] == 1  # one LIST, no per-object GET
    assert calls["GET deployments"] == 1
    # every desired object is validated by a dry-run create, whether it differs or not
    assert calls["POST configmaps"] == 190
    assert calls["POST deployments"] == 10
    # and only the differing ones are sent as a dry-run apply
    assert calls["PATCH configmaps"] + calls["PATCH deployments"] == 3
    discovery = {k: v for k, v in calls.items() if k in ("GET api/v1", "GET apis/apps/v1")}
    # the needs-recreate Deployment's pods and Services: what its procedure depends on
    assert calls["GET pods"] == calls["GET services"] == 1
    assert sum(calls.values()) == 2 + 200 + 3 + 2 + sum(discovery.values()), dict(calls)


# --- formats through the CLI ---------------------------------------------------------------


def all_repo(tmp_path: Path, ns: str, files: dict[str, list[dict[str, Any]]]) -> Path:
    repo = tmp_path / "apps-repo"
    for rel, objs in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("---\n".join(json.dumps(in_ns(o, ns), indent=1) + "\n" for o in objs))
    init_repo(repo, message="apps")
    return repo


def test_all_with_junit_and_github_formats(
    tmp_path: Path, cluster: Cluster, objects: Objects
) -> None:
    objects.create(deployment("web", {"app": "web"}))
    objects.create(configmap("cm", {"a": "1"}))
    repo = all_repo(
        tmp_path,
        objects.ns,
        {
            "apps/web.yaml": [deployment("web", {"app": "web-v2"})],
            "apps/cm.yaml": [configmap("cm", {"a": "1"})],
        },
    )
    config = write_config(tmp_path, cluster.kubeconfig, repo, "apps")
    junit = tmp_path / "out" / "drift.xml"
    junit.parent.mkdir()
    r = run_cli("-c", config, "drift", "--all", "-o", "github", "--junit-file", str(junit))
    assert r.exit_code == ExitCode.FINDING, r.output
    lines = r.stdout.splitlines()
    errors = [ln for ln in lines if ln.startswith("::error ")]
    assert len(errors) == 1
    assert errors[0].startswith("::error file=apps/web.yaml,line=")
    assert "field is immutable" in errors[0]
    assert lines[-1] == "::notice title=fracctl drift::2 objects: 1 in-sync, 1 needs-recreate"
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert (suite.tests, suite.failures) == (2, 1)

    r = run_cli("-c", config, "drift", "--all", "-o", "junit", "--kind", "ConfigMap")
    assert r.exit_code == ExitCode.OK, r.output
    (tmp_path / "cm.xml").write_text(r.stdout)
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "cm.xml"))))
    assert (suite.tests, suite.failures) == (1, 0)

    r = run_cli("-c", config, "drift", "--all")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "Deployment/" in r.stdout and "needs-recreate" in r.stdout
    assert "2 objects: 1 in-sync, 1 needs-recreate" in r.stdout


def test_github_format_is_the_default_inside_github_actions(
    tmp_path: Path, cluster: Cluster, monkeypatch: pytest.MonkeyPatch, gitops: Path
) -> None:
    cluster.target(OPT_IN)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    config = write_config(
        tmp_path, cluster.kubeconfig, gitops, "gpu-fractioning/gpufractioningconfig.yaml"
    )
    r = run_cli("-c", config, "drift")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.stdout.startswith("::notice title=fracctl drift::1 object: 1 in-sync")


# --- errors ----------------------------------------------------------------------------------


def test_usage_errors_exit_2(tmp_path: Path, cluster: Cluster, gitops: Path) -> None:
    config = write_config(tmp_path, cluster.kubeconfig, gitops, "gpu-fractioning")
    for args, text in [
        (["drift", "--kind", "Deployment"], "add --all"),
        (["drift", "--app", "x", "--path", "y"], "--app takes the desired state from Argo CD"),
        (["drift", "-o", "xml"], "must be one of"),
        (["drift", "--renderer", "jsonnet"], "must be one of"),
        (["drift", "--junit-file", str(tmp_path / "no" / "dir" / "x.xml")], "cannot write"),
    ]:
        r = run_cli("-c", config, *args)
        assert r.exit_code == ExitCode.USAGE, (args, r.output)
        assert text in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.output


def test_git_errors_exit_3_with_one_line(tmp_path: Path, cluster: Cluster, gitops: Path) -> None:
    (gitops / "gpu-fractioning" / "broken.yaml").write_text("a: b\n  c: d\n")
    commit_all(gitops, message="broken")
    config = write_config(tmp_path, cluster.kubeconfig, gitops, "gpu-fractioning")
    for args, text in [
        (["drift"], "gpu-fractioning/broken.yaml:2: not valid YAML"),
        (["drift", "--revision", "nope"], "unknown revision 'nope'"),
        (["drift", "--path", "clusters/x"], "path 'clusters/x' does not exist"),
    ]:
        r = run_cli("-c", config, *args)
        assert r.exit_code == ExitCode.EXTERNAL, (args, r.output)
        assert text in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
        assert "Traceback" not in r.output


def test_unreachable_api_server_exits_3_with_one_line(tmp_path: Path, gitops: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t0ken-value"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    config = write_config(
        tmp_path, str(kubeconfig), gitops, "gpu-fractioning/gpufractioningconfig.yaml"
    )
    r = run_cli("-c", config, "drift")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert r.stderr.startswith("Error: cannot reach the API server at https://127.0.0.1:9")
    assert len(r.stderr.strip().splitlines()) == 1
    assert "t0ken-value" not in r.output


def test_forbidden_reads_exit_3_naming_rbac(
    tmp_path: Path, control_plane: ControlPlane, gitops: Path
) -> None:
    viewer = tmp_path / "viewer.kubeconfig"
    control_plane.write_kubeconfig(str(viewer), token=control_plane.viewer_token, user="viewer")
    config = write_config(
        tmp_path, str(viewer), gitops, "gpu-fractioning/gpufractioningconfig.yaml"
    )
    r = run_cli("-c", config, "drift")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "403" in r.stderr and "RBAC" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


class AsUser(Kube):
    """The admin's connection, impersonating a user with only namespaced rights."""

    user = "drift-ci"

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = super()._headers(content_type, accept)
        headers["Impersonate-User"] = self.user
        return headers


def test_namespace_scoped_rights_fall_back_to_one_list_per_namespace(cluster: Cluster) -> None:
    kube = cluster.kube
    rbac = "rbac.authorization.k8s.io/v1"
    roles = kube.resolve(rbac, "Role")
    bindings = kube.resolve(rbac, "RoleBinding")
    cms = kube.resolve("v1", "ConfigMap")
    namespaces = [cluster.namespace(f"drift-ns-{uuid.uuid4().hex[:6]}") for _ in range(2)]
    desired = []
    for ns in namespaces:
        kube.create(
            roles,
            {
                "apiVersion": rbac,
                "kind": "Role",
                "metadata": {"name": "drift", "namespace": ns},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["configmaps"],
                        "verbs": ["get", "list", "create", "patch"],
                    }
                ],
            },
        )
        kube.create(
            bindings,
            {
                "apiVersion": rbac,
                "kind": "RoleBinding",
                "metadata": {"name": "drift", "namespace": ns},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "drift",
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": AsUser.user}
                ],
            },
        )
        for name in ("a", "b"):
            kube.create(cms, in_ns(configmap(name, {"k": "v"}), ns))
            desired.append(in_ns(configmap(name, {"k": "v"}), ns))
    try:
        user = AsUser.connect(kubeconfig=cluster.kubeconfig)
        ctx = Context(config=cfg.Config(), kube_factory=lambda: user)
        report = flow.check_objects(ctx, desired)
        assert [o.verdict for o in report.objects] == [d.IN_SYNC] * 4
        # one forbidden cluster-wide LIST, then one LIST in each namespace
        assert user.calls["GET configmaps"] == 3
    finally:
        for ns in namespaces:
            for name in ("a", "b"):
                kube.delete(cms, name, ns)
            kube.delete(bindings, "drift", ns)
            kube.delete(roles, "drift", ns)


class AsNoCrdUser(AsUser):
    user = "drift-no-crd"


def test_without_the_crd_the_api_servers_causes_name_the_field(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = [
        {
            "apiGroups": ["gpu-fractioning.kai.scheduler"],
            "resources": ["gpufractioningconfigs"],
            "verbs": ["get", "list", "create", "patch"],
        }
    ]
    cluster.target(RTX)
    with granted(cluster.kube, AsNoCrdUser.user, rules, f"drift-no-crd-{uuid.uuid4().hex[:6]}"):
        user = AsNoCrdUser.connect(kubeconfig=cluster.kubeconfig)
        ctx = Context(config=cfg.Config(), kube_factory=lambda: user)
        t = ctx.config.target
        desired = {
            "apiVersion": t.api_version,
            "kind": t.kind,
            "metadata": {"name": t.name},
            "spec": {"nodeSelector": OPT_IN},
        }
        o = flow.check_target(ctx, desired_objects=[desired])
        assert o.verdict == d.NEEDS_RECREATE
        (f,) = o.fields
        assert (f.path, f.live, f.desired, f.source) == (
            "spec.nodeSelector",
            RTX,
            OPT_IN,
            "api-server",
        )
        assert CEL in f.message
        err = capsys.readouterr().err
        assert "cannot read the CRD gpufractioningconfigs.gpu-fractioning.kai.scheduler" in err
