"""The incident against the REAL Argo CD v3.2.11, end to end (no stand-in here).

Each case records what Argo CD reported (operation phase and message, per-resource
status and message, the app's sync and health) next to what the live object held; the
table in runbooks/argocd-behaviour.md is written from these records
(``FRACCTL_E2E_RECORD=/path/records.json pytest tests/argocd/test_argocd_e2e.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.argocd import ArgoCDStatus
from fracctl.errors import ExitCode, Forbidden
from fracctl.flows.drift import SYNCED_BUT_DIFFERS
from tests.support.argocd_real import TARGET, RealArgoCD, configure, require_built, unchanged
from tests.support.helpers import Cluster, commit_all, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident

pytestmark = pytest.mark.e2e

CEL = "nodeSelector is immutable; delete and recreate the GpuFractioningConfig to change it"
FRACTIONAL = {"gpu-fraction": "0.5"}


def fractional_pod(cluster: Cluster) -> dict[str, Any]:
    """A running fractional pod on the RTX node: its CUDA context dies with the daemon."""
    return cluster.pod("team-a", "trainer-0", annotations=FRACTIONAL, node="rtx-pro-6000-0")


def drift_app(config: str, app: str) -> Any:
    r = run_cli("-c", config, "drift", "--app", app, "-o", "json")
    assert r.exit_code in (ExitCode.OK, ExitCode.FINDING), r.output
    return r


# --- the selector change under each sync option --------------------------------------------

REJECTED = {
    "default": [],
    "server-side-apply": ["ServerSideApply=true"],
    "replace": ["Replace=true"],
    # Force is not an application-level option: it comes from the resource's annotation
    # or from the sync request's strategy (`argocd app sync --force`), see below.
    "app-force-replace": ["Force=true", "Replace=true"],
}
FORCE_ANNOTATION = {"argocd.argoproj.io/sync-options": "Force=true,Replace=true"}


@pytest.mark.parametrize("case", list(REJECTED))
def test_selector_change_is_refused_and_argocd_says_so(
    real_incident: Incident, real_argocd: RealArgoCD, case: str
) -> None:
    """The API server's 422 surfaces as SyncFailed; the live object keeps the old selector."""
    cluster = real_incident.cluster
    before = cluster.live_target()
    assert before is not None
    app_name = f"incident-{case}"
    config = configure(real_incident, real_argocd, app_name, real_argocd.token())
    with real_argocd.app(app_name, repo=real_incident.root / "gitops", sync_options=REJECTED[case]):
        state, app = real_argocd.sync(app_name)
        live = cluster.live_target()
        entry = real_argocd.record(case, state, app, live, sync_options=REJECTED[case])
        r = drift_app(config, app_name)

    assert state["phase"] == "Failed", entry
    (res,) = entry["resources"]
    assert res["status"] == "SyncFailed", entry
    assert CEL in res["message"], entry
    assert CEL in state["message"], entry
    assert entry["app"]["sync"] == "OutOfSync", entry
    assert live is not None
    assert live["metadata"]["uid"] == before["metadata"]["uid"]
    assert live["spec"]["nodeSelector"] == OLD
    # fracctl agrees with the live object, and Argo CD admitted OutOfSync: no lie to flag.
    assert r.exit_code == ExitCode.FINDING, r.output
    (obj,) = r.json["objects"]
    assert obj["verdict"] == "needs-recreate"
    assert r.json["warnings"] == []


@pytest.mark.parametrize("how", ["annotation", "sync-request"])
def test_force_replace_deletes_and_recreates_with_no_guard(
    real_incident: Incident, real_argocd: RealArgoCD, how: str
) -> None:
    """Force + Replace: delete + create while a fractional pod runs, and Succeeded.

    ``annotation``: ``argocd.argoproj.io/sync-options: Force=true,Replace=true`` on the
    object in git. ``sync-request``: what ``argocd app sync --force --replace`` sends
    (``strategy.apply.force`` and the ``Replace=true`` option).
    """
    cluster = real_incident.cluster
    before = cluster.live_target()
    assert before is not None
    gitops = real_incident.root / "gitops"
    if how == "annotation":
        manifest = gitops / "gpu-fractioning" / "gpufractioningconfig.yaml"
        text = manifest.read_text().replace(
            "  name: default\n",
            "  name: default\n  annotations:\n"
            + "".join(f"    {k}: {v}\n" for k, v in FORCE_ANNOTATION.items()),
        )
        manifest.write_text(text)
        commit_all(gitops, message="force-replace the config")
    pod = fractional_pod(cluster)
    app_name = f"incident-force-{how}"
    config = configure(real_incident, real_argocd, app_name, real_argocd.token())
    with real_argocd.app(app_name, repo=gitops):
        # The operator releases its finalizer on delete, as the real one does.
        with real_incident.operator():
            if how == "annotation":
                state, app = real_argocd.sync(app_name)
            else:
                state, app = real_argocd.sync(
                    app_name,
                    strategy={"apply": {"force": True}},
                    sync_options=["Replace=true"],
                )
        live = cluster.live_target()
        running = cluster.kube.get(
            cluster.kube.resolve("v1", "Pod"), "trainer-0", pod["metadata"]["namespace"]
        )
        entry = real_argocd.record(
            f"force-replace ({how})",
            state,
            app,
            live,
            how=FORCE_ANNOTATION if how == "annotation" else "strategy.apply.force + Replace=true",
            fractional_pod=running["status"].get("phase"),
            recreated=live is not None and live["metadata"]["uid"] != before["metadata"]["uid"],
        )
        r = drift_app(config, app_name)

    assert state["phase"] == "Succeeded", entry
    assert entry["resources"][0]["status"] == "Synced", entry
    assert entry["app"]["sync"] == "Synced", entry
    assert live is not None
    assert live["spec"]["nodeSelector"] == NEW
    assert entry["recreated"], "Argo CD deleted the object and created a new incarnation"
    # No guard: the fractional pod was there the whole time and still is (its phase is
    # what KWOK, its kubelet, reports).
    assert running["metadata"]["uid"] == pod["metadata"]["uid"]
    assert not running["metadata"].get("deletionTimestamp")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["objects"][0]["verdict"] == "in-sync"


def test_ignored_difference_reports_succeeded_while_unapplied(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    """The incident's lie, produced by the real server: ignoreDifferences on the selector."""
    cluster = real_incident.cluster
    options = ["RespectIgnoreDifferences=true"]
    ignore = [
        {
            "group": TARGET["group"],
            "kind": TARGET["kind"],
            "name": TARGET["name"],
            "jsonPointers": ["/spec/nodeSelector"],
        }
    ]
    app_name = "incident-ignored-difference"
    config = configure(real_incident, real_argocd, app_name, real_argocd.token())
    with real_argocd.app(
        app_name,
        repo=real_incident.root / "gitops",
        sync_options=options,
        ignore_differences=ignore,
    ):
        state, app = real_argocd.sync(app_name)
        live = cluster.live_target()
        entry = real_argocd.record(
            "ignore-differences", state, app, live, sync_options=options, ignoreDifferences=ignore
        )
        r = drift_app(config, app_name)
        text = run_cli("-c", config, "drift", "--app", app_name)

    assert state["phase"] == "Succeeded", entry
    assert entry["app"]["sync"] == "Synced", entry
    assert live is not None
    assert live["spec"]["nodeSelector"] == OLD, "git's selector was never applied"
    assert r.exit_code == ExitCode.FINDING, r.output
    assert r.json["objects"][0]["verdict"] == "needs-recreate"
    assert any(w.startswith(SYNCED_BUT_DIFFERS) for w in r.json["warnings"]), r.json
    assert CEL in text.stdout


# --- recreate through the real Argo CD ------------------------------------------------------


def test_recreate_through_argocd_converges_and_rerun_has_nothing_to_do(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    cluster = real_incident.cluster
    app_name = "incident-recreate"
    config = configure(real_incident, real_argocd, app_name, real_argocd.token())
    with real_argocd.app(app_name, repo=real_incident.root / "gitops"):
        with real_incident.operator():
            r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd", "-o", "json")
            assert r.exit_code == ExitCode.OK, r.output
            assert r.json["outcome"] == "recreated"
            again = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
            assert again.exit_code == ExitCode.OK, again.output
            assert "nothing-to-do" in again.stdout
        with real_argocd.client() as c:
            app = c.get_application(app_name, refresh="hard")
        d = drift_app(config, app_name)
    live = cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    assert (app["status"].get("sync") or {}).get("status") == "Synced"
    assert d.exit_code == ExitCode.OK, d.output
    assert real_argocd.token() not in r.output + again.output


# --- authentication and authorization -------------------------------------------------------


def test_bad_token_is_401_exit_3_and_nothing_is_deleted(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    uid = real_incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    app_name = "incident-auth"
    bogus = "not-a-valid-token"
    config = configure(real_incident, real_argocd, app_name, bogus)
    with real_argocd.app(app_name, repo=real_incident.root / "gitops"):
        d = run_cli("-c", config, "drift", "--app", app_name)
        with real_incident.operator():
            r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
    for res in (d, r):
        print(res.stderr)  # what the user reads; shown with -s or on failure
        assert res.exit_code == ExitCode.EXTERNAL, res.output
        assert "(401)" in res.stderr
        assert "token" in res.stderr
        assert bogus not in res.output
    unchanged(real_incident, uid)


def test_read_only_account_reads_but_cannot_sync_and_nothing_is_deleted(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    uid = real_incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    app_name = "incident-viewer"
    config = configure(real_incident, real_argocd, app_name, real_argocd.token("viewer"))
    with real_argocd.app(app_name, repo=real_incident.root / "gitops"):
        d = run_cli("-c", config, "drift", "--app", app_name, "-o", "json")
        with real_argocd.client("viewer") as c, pytest.raises(Forbidden) as denied:
            c.sync(app_name, resources=[TARGET])
        with real_incident.operator():
            r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
    print(r.stderr)  # what the user reads; shown with -s or on failure
    assert d.exit_code == ExitCode.FINDING, d.output  # reading is allowed
    assert isinstance(denied.value.status, ArgoCDStatus)
    assert denied.value.status.code == 403 and denied.value.status.grpc_code == 7
    assert "permission denied" in denied.value.message
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "applications, sync" in r.stderr
    unchanged(real_incident, uid)


def test_missing_app_is_403_not_404_exit_3_and_nothing_is_deleted(
    real_incident: Incident, real_argocd: RealArgoCD
) -> None:
    uid = real_incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    config = configure(real_incident, real_argocd, "no-such-app", real_argocd.token())
    d = run_cli("-c", config, "drift", "--app", "no-such-app")
    with real_incident.operator():
        r = run_cli("-c", config, "recreate", "--yes", "--backend", "argocd")
    for res in (d, r):
        print(res.stderr)  # what the user reads; shown with -s or on failure
        assert res.exit_code == ExitCode.EXTERNAL, res.output
        assert "(403)" in res.stderr
        # The hint must not blame RBAC alone: the real server hides whether the app exists.
        assert "does not exist" in res.stderr
    unchanged(real_incident, uid)


# --- the sandbox with Argo CD ---------------------------------------------------------------


def test_sandbox_up_argocd_recreates_through_argocd(tmp_path: Path) -> None:
    """``sandbox up --argocd``: its own control plane and Argo CD; env, recreate, down."""
    require_built()
    state = str(tmp_path / "sandbox")
    up = run_cli("sandbox", "up", "--argocd", "--state-dir", state)
    try:
        assert up.exit_code == ExitCode.OK, up.output
        assert "Argo CD v3.2.11" in up.stdout
        env = run_cli("sandbox", "env", "--state-dir", state)
        assert env.exit_code == ExitCode.OK, env.output
        exports = dict(
            line.removeprefix("export ").split("=", 1) for line in env.stdout.splitlines()
        )
        assert exports["ARGOCD_SERVER"].startswith("127.0.0.1:")
        token_file = Path(exports["FRACCTL_ARGOCD_TOKEN_FILE"])
        assert token_file.stat().st_mode & 0o077 == 0
        config = exports["FRACCTL_CONFIG"]
        assert "backend: argocd" in Path(config).read_text()
        label = run_cli("-c", config, "nodes", "label", "b200-0")
        assert label.exit_code == ExitCode.OK, label.output
        r = run_cli("-c", config, "recreate", "--yes", "-o", "json")
        assert r.exit_code == ExitCode.OK, r.output
        assert r.json["outcome"] == "recreated"
        assert any("Argo CD sync" in n for n in r.json.get("notes", [])), r.json
        d = run_cli("-c", config, "drift", "--app", "gpu-fractioning")
        assert d.exit_code == ExitCode.OK, d.output
        assert "Argo CD gpu-fractioning: Synced" in d.stdout
    finally:
        st = run_cli("sandbox", "status", "-o", "json", "--state-dir", state)
        pids = ((st.json if st.stdout.strip() else {}).get("argocd") or {}).get("pids") or {}
        down = run_cli("sandbox", "down", "--state-dir", state)
    assert down.exit_code == ExitCode.OK, down.output
    assert pids, st.output
    from fracctl.sandbox.controlplane import alive

    assert not [name for name, pid in pids.items() if alive(pid)]
