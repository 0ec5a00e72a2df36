"""Git's object is validated by the API server before any verdict.

A GpuFractioningConfig without ``spec.nodeSelector`` is refused by the API server
(``Required value``). A comparison ignores what git leaves out, and a server-side apply
merges into the live object and keeps it, so both called it "in sync". Now a dry-run
create validates the desired object as a whole object first: ``rejected`` (exit 1) in
drift, target and --all, and recreate refuses with nothing changed.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.core import drift as d
from fracctl.errors import ExitCode, Forbidden
from fracctl.flows import drift as flow
from fracctl.flows.context import Context
from tests.support.helpers import Cluster, commit_all, granted, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident, make_incident

REQUIRED = "spec.nodeSelector: Required value"
CEL = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
GROUP = "gpu-fractioning.kai.scheduler"


def git_wants(incident: Incident, spec: str) -> None:
    """Replace the GpuFractioningConfig's spec in git (YAML text under ``spec:``)."""
    f = incident.root / "gitops" / "gpu-fractioning" / "gpufractioningconfig.yaml"
    f.write_text(
        f"apiVersion: {GROUP}/v1alpha1\nkind: GpuFractioningConfig\n"
        f"metadata:\n  name: default\nspec:\n{spec}"
    )
    commit_all(incident.root / "gitops", message="change the spec")


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    """The live object selects the RTX class; git's object has no nodeSelector."""
    inc = make_incident(cluster, tmp_path)
    git_wants(inc, "  runtimeClassName: nvidia\n")
    return inc


def drift(incident: Incident, *args: str) -> Any:
    return run_cli("-c", str(incident.config_file), "drift", *args)


# --- a desired object the API server refuses -------------------------------------------


def test_drift_says_rejected_not_in_sync(incident: Incident) -> None:
    r = drift(incident)
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "rejected" in r.stdout
    assert "in-sync" not in r.stdout
    assert REQUIRED in r.stdout
    assert "Next: fix the manifest in git" in r.stdout
    assert "1 object: 1 rejected" in r.stdout


def test_drift_all_and_json_say_rejected_with_the_api_servers_causes(incident: Incident) -> None:
    for args in (("-o", "json"), ("--all", "-o", "json")):
        r = drift(incident, *args)
        assert r.exit_code == ExitCode.FINDING, (args, r.output)
        (o,) = r.json["objects"]
        assert o["verdict"] == "rejected", o
        assert {"field": "spec.nodeSelector", "message": "Required value"}.items() <= o["causes"][
            0
        ].items()
        assert r.json["drifted"] is True


def test_recreate_yes_refuses_a_rejected_desired_object_and_changes_nothing(
    incident: Incident,
) -> None:
    before = incident.cluster.live_target()
    assert before is not None
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "rejects" in r.stderr and REQUIRED in r.stderr
    assert "nothing-to-do" not in r.output and "nothing to do" not in r.output
    after = incident.cluster.live_target()
    assert after is not None and after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["spec"]["nodeSelector"] == OLD
    assert incident.cluster.kube.calls["DELETE gpufractioningconfigs"] == 0


def test_preflight_agrees_that_git_has_no_selector(incident: Incident) -> None:
    r = run_cli("-c", str(incident.config_file), "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output


def test_a_rejected_object_missing_from_the_cluster_is_rejected_not_missing_live(
    incident: Incident,
) -> None:
    incident.cluster.wipe_target()
    r = drift(incident, "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["objects"][0]["verdict"] == "rejected"
    r = run_cli("-c", str(incident.config_file), "recreate", "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert REQUIRED in r.stderr
    assert incident.cluster.live_target() is None


# --- selectors git changes by leaving something out -------------------------------------


@pytest.mark.parametrize("owner", ["create", "apply"])
def test_an_empty_selector_needs_recreate_with_one_row_and_no_nil(
    cluster: Cluster, owner: str
) -> None:
    """``{}`` is valid as a new object, but not as an update of the live selector.

    Who owns the live selector's keys decides what a server-side apply does with ``{}``:
    kept (another field manager: the apply "succeeds" without the change) or removed
    (fracctl's own apply: the API server answers with a cause whose field is ``<nil>``).
    """
    kube = cluster.kube
    t = cluster.config.target
    live = {"apiVersion": t.api_version, "kind": t.kind, "metadata": {"name": t.name}}
    if owner == "create":
        kube.create(t.ref, {**live, "spec": {"nodeSelector": OLD}})
    else:
        kube.apply(t.ref, {**live, "spec": {"nodeSelector": OLD}})
    ctx = Context(config=cfg.Config(), kube_factory=lambda: kube)
    o = flow.check_target(ctx, desired_objects=[{**live, "spec": {"nodeSelector": {}}}])
    assert o.verdict == d.NEEDS_RECREATE, o
    assert [(f.path, f.live, f.desired) for f in o.fields] == [("spec.nodeSelector", OLD, {})]
    from fracctl.core.drift.report import describe

    text = describe(o)
    assert "<nil> is" not in text and "<absent>" not in text, text


def test_a_key_dropped_from_the_selector_is_not_in_sync(cluster: Cluster) -> None:
    both = {**OLD, **NEW}
    cluster.target(both)
    t = cluster.config.target
    ctx = Context(config=cfg.Config(), kube_factory=lambda: cluster.kube)
    desired = {
        "apiVersion": t.api_version,
        "kind": t.kind,
        "metadata": {"name": t.name},
        "spec": {"nodeSelector": NEW},
    }
    o = flow.check_target(ctx, desired_objects=[desired])
    assert o.verdict == d.NEEDS_RECREATE, o
    assert [(f.path, f.live, f.desired) for f in o.fields] == [("spec.nodeSelector", both, NEW)]
    assert CEL in o.message


# --- the dry run needs its RBAC ---------------------------------------------------------


class AsNoCreateUser(Kube):
    user = "drift-no-create"

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = super()._headers(content_type, accept)
        headers["Impersonate-User"] = self.user
        return headers


def test_without_rights_to_validate_drift_fails_instead_of_saying_in_sync(
    cluster: Cluster,
) -> None:
    rules = [
        {
            "apiGroups": [GROUP],
            "resources": ["gpufractioningconfigs"],
            "verbs": ["get", "list", "patch"],
        }
    ]
    cluster.target(OLD)
    name = f"drift-no-create-{uuid.uuid4().hex[:6]}"
    with granted(cluster.kube, AsNoCreateUser.user, rules, name):
        user = AsNoCreateUser.connect(kubeconfig=cluster.kubeconfig)
        ctx = Context(config=cfg.Config(), kube_factory=lambda: user)
        t = ctx.config.target
        desired = {
            "apiVersion": t.api_version,
            "kind": t.kind,
            "metadata": {"name": t.name},
            "spec": {"runtimeClassName": "nvidia"},
        }
        with pytest.raises(Forbidden) as e:
            flow.check_target(ctx, desired_objects=[desired])
        assert "grant the create verb on gpufractioningconfigs" in str(e.value)
