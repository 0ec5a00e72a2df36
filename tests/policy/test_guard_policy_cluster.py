"""The guard policy on the real API server: only an armed fracctl recreate deletes the config.

A real ``ValidatingAdmissionPolicy`` and binding (``fracctl policy apply``), the lock
Lease as its parameter, deletes as the admin and as another identity, and recreates that
go through it. The real Argo CD's Force+Replace and prune are in
tests/argocd/test_argocd_guard_e2e.py.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from fracctl import config as cfg
from fracctl.adapters.kube import Kube
from fracctl.core.kube.resources import CRDS, LEASES
from fracctl.core.recreate import guard_policy
from fracctl.core.recreate.guard_policy import (
    PARAM_LABEL,
    REQUESTER,
    UPDATE_ARMED,
    message,
    policy_name,
    refused_by_guard,
)
from fracctl.errors import ApiError, ExitCode, FracctlError, NotFound
from fracctl.flows.policy import BINDINGS, POLICIES
from fracctl.flows.recreate.lock import LeaseLock
from fracctl.sandbox.controlplane import ADMIN_USER, VIEWER_USER, ControlPlane
from fracctl.sandbox.seed import install_crd
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


# --- updates that restart the MPS daemons ----------------------------------------------

TOLERATE = {"spec": {"tolerations": [{"key": "example.org/maintenance", "operator": "Exists"}]}}


def type_warnings(kube: Kube, name: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """The API server's type-check warnings on policy ``name``, once it checked this
    generation (kube-controller-manager's policy status controller)."""
    deadline = time.monotonic() + timeout
    while True:
        policy = kube.get(POLICIES, name)
        status = policy.get("status") or {}
        if status.get("observedGeneration") == policy["metadata"]["generation"]:
            return list((status.get("typeChecking") or {}).get("expressionWarnings") or [])
        assert time.monotonic() < deadline, f"policy {name} was never type-checked: {status}"
        time.sleep(0.2)


def patched_within(kube: Kube, t: Any, *, refused: bool, timeout: float = 15.0) -> None:
    """Patch the target's tolerations until the policy answers as wanted (it reads the
    Lease from its own cache, a moment behind); each try another value."""
    deadline = time.monotonic() + timeout
    for n in range(10**6):
        body = {"spec": {"tolerations": [{"key": f"example.org/try-{n}", "operator": "Exists"}]}}
        try:
            kube.patch(t.ref, t.name, body)
            if not refused:
                return
        except ApiError as e:
            assert refused_by_guard(t, e.message), e.message
            if refused:
                assert guard_policy.update_message(t) in e.message, e.message
                return
        assert time.monotonic() < deadline, f"the policy never {'refused' if refused else 'let'} it"
        time.sleep(0.2)


def pinned(policy: dict[str, Any], name: str, version: str, also: str = "") -> dict[str, Any]:
    """``policy`` under ``name``, matching the one served ``version``: the API server
    type-checks no policy whose rule names a wildcard version (typechecking.go
    ``extractVersions``), as the guard's must, to hold every version of the config."""
    out = copy.deepcopy(policy)
    out["metadata"] = {"name": name}
    out["spec"]["matchConstraints"]["resourceRules"][0]["apiVersions"] = [version]
    out["spec"]["validations"][1]["expression"] += also
    return out


def served_schema(kube: Kube, t: Any, timeout: float = 30.0) -> None:
    """Until the API server's OpenAPI v3 holds the target's kind, as the type check reads
    it (a moment after its CRD is established)."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(FracctlError):
            doc = kube.request("GET", f"/openapi/v3/apis/{t.group}/{t.version}")
            for schema in ((doc.get("components") or {}).get("schemas") or {}).values():
                kinds = schema.get("x-kubernetes-group-version-kind") or []
                if any(k.get("kind") == t.kind for k in kinds):
                    return
        assert time.monotonic() < deadline, f"no OpenAPI schema for {t.kind}"
        time.sleep(0.2)


def checked(kube: Kube, naming: str, wrong: str, probes: list[str]) -> None:
    """A probe that reads ``wrong`` is warned about (the schema was resolved); then
    fracctl's own policy, pinned alike, is not."""
    c = cfg.load(env={"FRACCTL_TARGET_NAMING": naming})
    t = c.target
    served_schema(kube, t)
    policy = guard_policy.objects(t, c.recreate)[0]
    bad = pinned(policy, f"typecheck-{naming}-bad", t.version, f" || has(object.spec.{wrong})")
    good = pinned(policy, f"typecheck-{naming}", t.version)
    probes.append(bad["metadata"]["name"])
    kube.create(POLICIES, bad)
    (warned,) = type_warnings(kube, bad["metadata"]["name"])
    assert warned["fieldRef"] == "spec.validations[1].expression", warned
    assert f"undefined field '{wrong}'" in warned["warning"], warned
    probes.append(good["metadata"]["name"])
    kube.create(POLICIES, good)
    assert type_warnings(kube, good["metadata"]["name"]) == [], naming


def test_the_policy_type_checks_against_the_crd(cluster: Cluster) -> None:
    """The API server finds no type error in the rules or their messages, against either
    generation's CRD (and the Lease, the request); a field the schema lacks it reports."""
    kube, probes = cluster.kube, []
    sharing = cfg.load(env={"FRACCTL_TARGET_NAMING": "gpu-sharing"})
    try:
        checked(kube, "gpu-fractioning", "noSuchSection", probes)
        install_crd(kube, sharing)  # the older generation: its agent is sharingAgent
        checked(kube, "gpu-sharing", "fractioningAgent", probes)
    finally:
        for name in probes:
            with contextlib.suppress(NotFound):
                kube.delete(POLICIES, name)
        with contextlib.suppress(NotFound):
            kube.delete(CRDS, f"{sharing.target.plural}.{sharing.target.group}")


def test_a_daemon_restarting_update_outside_a_run_is_refused(guarded: Incident) -> None:
    """kubectl patch and a server-side apply (Argo CD's, Flux's way) of the tolerations."""
    kube, t = guarded.cluster.kube, guarded.cluster.config.target
    before = live(guarded)
    with pytest.raises(ApiError) as e:
        kube.patch(t.ref, t.name, TOLERATE)
    assert e.value.status.code == 403 and e.value.status.reason == "Forbidden", e.value.status
    said = guard_policy.update_message(t)
    assert f"{said} (refused: {ADMIN_USER})" in e.value.message, e.value.message
    assert "restarts the MPS daemons" in said and "fracctl recreate" in said
    spec = {"mpsDaemon": {"gracefulStopDelay": "5s"}}
    body = {"apiVersion": f"{t.group}/{t.version}", "kind": t.kind, "metadata": {"name": t.name},
            "spec": spec}  # fmt: skip
    with pytest.raises(ApiError, match="restarts the MPS daemons"):
        kube.apply(t.ref, body, field_manager="argocd-controller")
    if shutil.which("kubectl"):
        proc = subprocess.run(
            ["kubectl", "--kubeconfig", guarded.cluster.kubeconfig, "patch",
             f"{t.plural}.{t.group}", t.name, "--type", "merge", "-p", json.dumps(TOLERATE)],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert proc.returncode != 0, proc.stdout
        assert "(Forbidden)" in proc.stderr and said in proc.stderr, proc.stderr
    after = live(guarded)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_metadata_status_and_dry_run_updates_pass(guarded: Incident) -> None:
    kube, t = guarded.cluster.kube, guarded.cluster.config.target
    before = live(guarded)
    kube.patch(t.ref, t.name, {"metadata": {"annotations": {"team": "ml"}, "labels": {"a": "b"}}})
    status = {"status": {"observedGeneration": 1, "conditions": [
        {"type": "Ready", "status": "True", "reason": "Reconciled", "message": "",
         "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}  # fmt: skip
    kube.patch(t.ref, t.name, status, subresource="status")
    dry = kube.patch(t.ref, t.name, TOLERATE, dry_run=True)  # what drift and Argo CD's diff send
    assert dry["spec"]["tolerations"] == TOLERATE["spec"]["tolerations"]
    obj = live(guarded)
    assert obj["metadata"]["annotations"]["team"] == "ml"
    assert obj["status"]["conditions"][0]["reason"] == "Reconciled"
    assert obj["spec"] == before["spec"]


def test_an_update_armed_on_the_lease_passes_until_the_lock_is_released(
    guarded: Incident,
) -> None:
    cluster = guarded.cluster
    kube, t = cluster.kube, cluster.config.target
    uid = live(guarded)["metadata"]["uid"]

    def annotations() -> dict[str, str]:
        return kube.get(LEASES, LOCK[1], LOCK[0])["metadata"].get("annotations") or {}

    with LeaseLock(guarded.context()) as lock:
        lock.arm(update_uid="not-" + uid)  # another incarnation's uid: still refused
        assert annotations()[UPDATE_ARMED] == "not-" + uid
        patched_within(kube, t, refused=True)
        lock.arm(update_uid=uid)
        patched_within(kube, t, refused=False)
        assert live(guarded)["spec"]["tolerations"][0]["key"].startswith("example.org/try-")
        lock.arm()  # armed again without it: gone from the Lease
        assert UPDATE_ARMED not in annotations() and REQUESTER in annotations()
        lock.arm(update_uid=uid)
    assert not {REQUESTER, UPDATE_ARMED} & set(annotations()), annotations()
    patched_within(kube, t, refused=True)
    with pytest.raises(FracctlError, match="may be deleted only by fracctl recreate"):
        kube.delete(t.ref, t.name, dry_run=True)  # the update's arming is no delete's
