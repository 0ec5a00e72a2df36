"""The flux backend against the REAL Flux: source-controller v1.9.0 and kustomize-controller
v1.9.6 (built from their Go modules), reading the incident's repository over http.

The setup of every test: the live object selects the old GPU class and carries the
operator's finalizer; git (branch ``main``) selects the opt-in label; a GitRepository
and a Kustomization read that repository, and Flux has tried to apply git's commit once
(it fails: the selector is immutable). The rows of runbooks/flux-behaviour.md come from
these tests (``FRACCTL_FLUX_RECORD=/path/records.json pytest tests/flux/test_flux_e2e.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.flux import Flux, FluxReconcileFailed
from fracctl.adapters.git import git
from fracctl.errors import ExitCode
from tests.support.flux_real import RealFlux, ready
from tests.support.git_reads import count_git_reads
from tests.support.helpers import commit_all, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident

pytestmark = pytest.mark.e2e

IMMUTABLE = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"


def live_of(incident: Incident) -> dict[str, Any]:
    live = incident.cluster.live_target()
    assert live is not None, "the live object is gone"
    return live


def untouched(incident: Incident, uid: str) -> None:
    live = live_of(incident)
    assert live["metadata"]["uid"] == uid
    assert not live["metadata"].get("deletionTimestamp")
    assert live["spec"]["nodeSelector"] == OLD


def recreate(config: str, *extra: str) -> Any:
    return run_cli("-c", config, "recreate", "--backend", "flux", *extra)


def lagging_branch(incident: Incident, name: str = "flux") -> str:
    """A branch whose commit still selects the old class (a source Flux has not moved)."""
    repo = incident.root / "gitops"
    git(["branch", name], cwd=repo)
    git(["checkout", "-q", name], cwd=repo)
    path = repo / "gpu-fractioning" / "gpufractioningconfig.yaml"
    text = path.read_text().replace(
        "example.org/gpu-fractions: enabled", "example.org/gpu-class: rtx-pro-6000"
    )
    path.write_text(text)
    commit = commit_all(repo, message="the old class")
    git(["checkout", "-q", "main"], cwd=repo)
    return commit


# --- what Flux does on its own ---------------------------------------------------------------


def test_flux_alone_keeps_the_old_object_and_says_why(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    uid = live_of(real_incident)["metadata"]["uid"]
    with real_flux.serving(real_incident) as served:
        ks = served.kustomization()
        real_flux.record(
            "Flux reconciles git's commit (default options)", served, live_of(real_incident)
        )
    cond = ready(ks)
    assert (cond["status"], cond["reason"]) == ("False", "ReconciliationFailed")
    assert cond["message"].startswith("GpuFractioningConfig/default dry-run failed (Invalid): ")
    assert IMMUTABLE in cond["message"]
    assert ready(ks, "Reconciling")["status"] == "True"
    status = ks["status"]
    assert status["lastAttemptedRevision"] == f"main@sha1:{served.head()}"
    assert not status.get("lastAppliedRevision")  # never applied: the object is not Flux's
    untouched(real_incident, uid)


def test_force_deletes_and_recreates_without_any_guard(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    uid = live_of(real_incident)["metadata"]["uid"]
    with real_incident.operator(), real_flux.serving(real_incident) as served:
        served.patch({"force": True})
        applied = f"main@sha1:{served.head()}"
        # Ready and the applied revision, as one status (a Ready read alone can be the
        # condition of a moment before the revision was written).
        ks = served.wait(
            served.kustomization,
            lambda o: (
                ready(o).get("status") == "True"
                and (o.get("status") or {}).get("lastAppliedRevision") == applied
            ),
            "Flux applied with force",
            60,
        )
        live = live_of(real_incident)
        real_flux.record("spec.force: true", served, live)
    assert live["metadata"]["uid"] != uid, "force recreated the object"
    assert live["spec"]["nodeSelector"] == NEW
    assert ks["status"]["lastAppliedRevision"] == f"main@sha1:{served.head()}"


def test_force_is_refused_by_the_guard_policy(real_guarded: Incident, real_flux: RealFlux) -> None:
    incident = real_guarded
    uid = live_of(incident)["metadata"]["uid"]
    with incident.operator(), real_flux.serving(incident) as served:
        served.patch({"force": True})
        ks = served.wait(
            served.kustomization,
            lambda o: "fracctl" in str(ready(o).get("message") or ""),
            "Flux's forced delete was refused",
            60,
        )
        real_flux.record("spec.force: true, guard policy installed", served, live_of(incident))
    cond = ready(ks)
    assert cond["status"] == "False", cond
    assert "fracctl recreate" in cond["message"]
    untouched(incident, uid)


# --- fracctl recreate --backend flux -----------------------------------------------------------


def test_recreate_through_flux_converges_and_a_rerun_does_nothing(
    real_incident: Incident, real_flux: RealFlux, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = live_of(real_incident)["metadata"]["uid"]
    with real_incident.operator(), real_flux.serving(real_incident) as served:
        config = served.configure(real_incident)
        reads = count_git_reads(monkeypatch)
        r = recreate(config, "--yes", "-o", "json")
        assert r.exit_code == ExitCode.OK, r.output
        # git's rendering and Flux's source commit are one commit: read once
        assert len(reads.exports) == 1 and len(reads.renders) == 1, reads
        head = served.head()
        assert r.json["outcome"] == "recreated"
        assert f"Flux applied revision main@sha1:{head}" in r.json["notes"]
        proofs = "\n".join(r.json["proofs"])
        assert f"Flux's source commit {head[:12]} renders GpuFractioningConfig/default" in proofs
        live = live_of(real_incident)
        real_flux.record("fracctl recreate --backend flux", served, live)
        ks = served.kustomization()
        again = recreate(config, "--yes")
    assert live["metadata"]["uid"] != uid and live["spec"]["nodeSelector"] == NEW
    assert ready(ks)["status"] == "True"
    assert ks["status"]["lastAppliedRevision"] == f"main@sha1:{head}"
    assert ks["status"]["lastHandledReconcileAt"]
    assert again.exit_code == ExitCode.OK, again.output
    assert "nothing-to-do" in again.stdout


def test_a_kustomization_suspended_after_the_delete_is_resumed_and_the_rerun_converges(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    from fracctl import config as cfg
    from fracctl.flows.context import Context
    from fracctl.flows.recreate import recreate as run

    # No retry of its own: only fracctl's request would make Flux apply.
    with real_incident.operator(), real_flux.serving(real_incident, retryInterval="10m") as served:
        config = served.configure(real_incident)

        def suspend(step: str) -> None:
            if step == "deleted":
                served.patch({"suspend": True})

        ctx = Context(
            config=cfg.load(config, env={}), kube_factory=lambda: real_incident.cluster.kube
        )
        with pytest.raises(Exception) as failed:
            run(ctx, yes=True, boundary=suspend)
        message = str(failed.value)
        assert "is suspended" in message
        assert real_incident.cluster.live_target() is None, "Flux created nothing while suspended"
        served.patch({"suspend": False})
        r = recreate(config, "--yes")
        assert r.exit_code == ExitCode.OK, r.output
    assert live_of(real_incident)["spec"]["nodeSelector"] == NEW


# --- the rehearsal refuses before any change ---------------------------------------------------


def refused(incident: Incident, config: str, needle: str) -> None:
    uid = live_of(incident)["metadata"]["uid"]
    for r in (recreate(config, "--dry-run"), recreate(config, "--yes")):
        assert r.exit_code == ExitCode.FINDING, r.output
        assert needle in r.stderr, r.stderr
        assert "nothing was deleted or changed" in r.stderr
    untouched(incident, uid)


def test_a_suspended_kustomization_is_refused(real_incident: Incident, real_flux: RealFlux) -> None:
    with (
        real_incident.operator(),
        real_flux.serving(real_incident, suspend=True, settle=False) as served,
    ):
        refused(
            real_incident, served.configure(real_incident), "is suspended: it would not reconcile"
        )


def test_a_source_that_cannot_fetch_is_refused(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    with real_incident.operator(), real_flux.serving(real_incident) as served:
        served.patch_source({"url": real_flux.local.git_url("no-such-repository")})
        source = served.reconcile_source()
        cond = ready(source)
        assert cond["status"] == "False", cond
        said = {k: cond.get(k) for k in ("status", "reason", "message")}
        real_flux.record(
            "the GitRepository cannot fetch", served, live_of(real_incident), source=said
        )
        refused(
            real_incident, served.configure(real_incident), f"is Ready=False: {cond['message']}"
        )


def test_a_source_behind_git_is_refused_with_both_selectors(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    commit = lagging_branch(real_incident)
    with real_incident.operator(), real_flux.serving(real_incident, branch="flux") as served:
        needle = (
            f"Flux would create GpuFractioningConfig/default with spec.nodeSelector {OLD} (its "
            f"source is at flux@sha1:{commit}, path gpu-fractioning), but git has {NEW} at HEAD"
        )
        refused(real_incident, served.configure(real_incident), needle)


def test_patches_fracctl_cannot_rehearse_are_refused(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    patch = {
        "target": {"kind": "GpuFractioningConfig"},
        "patch": '[{"op": "add", "path": "/spec/nodeSelector/extra", "value": "x"}]',
    }
    with real_incident.operator(), real_flux.serving(real_incident, patches=[patch]) as served:
        refused(
            real_incident,
            served.configure(real_incident),
            "changes what it applies with spec.patches",
        )


def test_a_dependency_that_is_not_ready_is_refused(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    with (
        real_incident.operator(),
        real_flux.serving(
            real_incident, dependsOn=[{"name": "infrastructure"}], settle=False
        ) as served,
    ):
        needle = "depends on flux-system/infrastructure, which does not exist"
        refused(real_incident, served.configure(real_incident), needle)


def test_an_identity_that_may_not_patch_the_kustomization_is_refused(
    real_incident: Incident, real_flux: RealFlux, control_plane: Any
) -> None:
    """Every right of the flux recreate role but ``patch`` on Kustomizations: refused,
    exit 3, before any change."""
    from fracctl import config as cfg
    from fracctl.flows import rbac
    from fracctl.flows.context import Context
    from fracctl.sandbox.controlplane import VIEWER_USER
    from tests.support.helpers import granted

    with real_incident.operator(), real_flux.serving(real_incident) as served:
        config = served.configure(real_incident)
        ctx = Context(
            config=cfg.load(config, env={}), kube_factory=lambda: real_incident.cluster.kube
        )
        rules = []
        for role in rbac.roles(ctx, role="recreate", backend="flux")[0]:
            for r in role.rules:
                verbs = [
                    v for v in r.verbs if not (v == "patch" and "kustomizations" in r.resources)
                ]
                rule = {**r.to_dict(), "verbs": verbs}
                rule.pop("resourceNames", None)
                rules.append(rule)
        uid = live_of(real_incident)["metadata"]["uid"]
        real_incident.cluster.namespace("fracctl-test")  # the lock's: the role only reads it
        viewer = str(Path(control_plane.state_dir) / "viewer.kubeconfig")
        with granted(real_incident.cluster.kube, VIEWER_USER, rules, "flux-no-patch"):
            r = run_cli("-c", config, "--kubeconfig", viewer, "recreate", "--yes")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "may not patch kustomizations.kustomize.toolkit.fluxcd.io" in r.stderr
    assert "nothing was deleted or changed" in r.stderr
    untouched(real_incident, uid)


# --- the adapter: the reconcile request and how completion is detected ---------------------


def test_the_request_is_handled_and_a_failure_is_reported_with_flux_words(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    from datetime import datetime, timezone

    with real_flux.serving(real_incident) as served:
        flux = Flux(real_incident.cluster.kube, served.namespace, served.name)
        token = flux.request_reconcile(datetime.now(timezone.utc).isoformat())
        with pytest.raises(FluxReconcileFailed) as e:
            flux.wait_ready(token, timeout=60)
        status = served.kustomization()["status"]
    assert status["lastHandledReconcileAt"] == token
    assert "ReconciliationFailed" in str(e.value) and IMMUTABLE in str(e.value)
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert e.value.status["lastHandledReconcileAt"] == token


def test_a_handled_request_with_another_revision_is_not_success(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    from datetime import datetime, timezone

    real_incident.cluster.wipe_target()
    with real_flux.serving(real_incident) as served:
        flux = Flux(real_incident.cluster.kube, served.namespace, served.name)
        token = flux.request_reconcile(datetime.now(timezone.utc).isoformat())
        status = flux.wait_ready(token, timeout=60, revision=served.head())
        assert status["lastAppliedRevision"] == f"main@sha1:{served.head()}"
        token = flux.request_reconcile(datetime.now(timezone.utc).isoformat())
        with pytest.raises(FluxReconcileFailed, match="applied revision main@sha1:.*, not 0123456"):
            flux.wait_ready(token, timeout=60, revision="0123456789")


def test_a_new_commit_is_applied_on_the_next_request_once_the_source_has_it(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    from datetime import datetime, timezone

    real_incident.cluster.wipe_target()
    with real_flux.serving(real_incident) as served:
        flux = Flux(real_incident.cluster.kube, served.namespace, served.name)
        real_incident.cluster.wipe_target()
        path = served.repo / "gpu-fractioning" / "gpufractioningconfig.yaml"
        path.write_text(path.read_text().replace("gpu-fractions: enabled", "gpu-fractions: v2"))
        commit = commit_all(served.repo, message="v2")
        served.reconcile_source(commit=commit)
        token = flux.request_reconcile(datetime.now(timezone.utc).isoformat())
        status = flux.wait_ready(token, timeout=60, revision=commit)
    assert status["lastAppliedRevision"] == f"main@sha1:{commit}"
    assert live_of(real_incident)["spec"]["nodeSelector"] == {"example.org/gpu-fractions": "v2"}


def test_the_adapter_refuses_a_suspended_or_missing_kustomization(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    from fracctl.errors import NotFound, Refused

    with real_flux.serving(real_incident, suspend=True, settle=False) as served:
        flux = Flux(real_incident.cluster.kube, served.namespace, served.name)
        with pytest.raises(Refused, match="suspended") as e:
            flux.request_reconcile("2026-12-01T00:00:00Z")
        assert "flux resume kustomization" in str(e.value)
        assert e.value.exit_code == ExitCode.FINDING
        with pytest.raises(NotFound) as missing:
            Flux(real_incident.cluster.kube, served.namespace, "no-such-kustomization").get()
        assert "flux.kustomization" in str(missing.value)
        assert "kustomization=flux-system/" in repr(flux)


def test_the_stand_in_is_not_used_here() -> None:
    text = Path(__file__).read_text()
    assert "flux_" + "standin" not in text


# --- drift against what Flux would apply -------------------------------------------------------


def test_drift_against_flux_judges_what_its_source_holds(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    commit = lagging_branch(real_incident)
    with real_incident.operator(), real_flux.serving(real_incident, branch="flux") as served:
        config = served.configure(real_incident)
        git = run_cli("-c", config, "drift", "-o", "json")
        flux = run_cli("-c", config, "drift", "--flux", "-o", "json")
    assert git.exit_code == 1 and git.json["objects"][0]["verdict"] == "needs-recreate"
    # Flux's source still holds the old class: Flux would change nothing, git would.
    assert flux.exit_code == ExitCode.OK, flux.output
    assert flux.json["objects"][0]["verdict"] == "in-sync"
    source = flux.json["source"]
    assert source["flux_revision"] == f"flux@sha1:{commit}"
    assert source["flux_kustomization"] == f"flux-system/{served.name}"
    assert source["commit"] == commit


def test_drift_against_flux_refuses_what_it_cannot_use(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    with real_flux.serving(real_incident) as served:
        config = served.configure(real_incident)
        both = run_cli("-c", config, "drift", "--flux", "--revision", "HEAD")
        unset = run_cli("-c", str(real_incident.config_file), "drift", "--flux")
        needs = run_cli("-c", config, "drift", "--flux", "-o", "json")
    assert both.exit_code == ExitCode.USAGE and "drop --repo/--revision/--path" in both.stderr
    # The defaults name flux-system/gpu-fractioning, which this cluster does not have.
    assert unset.exit_code == ExitCode.EXTERNAL, unset.output
    assert "check flux.namespace and flux.kustomization" in unset.stderr
    assert needs.exit_code == 1 and needs.json["objects"][0]["verdict"] == "needs-recreate"
    assert needs.json["source"]["flux_ready"] == "False (ReconciliationFailed)"


def test_sandbox_up_flux_recreates_through_flux(tmp_path: Path) -> None:
    """``sandbox up --flux``: its own control plane and Flux; env, recreate, down."""
    from tests.support.flux_real import require_built

    require_built()
    state = str(tmp_path / "sandbox")
    up = run_cli("sandbox", "up", "--flux", "--state-dir", state)
    try:
        assert up.exit_code == ExitCode.OK, up.output
        assert "Kustomization flux-system/gpu-fractioning" in up.stdout
        env = run_cli("sandbox", "env", "--state-dir", state)
        config = dict(
            line.removeprefix("export ").split("=", 1) for line in env.stdout.splitlines()
        )["FRACCTL_CONFIG"]
        assert "backend: flux" in Path(config).read_text()
        assert run_cli("-c", config, "nodes", "label", "b200-0").exit_code == ExitCode.OK
        r = run_cli("-c", config, "recreate", "--yes", "-o", "json")
        assert r.exit_code == ExitCode.OK, r.output
        assert r.json["outcome"] == "recreated"
        assert any(n.startswith("Flux applied revision main@sha1:") for n in r.json["notes"])
        d = run_cli("-c", config, "drift", "--flux")
        assert d.exit_code == ExitCode.OK, d.output
    finally:
        st = run_cli("sandbox", "status", "-o", "json", "--state-dir", state)
        pids = ((st.json if st.stdout.strip() else {}).get("flux") or {}).get("pids") or {}
        down = run_cli("sandbox", "down", "--state-dir", state)
    assert down.exit_code == ExitCode.OK, down.output
    assert set(pids) == {
        "git-server",
        "source-controller",
        "kustomize-controller",
        "helm-controller",
    }
    from fracctl.sandbox.controlplane import alive

    assert not [name for name, pid in pids.items() if alive(pid)]
