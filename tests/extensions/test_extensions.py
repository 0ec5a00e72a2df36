"""Each example extension works once its one registration line is in place.

The fixtures apply that line (a registry entry, a ``CHECKS`` entry, a rule module's
import, a ``COMMANDS`` entry) for the test alone; nothing here ships.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl import config as cfg
from fracctl.adapters.git import git
from fracctl.cli import main
from fracctl.core.doctor import Snapshot, diagnose
from fracctl.core.doctor import registry as doctor_registry
from fracctl.core.gitops import backends as registry
from fracctl.core.gitops.backends import BackendEntry
from fracctl.core.lint import registry as lint_registry
from fracctl.core.lint.engine import check as lint
from fracctl.errors import ExitCode
from fracctl.flows.doctor import settings as doctor_settings
from fracctl.flows.lint import settings as lint_settings
from fracctl.flows.recreate import recreate
from tests.extensions import doctor_check
from tests.support.helpers import Cluster, commit_all, run_cli, unit_context
from tests.support.recreate_fixtures import NEW, make_incident

HERE = "tests.extensions"


@pytest.fixture
def stamped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one line in fracctl/core/gitops/backends.py's REGISTRY."""
    entry = BackendEntry(
        "stamped",
        "server-side apply under its own field manager",
        f"{HERE}.stamped.backend:StampedBackend",
        rbac=f"{HERE}.stamped.backend:rbac_rules",
        section=f"{HERE}.stamped.backend:StampedConfig",
    )
    monkeypatch.setattr(registry, "REGISTRY", (*registry.REGISTRY, entry))


def test_the_backends_section_is_read_like_any_other(stamped: None, tmp_path: Path) -> None:
    path = tmp_path / "gpu.yaml"
    path.write_text("recreate:\n  backend: stamped\nstamped:\n  field_manager: team-gpu\n")
    c = cfg.load(str(path), env={})
    assert c.section("stamped").field_manager == "team-gpu"
    env = {"FRACCTL_STAMPED_FIELD_MANAGER": "from-env"}
    assert cfg.load(str(path), env=env).section("stamped").field_manager == "from-env"
    assert cfg.load(None, env={}).section("stamped").field_manager == "fracctl-stamped"
    path.write_text("stamped:\n  field_manager: ' '\n")
    with pytest.raises(
        cfg.ConfigError, match=r"gpu.yaml:2: stamped: field_manager must not be empty"
    ):
        cfg.load(str(path), env={})
    path.write_text("stamped:\n  manager: x\n")
    with pytest.raises(cfg.ConfigError, match=r"stamped.manager: unknown key"):
        cfg.load(str(path), env={})


def test_without_its_entry_the_section_is_unknown(tmp_path: Path) -> None:
    path = tmp_path / "fracctl.yaml"
    path.write_text("stamped:\n  field_manager: team-gpu\n")
    with pytest.raises(cfg.ConfigError, match=r"unknown section 'stamped'"):
        cfg.load(str(path), env={})


def test_the_backends_rbac_joins_the_recreate_role(stamped: None) -> None:
    result = run_cli("rbac", "print", "--role", "recreate", "--backend", "stamped", "-o", "json")
    assert result.exit_code == 0, result.stderr
    rules = [r for role in json.loads(result.stdout) for r in role.get("rules", [])]
    assert {
        "apiGroups": ["gpu-fractioning.kai.scheduler"],
        "resources": ["gpufractioningconfigs"],
        "resourceNames": ["default"],
        "verbs": ["patch"],
    } in rules


def test_recreate_runs_the_new_backend_with_its_settings(
    stamped: None, cluster: Cluster, tmp_path: Path
) -> None:
    incident = make_incident(cluster, tmp_path)
    ctx = incident.context(stamped__field_manager="team-gpu")
    with incident.operator():
        result = recreate(ctx, yes=True, backend="stamped")
    assert result.outcome == "recreated"
    assert result.notes[-1] == "server-side apply as team-gpu accepted the object"
    assert "it will apply as team-gpu" in result.proofs
    live = cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    managers = {f["manager"] for f in live["metadata"]["managedFields"]}
    assert "team-gpu" in managers


def test_a_new_doctor_check_runs_in_order_and_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = (*doctor_registry.CHECKS, doctor_check.cordoned_gpu_nodes)  # the one entry
    monkeypatch.setattr(doctor_registry, "CHECKS", checks)
    node = {
        "metadata": {"name": "b200-0", "labels": {"nvidia.com/gpu.present": "true"}},
        "spec": {"unschedulable": True},
        "status": {"capacity": {"nvidia.com/gpu": "8"}},
    }
    report = diagnose(Snapshot(nodes=[node]), doctor_settings(unit_context()))
    assert [r.check.id for r in report.results][-1] == "cordoned-gpu-nodes"
    found = [f for f in report.findings if f.check == "cordoned-gpu-nodes"]
    assert len(found) == 1 and found[0].fix == "kubectl uncordon b200-0"
    node["spec"] = {}
    report = diagnose(Snapshot(nodes=[node]), doctor_settings(unit_context()))
    assert not [f for f in report.findings if f.check == "cordoned-gpu-nodes"]


@pytest.fixture
def memory_rule() -> Iterator[None]:
    """The one import in fracctl/core/lint/__init__.py; taken out again afterwards."""
    module = importlib.import_module(f"{HERE}.lint_rule")
    if "FL901" not in lint_registry.BY_ID:
        importlib.reload(module)
    try:
        yield
    finally:
        lint_registry._BY_ID.pop("FL901", None)
        lint_registry._BY_NAME.pop("fraction-without-memory-note", None)


def test_a_new_lint_rule_is_listed_and_finds(memory_rule: None) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"gpu-fraction": "0.5"}},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]},
    }
    findings = lint([pod], lint_settings(cfg.Config()))
    assert [f.rule.id for f in findings if f.rule.id == "FL901"] == ["FL901"]
    pod["metadata"]["annotations"]["gpu-memory"] = "4096"  # type: ignore[index]
    assert not [f for f in lint([pod], lint_settings(cfg.Config())) if f.rule.id == "FL901"]
    listed = run_cli("lint", "--list-rules")
    assert "FL901" in listed.stdout and "fraction-without-memory-note" in listed.stdout


def test_a_new_command_runs_through_the_entry_point(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    summary = "Print git's selector of the fractioning config."
    monkeypatch.setitem(main.COMMANDS, "selector", (f"{HERE}.command", summary))  # the one line
    assert summary in run_cli("--help").stdout
    repo = tmp_path / "gitops"
    (repo / "gpu").mkdir(parents=True)
    (repo / "gpu" / "config.yaml").write_text(
        "apiVersion: gpu-fractioning.kai.scheduler/v1alpha1\nkind: GpuFractioningConfig\n"
        "metadata:\n  name: default\nspec:\n  nodeSelector:\n    gpu: b200\n"
    )
    git(["init", "-q", "-b", "main"], cwd=repo)
    commit_all(repo, message="config")
    result = run_cli("selector", "--help")
    assert result.exit_code == 0 and "--revision" in result.stdout
    monkeypatch.setenv("FRACCTL_GIT_REPO", str(repo))
    monkeypatch.setenv("FRACCTL_GIT_PATH", "gpu")
    result = run_cli("selector")
    assert (result.exit_code, result.stdout) == (0, '{"gpu": "b200"}\n'), result.stderr
    result = run_cli("selector", "--revision", "nope")
    assert result.exit_code != 0 and "nope" in result.stderr


def test_an_extension_backend_is_refused_for_an_object_not_taken_for_apply(
    stamped: None, tmp_path: Path
) -> None:
    """A backend that recreates only the config is a usage error with KIND/NAME (it used
    to become a server-side apply, silently), before anything is read or changed."""
    path = tmp_path / "gpu.yaml"
    path.write_text("recreate:\n  backend: stamped\n")
    r = run_cli("-c", str(path), "recreate", "StatefulSet/db", "-n", "shop", "--dry-run")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "backend 'stamped' recreates the fractioning config only" in r.stderr, r.output
    assert "takes apply, argocd, flux, helm; nothing changed" in r.stderr, r.output
