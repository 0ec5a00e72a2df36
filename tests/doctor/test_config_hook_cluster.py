"""The operator's chart, shaped like upstream's, installed with the real helm 3 and 4 on the
real API server: doctor, lint and drift name the hook and its release, and the guard
policy's refusal names the hook and the guarded way."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.git import init_repo
from fracctl.errors import ExitCode
from tests.support.config_files import write_config
from tests.support.helm import CHART, Helm
from tests.support.helpers import Cluster, run_cli, wait_enforced

RELEASE = "gpu-fractioning"


@pytest.fixture
def installed(cluster: Cluster, helm_bin: Helm) -> Iterator[tuple[Cluster, Helm, str]]:
    """The chart installed by ``helm install`` into the agents' namespace."""
    ns = cluster.namespace(cluster.config.cluster.agent_namespace)
    helm_bin.run("install", RELEASE, str(CHART), "-n", ns, kubeconfig=cluster.kubeconfig)
    try:
        yield cluster, helm_bin, ns
    finally:
        helm_bin.run("uninstall", RELEASE, "-n", ns, kubeconfig=cluster.kubeconfig, check=False)
        cluster.wipe_target()  # hooks outlive helm uninstall


def doctor(cluster: Cluster, *args: str) -> Any:
    return run_cli("--kubeconfig", cluster.kubeconfig, "doctor", "-o", "json", *args)


def test_every_upgrade_recreates_the_config_and_doctor_names_the_release(
    installed: tuple[Cluster, Helm, str],
) -> None:
    cluster, helm, ns = installed
    first = cluster.live_target()
    assert first is not None
    assert first["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    # An upgrade that changes only an unrelated value: before-hook-creation recreates it.
    helm.run(
        "upgrade", RELEASE, str(CHART), "-n", ns, "--set", "operator.logLevel=debug",
        kubeconfig=cluster.kubeconfig,
    )  # fmt: skip
    second = cluster.live_target()
    assert second is not None and second["metadata"]["uid"] != first["metadata"]["uid"]
    # Hooks are not release objects: helm get manifest leaves it out, helm get hooks has it.
    manifest = helm.run("get", "manifest", RELEASE, "-n", ns, kubeconfig=cluster.kubeconfig)
    assert "GpuFractioningConfig" not in manifest.stdout
    hooks = helm.run("get", "hooks", RELEASE, "-n", ns, kubeconfig=cluster.kubeconfig)
    assert "GpuFractioningConfig" in hooks.stdout

    r = doctor(cluster)
    assert r.exit_code == ExitCode.FINDING, r.output
    (f,) = [f for f in r.json["findings"] if f["check"] == "config-hook"]
    assert f"every `helm upgrade` of release {ns}/{RELEASE}" in f["symptom"]
    assert f"release {ns}/{RELEASE} revision 2 (deployed) creates it as a hook on " in " ".join(
        f["evidence"]
    )
    assert "helm.sh/hook=post-install,post-upgrade" in f["evidence"][0]
    assert "fracctl recreate --backend helm" in f["fix"]


def test_under_the_guarded_helm_backend_doctors_hook_check_passes_with_a_note(
    installed: tuple[Cluster, Helm, str], tmp_path: Path
) -> None:
    # recreate.backend: helm, as runbooks/operator-upgrades.md sets it: the hook is the
    # path the configuration chose, and a doctor check in CI can pass (as drift says
    # "carried"); a release that is not the configured one is still a finding.
    cluster, _, ns = installed

    def under(release: str) -> Any:
        cfg = write_config(tmp_path / f"{release}.yaml", {
            "kube": {"kubeconfig": cluster.kubeconfig},
            "git": {"path": RELEASE, "renderer": "helm", "helm_release": release,
                    "helm_namespace": ns},
            "recreate": {"backend": "helm"},
        })  # fmt: skip
        r = run_cli("-c", str(cfg), "doctor", "-o", "json")
        (hook,) = [c for c in r.json["checks"] if c["id"] == "config-hook"]
        return r, hook

    r, hook = under(RELEASE)
    assert hook["status"] == "ok", r.output
    assert hook["note"] == (
        f"carried: the config is release {ns}/{RELEASE}'s hook (revision 1, deployed), and "
        "fracctl recreate (recreate.backend: helm) runs its upgrade guarded"
    )
    r, hook = under("gpu-fractionng")  # misspelt: not the release that has the hook
    assert hook["status"] == "finding", r.output


def test_lint_of_helm_template_names_the_hook_and_the_hard_coded_selector(
    helm_bin: Helm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    rendered = helm_bin.run("template", RELEASE, str(CHART), kubeconfig=str(tmp_path / "none"))
    monkeypatch.setattr("sys.stdin", io.StringIO(rendered.stdout))
    r = run_cli("lint", "-", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    (f,) = [f for f in r.json["findings"] if f["rule"] == "FL015"]
    assert "helm.sh/hook=post-install,post-upgrade" in f["message"]
    assert "no helm.sh/hook-delete-policy" in f["message"]
    assert "spec.nodeSelector nvidia.com/gpu.present=true is written in the chart" in f["message"]
    assert "opt-in selector is example.org/gpu-fractions=enabled" in f["message"]


def test_drift_with_the_chart_in_git_names_the_hook(
    installed: tuple[Cluster, Helm, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster, helm, ns = installed
    repo = tmp_path / "gitops"
    shutil.copytree(CHART, repo / "charts" / "gpu-fractioning")
    init_repo(repo, message="the operator's chart")
    config = write_config(
        tmp_path / "fracctl.yaml",
        {
            "git": {
                "repo": repo,
                "path": "charts/gpu-fractioning",
                "renderer": "helm",
                "helm_release": RELEASE,
                "helm_namespace": ns,
            }
        },
    )
    # fracctl renders with the helm on PATH: the same one that installed the chart.
    monkeypatch.setenv("PATH", f"{Path(helm.path).parent}{os.pathsep}{os.environ['PATH']}")
    r = run_cli("-c", str(config), "--kubeconfig", cluster.kubeconfig, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    (o,) = r.json["objects"]
    assert o["verdict"] != "missing-desired"
    assert o["hook"]["source"] == "in the rendering"
    assert o["hook"]["recreated_on"] == ["post-install", "post-upgrade"]
    text = run_cli("-c", str(config), "--kubeconfig", cluster.kubeconfig, "drift")
    assert text.exit_code == ExitCode.FINDING, text.output
    assert "a hook (helm.sh/hook=post-install,post-upgrade" in text.stdout
    assert "prune" not in text.stdout


def test_the_guard_refuses_the_hooks_delete_and_says_so(
    cluster: Cluster, helm_bin: Helm, tmp_path: Path
) -> None:
    ns = cluster.namespace(cluster.config.cluster.agent_namespace)
    helm_bin.run("install", RELEASE, str(CHART), "-n", ns, kubeconfig=cluster.kubeconfig)
    try:
        applied = run_cli("--kubeconfig", cluster.kubeconfig, "policy", "apply")
        assert applied.exit_code == ExitCode.OK, applied.output
        wait_enforced(cluster)
        up = helm_bin.run(
            "upgrade", RELEASE, str(CHART), "-n", ns, kubeconfig=cluster.kubeconfig, check=False
        )
        assert up.returncode != 0
        assert "is a chart's hook" in up.stderr, up.stderr
        assert "fracctl recreate --backend helm" in up.stderr
        assert "(refused: fracctl-admin)" in up.stderr  # who was refused, not the hook annotation
        status = helm_bin.run("status", RELEASE, "-n", ns, kubeconfig=cluster.kubeconfig)
        assert "STATUS: failed" in status.stdout
        # doctor says the release is left failed, and the hook is still the config.
        r = doctor(cluster)
        (f,) = [f for f in r.json["findings"] if f["check"] == "config-hook"]
        assert f"release {ns}/{RELEASE} is failed at revision 2" in " ".join(f["evidence"])
        # The runbook's recovery: the same upgrade without hooks; the config is untouched.
        before = cluster.live_target()
        helm_bin.run(
            "upgrade", RELEASE, str(CHART), "-n", ns, "--reuse-values", "--no-hooks",
            kubeconfig=cluster.kubeconfig,
        )  # fmt: skip
        status = helm_bin.run("status", RELEASE, "-n", ns, kubeconfig=cluster.kubeconfig)
        assert "STATUS: deployed" in status.stdout
        after = cluster.live_target()
        assert before is not None and after is not None
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        r = doctor(cluster)
        (f,) = [f for f in r.json["findings"] if f["check"] == "config-hook"]
        assert "is failed" not in " ".join(f["evidence"])
        assert "revision 3 (deployed)" in " ".join(f["evidence"])
    finally:
        cluster.unguard()
        helm_bin.run("uninstall", RELEASE, "-n", ns, kubeconfig=cluster.kubeconfig, check=False)
        cluster.wipe_target()


def test_a_live_hook_git_does_not_render_is_hook_never_missing_desired(
    installed: tuple[Cluster, Helm, str], tmp_path: Path
) -> None:
    cluster, _helm, _ns = installed
    repo = tmp_path / "gitops"
    (repo / "apps").mkdir(parents=True)
    (repo / "apps" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: default\n"
    )
    init_repo(repo, message="no config in git")
    config = write_config(tmp_path / "fracctl.yaml", {"git": {"repo": repo, "path": "apps"}})
    r = run_cli("-c", str(config), "--kubeconfig", cluster.kubeconfig, "drift", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    (o,) = r.json["objects"]
    assert o["verdict"] == "hook"
    assert o["hook"]["source"] == "on the live object"
    text = run_cli("-c", str(config), "--kubeconfig", cluster.kubeconfig, "drift")
    assert "missing-desired" not in text.stdout and "prune it" not in text.stdout, text.stdout
    assert "stop the chart's hook" in text.stdout, text.stdout
