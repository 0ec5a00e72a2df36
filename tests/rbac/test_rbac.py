"""`fracctl rbac print`: the roles of fracctl.core.rbac, shaped by the configuration."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from fracctl.config import Config
from fracctl.core import rbac
from fracctl.errors import ExitCode
from fracctl.flows.rbac import params
from tests.support.helpers import run_cli


def test_yaml_output_is_the_roles_and_parses() -> None:
    for role in rbac.ROLES:
        r = run_cli("rbac", "print", "--role", role)
        assert r.exit_code == ExitCode.OK, r.output
        docs = [d for d in YAML(typ="safe").load_all(r.stdout) if d]
        assert docs == [x.to_dict() for x in rbac.roles(role, params(Config()))]
        j = run_cli("rbac", "print", "--role", role, "-o", "json")
        assert j.json == docs


def test_every_rule_says_why() -> None:
    for role in rbac.ROLES:
        for r in rbac.roles(role, params(Config())):
            assert all(rule.why for rule in r.rules)
            assert r.name == f"fracctl-{role}"


def test_the_configuration_names_the_lock_the_target_and_flux(tmp_path: Path) -> None:
    config = tmp_path / "fracctl.yaml"
    config.write_text(
        "recreate:\n  lock_namespace: ops\n  lock_name: gfc-lock\n"
        "flux:\n  namespace: gitops\n  kustomization: gpus\n"
        "target:\n  naming: gpu-sharing\n"
    )
    r = run_cli("-c", str(config), "rbac", "print", "--role", "recreate", "--backend", "flux",
                "-o", "json")  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    by_ns = {d["metadata"].get("namespace", ""): d for d in r.json}
    assert set(by_ns) == {"", "ops", "default", "gitops", "gpu-fractioning", "flux-system"}
    operator = by_ns["gpu-fractioning"]["rules"]
    assert [(r["resources"], r.get("resourceNames"), r["verbs"]) for r in operator] == [
        (["deployments"], ["gpu-fractioning"], ["get"]),
        (["daemonsets"], ["gpu-fractioning-mpsd", "gpu-fractioning-fractiond"], ["get"]),
        (["daemonsets"], None, ["list", "watch"]),  # the rollout's wait
        (["leases"], ["gpu-fractioning.kai.scheduler"], ["get"]),
    ]
    cluster = by_ns[""]["rules"]
    assert cluster[0]["apiGroups"] == ["gpu-sharing.kai.scheduler"]
    assert {"resources": ["namespaces"], "resourceNames": ["ops"]}.items() <= {
        k: v for rule in cluster if rule["resources"] == ["namespaces"] for k, v in rule.items()
    }.items()
    named = {x["resources"][0]: x["resourceNames"] for x in by_ns["ops"]["rules"]
             if x.get("resourceNames")}  # fmt: skip
    assert named == {"leases": ["gfc-lock"], "configmaps": ["gfc-lock-drain"]}
    flux, sources = by_ns["gitops"]["rules"]
    assert flux == {
        "apiGroups": [rbac.FLUX_GROUP],
        "resources": ["kustomizations"],
        "resourceNames": ["gpus"],
        "verbs": ["get", "patch"],
    }
    assert sources["verbs"] == ["get"] and "resourceNames" not in sources
    assert set(sources["apiGroups"]) == {rbac.FLUX_GROUP, rbac.FLUX_SOURCE_GROUP}
    assert "gitrepositories" in sources["resources"]
    # Other backends need nothing of Flux.
    plain = run_cli("-c", str(config), "rbac", "print", "--role", "recreate", "-o", "json")
    assert "gitops" not in {d["metadata"].get("namespace", "") for d in plain.json}


def test_a_bad_role_is_a_usage_error() -> None:
    r = run_cli("rbac", "print", "--role", "admin")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert (
        "must be one of drift, preflight, doctor, recreate, recreate-objects, gate-pre-sync, "
        "gate-post-sync, fleet-status, node-agent; "
        "got 'admin'"
    ) in r.stderr
    missing = run_cli("rbac", "print")
    assert missing.exit_code == ExitCode.USAGE, missing.output
