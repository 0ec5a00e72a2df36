"""The guard policy on the real API server: only an armed fracctl recreate deletes the config.

A real ``ValidatingAdmissionPolicy`` and binding (``fracctl policy apply``), the lock
Lease as its parameter, deletes as the admin and as another identity, and recreates that
go through it. The real Argo CD's Force+Replace and prune are in
tests/argocd/test_argocd_guard_e2e.py.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import LEASES
from fracctl.core.recreate.guard_policy import PARAM_LABEL, REQUESTER, message, policy_name
from fracctl.errors import ExitCode, FracctlError
from fracctl.flows.policy import BINDINGS, POLICIES
from fracctl.flows.recreate.lock import LeaseLock
from fracctl.sandbox.controlplane import ADMIN_USER, VIEWER_USER, ControlPlane
from tests.support.helpers import Cluster, granted, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident, make_incident

FRACTIONAL = {"gpu-fraction": "0.5"}
LOCK = ("fracctl-test", "fracctl-recreate")


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


def live(incident: Incident) -> dict[str, Any]:
    obj = incident.cluster.live_target()
    assert obj is not None
    return obj


def viewer(cp: ControlPlane) -> Kube:
    return Kube.connect(kubeconfig=str(Path(cp.state_dir) / "viewer.kubeconfig"))


def test_print_is_deploy_and_every_object_passes_a_server_dry_run(cluster: Cluster) -> None:
    r = run_cli("policy", "print")
    assert r.exit_code == ExitCode.OK, r.output
    repo = Path(__file__).resolve().parents[2]
    assert (repo / "deploy" / "policy" / "guard.yaml").read_text() == r.stdout, (
        "deploy/policy/guard.yaml differs from `fracctl policy print`: run "
        "scripts/generate-deploy-rbac.sh"
    )
    dry = run_cli("--kubeconfig", cluster.kubeconfig, "policy", "apply", "--dry-run")
    assert dry.exit_code == ExitCode.OK, dry.output
    assert dry.stdout.count("(dry run)") == 5
    assert cluster.kube.get_or_none(POLICIES, "fracctl-guard-gpufractioningconfigs") is None
    lint = run_cli("lint", str(repo / "deploy" / "policy" / "guard.yaml"))
    assert lint.exit_code == ExitCode.OK, lint.output


def test_a_delete_outside_recreate_is_refused_with_the_policy_message(
    guarded: Incident,
) -> None:
    """kubectl delete as a cluster admin, while a fractional pod runs: refused."""
    cluster = guarded.cluster
    cluster.pod("team-a", "trainer-0", annotations=FRACTIONAL, node="rtx-pro-6000-0")
    before = live(guarded)
    t = cluster.config.target
    with pytest.raises(FracctlError) as e:
        cluster.kube.delete(t.ref, t.name)
    said = message(t, guarded.config().recreate)
    assert said in e.value.message, e.value.message
    assert f"(refused: {ADMIN_USER})" in e.value.message
    if shutil.which("kubectl"):
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", cluster.kubeconfig, "delete", f"{t.plural}.{t.group}",
             t.name, "--wait=false"],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert proc.returncode != 0 and said in proc.stderr, proc.stderr
    after = live(guarded)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert not after["metadata"].get("deletionTimestamp")


@pytest.mark.parametrize("backend", ["apply", pytest.param("flux", marks=pytest.mark.e2e)])
def test_recreate_converges_through_the_policy(
    guarded: Incident, backend: str, request: pytest.FixtureRequest
) -> None:
    from contextlib import nullcontext

    cluster = guarded.cluster
    served = nullcontext(None)
    if backend == "flux":  # the real Flux, reading the incident's repository
        served = request.getfixturevalue("real_flux").serving(guarded)
    with served as flux, guarded.operator():
        config = flux.configure(guarded) if flux else str(guarded.config_file)
        r = run_cli("-c", config, "recreate", "--yes", "--backend", backend, "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["outcome"] == "recreated"
    assert any("guard policy" in p and "refuses" in p for p in r.json["proofs"]), r.json
    assert f"armed the lock for {ADMIN_USER}" in r.stderr
    assert live(guarded)["spec"]["nodeSelector"] == NEW
    lease = cluster.kube.get(LEASES, LOCK[1], LOCK[0])  # kept for the policy, disarmed
    assert lease["metadata"]["labels"][PARAM_LABEL] == "true"
    assert REQUESTER not in (lease["metadata"].get("annotations") or {})
    assert not (lease.get("spec") or {}).get("holderIdentity")


def test_a_second_identity_is_refused_while_fracctl_holds_the_lock(
    guarded: Incident, control_plane: ControlPlane
) -> None:
    cluster = guarded.cluster
    t = cluster.config.target
    rules = [{"apiGroups": [t.group], "resources": [t.plural], "verbs": ["get", "delete"]}]
    other = viewer(control_plane)
    with granted(cluster.kube, VIEWER_USER, rules, "guard-test-delete"):
        with LeaseLock(guarded.context()) as lock:
            assert lock.arm() == ADMIN_USER
            with pytest.raises(FracctlError) as e:
                other.delete(t.ref, t.name, dry_run=True)
            assert f"(refused: {VIEWER_USER})" in e.value.message
            cluster.kube.delete(t.ref, t.name, dry_run=True)  # the armed identity passes
    other.close()
    assert live(guarded)["spec"]["nodeSelector"] == OLD


def test_a_run_killed_with_the_lock_armed_is_recovered_as_documented(guarded: Incident) -> None:
    """runbooks/guard-policy.md: a recreate killed after its delete leaves the Lease armed
    for its identity; a second run is refused while the lock is held, and once it expired
    the documented `fracctl recreate --yes` takes it over and converges."""
    import os
    import signal
    import sys

    cluster = guarded.cluster
    env = {**os.environ, "FRACCTL_TIMEOUTS_LOCK_LEASE": "6s", "FRACCTL_TIMEOUTS_DELETE": "60s"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fracctl", "-c", str(guarded.config_file), "recreate", "--yes"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:  # no operator runs: the delete hangs on the finalizer
            obj = cluster.live_target()
            if obj is not None and obj["metadata"].get("deletionTimestamp"):
                break
            assert time.monotonic() < deadline, "the subprocess never deleted the object"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.communicate()
    lease = cluster.kube.get(LEASES, LOCK[1], LOCK[0])
    assert lease["metadata"]["annotations"][REQUESTER] == ADMIN_USER  # the documented state
    assert (lease.get("spec") or {}).get("holderIdentity")
    busy = run_cli("-c", str(guarded.config_file), "recreate", "--yes")
    assert busy.exit_code == ExitCode.LOCKED, busy.output
    time.sleep(6.5)  # past the dead holder's lease
    guarded.edit_config(timeouts={"lock_lease": "6s"})
    with guarded.operator():
        r = run_cli("-c", str(guarded.config_file), "recreate", "--yes")
    assert r.exit_code == ExitCode.OK, r.output
    assert "taking over the expired lock Lease" in r.stderr
    assert live(guarded)["spec"]["nodeSelector"] == NEW


def test_a_missing_lease_refuses_every_delete(guarded: Incident) -> None:
    """Break glass gone wrong: with no Lease the binding denies by its parameter rule."""
    cluster = guarded.cluster
    t = cluster.config.target
    cluster.kube.delete(LEASES, LOCK[1], LOCK[0])
    with pytest.raises(FracctlError) as e:
        cluster.kube.delete(t.ref, t.name, dry_run=True)
    assert policy_name(t) in e.value.message
    again = run_cli("-c", str(guarded.config_file), "policy", "apply")
    assert again.exit_code == ExitCode.OK, again.output
    assert "created (unheld)" in again.stdout


def test_the_binding_removed_lets_deletes_through(guarded: Incident) -> None:
    """Lifting the guard (the runbook's break glass) is removing the binding."""
    cluster = guarded.cluster
    t = cluster.config.target
    cluster.kube.delete(BINDINGS, policy_name(t))
    deadline = time.monotonic() + 30
    while True:
        try:
            cluster.kube.delete(t.ref, t.name, dry_run=True)
            break
        except FracctlError:
            assert time.monotonic() < deadline, "the binding's removal never took effect"
            time.sleep(0.2)
