"""The recreate's rehearsal against the REAL Argo CD v3.2.11: refuse before any change.

Each case is an ordinary Argo CD (or operator) state in which the sync after the delete
would fail or bring back the wrong object. ``recreate --yes`` must refuse while the live
object is untouched (same uid, no deletionTimestamp), and ``--dry-run`` must fail the
same way. The positive controls show the rehearsal lets a good recreate through.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.git import git
from fracctl.core.kube.resources import DEPLOYMENTS, LEASES
from fracctl.errors import ExitCode
from fracctl.sandbox import argocd_local
from tests.support.argocd_real import RealArgoCD, configure, unchanged
from tests.support.config_files import edit_config
from tests.support.helpers import commit_all, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident

pytestmark = pytest.mark.e2e

DENY_ALL = [
    {
        "kind": "deny",
        "schedule": "* * * * *",
        "duration": "24h",
        "applications": ["*"],
        "manualSync": False,
    }
]


def uid_of(incident: Incident) -> str:
    live = incident.cluster.live_target()
    assert live is not None
    return str(live["metadata"]["uid"])


def refuses(config: str, *, needle: str, code: int = ExitCode.FINDING) -> str:
    """``recreate --dry-run`` and ``recreate --yes`` both refuse, naming ``needle``."""
    dry = run_cli("-c", config, "recreate", "--dry-run", "--backend", "argocd")
    real = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
    for r in (dry, real):
        print(r.stderr)  # what the user reads; shown with -s or on failure
        assert r.exit_code == code, r.output
        assert needle in r.stderr, r.stderr
        assert "nothing was deleted or changed" in r.stderr, r.stderr
    return real.stderr


def test_a_deny_sync_window_refuses_before_the_delete(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    uid = uid_of(real_incident)
    app = "rehearse-window"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    with real_argocd.app(app, repo=real_incident.root / "gitops"), real_incident.operator():
        with real_argocd.project_spec(syncWindows=DENY_ALL):
            with real_argocd.client() as c:
                windows = c.sync_windows(app)
            said = refuses(config, needle="a sync window blocks a manual sync")
        assert windows["canSync"] is False, windows
        assert "deny * * * * * for 24h (manualSync false)" in said
        unchanged(real_incident, uid)
        # The window gone, the same recreate goes through.
        r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
    assert r.exit_code == ExitCode.OK, r.output
    assert real_incident.cluster.live_target()["spec"]["nodeSelector"] == NEW  # type: ignore[index]


def test_an_operator_that_stopped_leading_refuses_before_the_delete(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """The operator ran (it put its finalizer on the object) and stopped: its Lease ages."""
    cluster = real_incident.cluster
    app = "rehearse-operator"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    k = cluster.config.cluster
    with real_argocd.app(app, repo=real_incident.root / "gitops"):
        with real_incident.operator(lease_duration=2):
            deadline = time.monotonic() + 30
            while True:  # the simulation took the Lease over (the fixture's lasts an hour)
                lease = cluster.kube.get_or_none(LEASES, k.operator_lease, k.agent_namespace)
                if ((lease or {}).get("spec") or {}).get("leaseDurationSeconds") == 2:
                    break
                assert time.monotonic() < deadline, "the simulation never took its Lease"
                time.sleep(0.1)
        time.sleep(2.5)  # longer than the Lease's duration: no replica leads
        uid = uid_of(real_incident)
        said = refuses(config, needle="no replica leads")
        unchanged(real_incident, uid)
        # The Deployment still says available: its status alone would have let it through.
        assert "has 1 available replica(s)" not in said or "no replica leads" in said
        assert cluster.config.target.finalizer in said
        with real_incident.operator():
            r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
    assert r.exit_code == ExitCode.OK, r.output


def test_an_operator_that_never_ran_refuses_before_the_delete(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """The finalizer is on the object, and no Deployment or Lease of the operator exists."""
    k = real_incident.cluster.config.cluster
    for ref, name in ((LEASES, k.operator_lease), (DEPLOYMENTS, k.operator_deployment)):
        real_incident.cluster.kube.delete(ref, name, k.agent_namespace)
    uid = uid_of(real_incident)
    app = "rehearse-no-operator"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    with real_argocd.app(app, repo=real_incident.root / "gitops"):
        refuses(config, needle=f"Deployment {k.agent_namespace}/{k.operator_deployment} does not")
    unchanged(real_incident, uid)


def test_argocd_rendering_another_selector_refuses_naming_both(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """The application tracks a branch where the selector is still the old one."""
    gitops = real_incident.root / "gitops"
    head = git(["rev-parse", "HEAD"], cwd=gitops).stdout.strip()
    git(["checkout", "-q", "-b", "release"], cwd=gitops)
    manifest = gitops / "gpu-fractioning" / "gpufractioningconfig.yaml"
    text = manifest.read_text()
    for (k_new, v_new), (k_old, v_old) in zip(NEW.items(), OLD.items(), strict=True):
        text = text.replace(f"{k_new}: {v_new}", f"{k_old}: {v_old}")
    manifest.write_text(text)
    stale = commit_all(gitops, message="release branch still selects the old class")
    git(["checkout", "-q", head], cwd=gitops)
    uid = uid_of(real_incident)
    app = "rehearse-rendering"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    with real_argocd.app(app, repo=gitops, target_revision="release"), real_incident.operator():
        said = refuses(config, needle="Argo CD would create GpuFractioningConfig/default")
    assert str(OLD) in said and str(NEW) in said, said
    assert f"release ({stale[:12]})" in said, said
    unchanged(real_incident, uid)


def test_a_project_that_does_not_permit_the_kind_refuses(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """Argo CD fails the sync in its controller; its dry run of the same sync shows it."""
    uid = uid_of(real_incident)
    app = "rehearse-project"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    whitelist = [{"group": "", "kind": "Namespace"}]
    with real_argocd.project_spec(clusterResourceWhitelist=whitelist):
        with real_argocd.app(app, repo=real_incident.root / "gitops"), real_incident.operator():
            said = refuses(config, needle="not permitted in project")
    assert "dry run of the sync" in said, said
    unchanged(real_incident, uid)


def test_an_application_whose_source_does_not_render_refuses(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    uid = uid_of(real_incident)
    app = "rehearse-no-path"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    with real_argocd.app(
        app, repo=real_incident.root / "gitops", path="no-such-folder", compared=False
    ):
        r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
    print(r.stderr)
    assert r.exit_code != ExitCode.OK, r.output
    assert "nothing was deleted or changed" in r.stderr, r.stderr
    unchanged(real_incident, uid)


def test_an_application_being_deleted_refuses(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    uid = uid_of(real_incident)
    app = "rehearse-deleting"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    kube, ns = real_argocd.kube, argocd_local.NAMESPACE
    with real_argocd.app(app, repo=real_incident.root / "gitops"), real_incident.operator():
        hold = {"metadata": {"finalizers": ["fracctl.test/hold"]}}
        kube.patch(argocd_local.APPLICATIONS, app, hold, namespace=ns)
        kube.delete(argocd_local.APPLICATIONS, app, ns)
        try:
            refuses(config, needle=f"Argo CD application {app} is being deleted")
        finally:
            release = {"metadata": {"finalizers": None}}
            kube.patch(argocd_local.APPLICATIONS, app, release, namespace=ns)
    unchanged(real_incident, uid)


def test_recreate_with_self_heal_converges(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """Positive control: automated sync with selfHeal, its own sync retrying.

    Argo CD's automated sync of the new selector fails on the immutable field and
    retries (v3 retries automated syncs), so an operation runs almost all the time. The
    rehearsal recognises it as that sync, failing on exactly this object's selector; the
    plan says fracctl stops it; the run stops it right before the delete, dry-runs its
    own sync and converges, racing Argo CD's self-heal for the missing object, with no
    step by hand.
    """
    app = "rehearse-self-heal"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    automated: dict[str, Any] = {"selfHeal": True}
    with real_argocd.app(app, repo=real_incident.root / "gitops", automated=automated):
        with real_argocd.client() as c, real_incident.operator():
            deadline = time.monotonic() + 60
            while not c.get_application(app).get("operation"):
                assert time.monotonic() < deadline, "Argo CD never started its automated sync"
                time.sleep(0.2)
            uid = uid_of(real_incident)
            dry = run_cli(
                "-c", config, "recreate", "--dry-run", "--backend", "argocd", "-o", "json"
            )
            print(dry.stderr)
            assert dry.exit_code == ExitCode.OK, dry.output
            said = "\n".join(dry.json["proofs"])
            assert "Argo CD's automated sync" in said and "fracctl terminates that" in said, said
            unchanged(real_incident, uid)
            r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd", "-o", "json")
            print(r.stderr)
            state = (c.get_application(app).get("status") or {}).get("operationState") or {}
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "recreated"
    assert "terminated Argo CD's automated sync" in r.stderr, r.stderr
    assert "dry run of this sync succeeded" in r.stderr, r.stderr
    live = real_incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    assert live["metadata"]["uid"] != uid
    # The last operation is a real sync (fracctl's or self-heal's), not the dry run.
    assert not ((state.get("operation") or {}).get("sync") or {}).get("dryRun"), state


def test_a_dry_run_that_does_not_finish_is_terminated(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """fracctl gives up on its dry-run sync (timeouts.sync): it stops what it started."""
    uid = uid_of(real_incident)
    app = "rehearse-dry-run-timeout"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    edit_config(Path(config), timeouts={"sync": "1ms"})
    with real_argocd.app(app, repo=real_incident.root / "gitops"), real_incident.operator():
        r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
        print(r.stderr)
        assert r.exit_code == ExitCode.FINDING, r.output
        assert "fracctl terminated the dry run it started" in r.stderr or (
            "it had ended when fracctl went to terminate it" in r.stderr
        ), r.stderr
        assert "nothing was deleted or changed" in r.stderr
        real_argocd.wait_idle(app)  # no operation left behind to refuse the next sync
        with real_argocd.client() as c:
            assert not c.get_application(app).get("operation")
    unchanged(real_incident, uid)


def test_a_deny_window_that_opens_before_the_run_ends_refuses(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """Not active now (a manual sync may run), but it opens within delete + sync."""
    from datetime import datetime, timedelta, timezone

    uid = uid_of(real_incident)
    app = "rehearse-window-soon"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    edit_config(Path(config), timeouts={"sync": "10m"})
    soon = datetime.now(timezone.utc) + timedelta(minutes=3)
    window = {"kind": "deny", "schedule": f"{soon.minute} {soon.hour} * * *",
              "duration": "1h", "applications": ["*"], "manualSync": False}  # fmt: skip
    with real_argocd.app(app, repo=real_incident.root / "gitops"), real_incident.operator():
        with real_argocd.project_spec(syncWindows=[window]):
            with real_argocd.client() as c:
                windows = c.sync_windows(app)
            assert windows["canSync"] is True, windows  # not active yet
            said = refuses(config, needle="a deny sync window of Argo CD application")
    assert f"{soon.minute} {soon.hour} * * * for 1h, manualSync false) opens at" in said
    unchanged(real_incident, uid)


def test_the_rehearsal_leaves_no_history_and_changes_no_resource(
    real_incident: Incident, real_argocd: RealArgoCD, tmp_path: Path
) -> None:
    """What Argo CD's dry run changes on the Application: operationState only."""
    uid = uid_of(real_incident)
    app = "rehearse-footprint"
    config = configure(real_incident, real_argocd, app, real_argocd.token())
    with real_argocd.app(app, repo=real_incident.root / "gitops"), real_incident.operator():
        with real_argocd.client("admin") as c:
            before = c.get_application(app)
        r = run_cli("-c", config, "recreate", "--dry-run", "--backend", "argocd")
        with real_argocd.client("admin") as c:
            after = c.get_application(app)
    assert r.exit_code == ExitCode.OK, r.output
    assert (after["status"].get("history") or []) == (before["status"].get("history") or [])
    assert after["status"]["sync"]["status"] == before["status"]["sync"]["status"]
    state = after["status"]["operationState"]
    assert state["operation"]["sync"]["dryRun"] is True, state
    unchanged(real_incident, uid)
