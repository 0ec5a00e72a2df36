"""`fracctl recreate` proves its backend read-only before it deletes, and says so after.

Each refusal here leaves the live object exactly as it was (same uid, no DELETE sent);
each failure after the delete names the backup and the command that restores it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from fracctl.core.kube.resources import LEASES
from fracctl.errors import ExitCode, FracctlError
from fracctl.flows.recreate import recreate
from fracctl.flows.recreate.restore import restore
from tests.support.argocd_real import TARGET
from tests.support.argocd_standin import ArgoCDStandIn
from tests.support.helpers import Cluster, granted, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident, make_incident


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


def deletes(incident: Incident) -> int:
    return incident.cluster.kube.calls["DELETE gpufractioningconfigs"]


def assert_untouched(incident: Incident, uid: str) -> None:
    live = incident.cluster.live_target()
    assert live is not None, "the live object was deleted"
    assert live["metadata"]["uid"] == uid
    assert not live["metadata"].get("deletionTimestamp")
    assert live["spec"]["nodeSelector"] == OLD
    assert deletes(incident) == 0
    assert not (incident.state_dir / "backups").exists(), "nothing to back up: nothing changed"


def uid_of(incident: Incident) -> str:
    live = incident.cluster.live_target()
    assert live is not None
    return str(live["metadata"]["uid"])


def argocd_args(incident: Incident, argo: ArgoCDStandIn, app: str | None = None) -> list[str]:
    argocd = {"server": argo.url, "app": app or argo.app_name}
    config = incident.edit_config(to=incident.root / "argocd.yaml", argocd=argocd)
    return ["-c", str(config)]


@pytest.mark.parametrize("dry_run", [False, True], ids=["yes", "dry-run"])
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("bad-token", "rejected the token (401)"),
        ("missing-app", "other-app"),
        ("read-only", "may read application gpu-fractioning but not sync it"),
        ("not-managed", "does not manage GpuFractioningConfig/default"),
    ],
)
def test_argocd_that_cannot_recreate_stops_before_the_delete(
    incident: Incident,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    expected: str,
    dry_run: bool,
) -> None:
    uid = uid_of(incident)
    manifests = [] if case == "not-managed" else incident.desired()
    denied = {"sync"} if case == "read-only" else None
    with ArgoCDStandIn(
        kubeconfig=incident.cluster.kubeconfig, manifests=manifests, denied=denied
    ) as argo:
        token = "wrong-token" if case == "bad-token" else argo.token
        monkeypatch.setenv("ARGOCD_AUTH_TOKEN", token)
        app = "other-app" if case == "missing-app" else None
        flag = "--dry-run" if dry_run else "--yes"
        r = run_cli(*argocd_args(incident, argo, app), "recreate", flag, "--backend", "argocd")
        syncs = list(argo.sync_requests)
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert expected in r.stderr
    assert "nothing was deleted or changed" in r.stderr
    assert token not in r.output
    assert not syncs
    assert_untouched(incident, uid)


def test_argocd_proof_reads_and_dry_runs_only(
    incident: Incident, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ArgoCDStandIn(
        kubeconfig=incident.cluster.kubeconfig, manifests=incident.desired()
    ) as argo:
        monkeypatch.setenv("ARGOCD_AUTH_TOKEN", argo.token)
        r = run_cli(
            *argocd_args(incident, argo),
            "recreate",
            "--dry-run",
            "--backend",
            "argocd",
            "-o",
            "json",
        )
        requests = [(m, p) for m, p, _q, _b in argo.requests]
        writes = [b for m, _p, _q, b in argo.requests if m != "GET"]
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "dry-run"
    assert ("GET", "/api/v1/applications/gpu-fractioning") in requests
    assert ("GET", "/api/v1/account/can-i/applications/sync/default/gpu-fractioning") in requests
    assert ("GET", "/api/v1/applications/gpu-fractioning/syncwindows") in requests
    assert ("GET", "/api/v1/applications/gpu-fractioning/manifests") in requests
    # The one request that is not a read is the sync that follows, as a dry run.
    assert [(w["dryRun"], w["resources"]) for w in writes] == [(True, [dict(TARGET)])], requests
    assert any("may sync default/gpu-fractioning" in p for p in r.json["proofs"])
    assert any("may delete gpufractioningconfigs default" in p for p in r.json["proofs"])


def test_flux_that_is_missing_stops_before_the_delete(incident: Incident) -> None:
    uid = uid_of(incident)
    r = run_cli(
        "-c",
        str(incident.config_file),
        "recreate",
        "--yes",
        "--backend",
        "flux",
    )
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "the flux backend cannot recreate the object, so nothing was deleted" in r.stderr
    # Either the CRD is not served at all, or (once another test installed it) the
    # Kustomization does not exist: both are named.
    assert "is Flux installed?" in r.stderr or "no Kustomization flux-system/gpu-fractioning" in (
        r.stderr
    )
    assert_untouched(incident, uid)


@pytest.fixture
def no_delete_identity(incident: Incident, control_plane):  # type: ignore[no-untyped-def]
    """The viewer, granted all a recreate needs except deleting the target."""
    kube = incident.cluster.kube
    rules = [
        {"apiGroups": ["gpu-fractioning.kai.scheduler"], "resources": ["gpufractioningconfigs"],
         "verbs": ["get", "list", "watch", "patch", "create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
        {"apiGroups": [""], "resources": ["nodes", "pods", "namespaces"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
         "verbs": ["get", "list"]},
    ]  # fmt: skip
    path = incident.root / "viewer.kubeconfig"
    control_plane.write_kubeconfig(str(path), token=control_plane.viewer_token, user="viewer")
    # The lock Lease's namespace, as an administrator sets it up once (the viewer may
    # not create namespaces): whether an earlier test made it must not matter.
    kube.ensure_namespace(incident.config().recreate.lock_namespace)
    with granted(kube, "viewer", rules, "fracctl-test-no-delete"):
        yield path


def test_identity_that_may_not_delete_stops_before_anything(
    incident: Incident, no_delete_identity: Path
) -> None:
    uid = uid_of(incident)
    r = run_cli(
        "-c",
        str(incident.config_file),
        "--kubeconfig",
        str(no_delete_identity),
        "recreate",
        "--yes",
        "--backend",
        "apply",
    )
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "may not delete gpufractioningconfigs" in r.stderr
    assert "nothing was deleted or changed" in r.stderr
    assert_untouched(incident, uid)


def test_failure_after_the_delete_says_so_and_restore_brings_it_back(
    incident: Incident,
) -> None:
    original = incident.cluster.live_target()
    assert original is not None
    with ArgoCDStandIn(
        kubeconfig=incident.cluster.kubeconfig, manifests=incident.desired()
    ) as argo:

        def fail_sync(step: str) -> None:  # proven before the delete; then the sync fails
            if step == "gone":
                argo.fail_next(500, 2, "repository not accessible")

        ctx = incident.context(
            env={"ARGOCD_AUTH_TOKEN": argo.token},
            argocd__server=argo.url,
            argocd__app=argo.app_name,
        )
        with incident.operator():
            with pytest.raises(FracctlError) as e:
                recreate(ctx, yes=True, backend="argocd", boundary=fail_sync)
    message = str(e.value)
    assert e.value.exit_code == ExitCode.EXTERNAL
    (backup,) = sorted((incident.state_dir / "backups").glob("*.yaml"))
    assert "WAS DELETED and is not recreated" in message
    assert "repository not accessible" in message
    assert f"fracctl recreate --restore-from {backup} --yes" in message
    assert "resume: fracctl recreate --yes" in message
    assert incident.cluster.live_target() is None
    audit = json.loads((incident.state_dir / "audit.log").read_text().splitlines()[-1])
    assert audit["backup"] == str(backup)
    assert "WAS DELETED" in audit["outcome"]

    # The way back the message names: the original, as it was.
    with incident.operator():
        r = run_cli(
            "-c", str(incident.config_file), "recreate", "--restore-from", str(backup), "--yes"
        )
        assert r.exit_code == ExitCode.OK, r.output
        assert "outcome: restored" in r.stdout
        again = run_cli(
            "-c", str(incident.config_file), "recreate", "--restore-from", str(backup), "--yes"
        )
    assert again.exit_code == ExitCode.OK, again.output
    assert "nothing-to-do" in again.stdout
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == OLD
    assert live["metadata"]["uid"] != original["metadata"]["uid"]
    audit = json.loads((incident.state_dir / "audit.log").read_text().splitlines()[-1])
    assert audit["action"] == "restore" and audit["outcome"] == "restored"


def test_cli_error_line_itself_says_the_object_is_gone(incident: Incident) -> None:
    """Through the CLI: the final `Error:` line, not only progress lines, says it."""
    # Proven (apply backend, admin), deleted, then the finalizer is never released.
    config = incident.edit_config(to=incident.root / "broken.yaml", timeouts={"delete": "2s"})
    r = run_cli("-c", str(config), "recreate", "--yes")
    assert r.exit_code == ExitCode.TIMEOUT, r.output
    error = [line for line in r.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1, r.stderr
    assert "still terminating" in error[0]
    assert "WAS DELETED and is still terminating" in error[0]
    assert "fracctl recreate --restore-from " in error[0]
    with incident.operator():
        resumed = run_cli("-c", str(config), "recreate", "--yes")
    assert resumed.exit_code == ExitCode.OK, resumed.output
    assert incident.cluster.live_target()["spec"]["nodeSelector"] == NEW  # type: ignore[index]


def test_restore_refuses_a_backup_of_another_object(incident: Incident, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: default\n")
    r = run_cli("-c", str(incident.config_file), "recreate", "--restore-from", str(other), "--yes")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "holds v1 ConfigMap/default, not the target" in r.stderr
    missing = run_cli(
        "-c", str(incident.config_file), "recreate", "--restore-from", str(tmp_path / "no.yaml")
    )
    assert missing.exit_code == ExitCode.USAGE, missing.output
    assert "no such file" in missing.stderr
    assert deletes(incident) == 0


def test_restore_never_replaces_a_live_object(incident: Incident, tmp_path: Path) -> None:
    uid = uid_of(incident)
    backup = tmp_path / "new.yaml"
    backup.write_text(
        "apiVersion: gpu-fractioning.kai.scheduler/v1alpha1\nkind: GpuFractioningConfig\n"
        "metadata:\n  name: default\n"
        "spec:\n  nodeSelector:\n    example.org/gpu-fractions: enabled\n"
    )
    r = run_cli("-c", str(incident.config_file), "recreate", "--restore-from", str(backup), "--yes")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "only creates a missing object and never deletes one" in r.stderr
    assert_untouched(incident, uid)


def test_restore_with_another_backend_is_a_usage_error(incident: Incident, tmp_path: Path) -> None:
    r = run_cli(
        "-c", str(incident.config_file), "recreate", "--restore-from", "x.yaml",
        "--backend", "argocd",
    )  # fmt: skip
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "--restore-from creates the backed-up object directly" in r.stderr


def backup_of(incident: Incident) -> Path:
    """A backup of the live original, written the way recreate writes it."""
    from fracctl.flows.recreate.state import backup

    live = incident.cluster.live_target()
    assert live is not None
    return Path(backup(incident.context(), live))


def test_restore_dry_run_proves_and_changes_nothing(incident: Incident) -> None:
    path = backup_of(incident)
    incident.cluster.wipe_target()
    r = run_cli(
        "-c", str(incident.config_file), "recreate", "--restore-from", str(path), "--dry-run",
        "-o", "json",
    )  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "dry-run"
    assert any("dry-run create" in p for p in r.json["proofs"])
    assert [s["step"] for s in r.json["plan"]["steps"]][:2] == ["restore", "verify"]
    assert incident.cluster.live_target() is None
    assert incident.cluster.kube.list(LEASES, namespace="fracctl-test") == []


def test_restore_waits_for_a_terminating_object_first(incident: Incident) -> None:
    path = backup_of(incident)
    live = incident.cluster.live_target()
    assert live is not None
    incident.cluster.kube.delete(incident.cluster.config.target.ref, "default")  # finalizer holds
    operator = incident.operator()
    later = threading.Timer(1.0, operator.__enter__)  # releases the finalizer once planned
    later.start()
    try:
        result = restore(incident.context(), str(path), yes=True)
    finally:
        later.join()
        operator.__exit__(None, None, None)
    assert result.outcome == "restored"
    assert result.plan.steps[0] == "wait-gone"
    restored = incident.cluster.live_target()
    assert restored is not None and restored["spec"]["nodeSelector"] == OLD
    assert restored["metadata"]["uid"] != live["metadata"]["uid"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [1\n", "not a YAML backup"),
        ("kind: A\n---\nkind: B\n", "a backup holds exactly one object, found 2"),
        (
            "apiVersion: gpu-fractioning.kai.scheduler/v1alpha1\nkind: GpuFractioningConfig\n"
            "metadata:\n  name: default\nspec: {}\n",
            "the backed-up object has no spec.nodeSelector",
        ),
    ],
    ids=["bad-yaml", "two-documents", "no-selector"],
)
def test_restore_refuses_a_file_that_is_not_a_backup(
    incident: Incident, tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "backup.yaml"
    path.write_text(text)
    r = run_cli("-c", str(incident.config_file), "recreate", "--restore-from", str(path), "--yes")
    assert r.exit_code == ExitCode.USAGE, r.output
    assert expected in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert deletes(incident) == 0


def test_restore_without_yes_and_without_a_terminal_is_refused(incident: Incident) -> None:
    path = backup_of(incident)
    incident.cluster.wipe_target()
    r = run_cli("-c", str(incident.config_file), "recreate", "--restore-from", str(path))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert "refusing to restore without confirmation" in r.stderr
    assert incident.cluster.live_target() is None
