"""``fracctl gate pre-sync|post-sync`` against the real API server, the sync played between.

Between the halves the test applies the revision's object as Argo CD's sync phase does
(a create of the manifest); the end-to-end runs under the real Argo CD are in
tests/argocd/test_argocd_gate_e2e.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.core.kube.resources import CONFIGMAPS, EVENTS, LEASES
from fracctl.errors import ExitCode, ExternalError, Refused, Unsafe
from fracctl.flows import gate
from fracctl.flows.engines import clean_desired
from fracctl.flows.gate.backup import backup_name
from fracctl.flows.recreate import recreate
from fracctl.flows.recreate.lock import NOTES
from fracctl.flows.render import to_yaml
from tests.support.helpers import Cluster, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident, make_incident

NS = "fracctl-test"


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    return make_incident(cluster, tmp_path)


def revision(incident: Incident, *, selector: dict[str, str] | None = None) -> Path:
    """The synced revision's manifests, as the hook's ConfigMap mounts them."""
    objects = incident.desired()
    if selector is not None:
        objects[0]["spec"]["nodeSelector"] = selector
    folder = incident.root / "desired"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(to_yaml(objects))
    return folder


def objects(folder: Path) -> list[dict[str, Any]]:
    return gate.read_desired(folder)


def sync(incident: Incident, folder: Path) -> None:
    """Argo CD's sync phase: apply the revision's object (absent, so a create)."""
    t = incident.cluster.config.target
    (obj,) = [o for o in objects(folder) if o["kind"] == t.kind and o["metadata"]["name"] == t.name]
    incident.cluster.kube.create(incident.cluster.config.target.ref, clean_desired(obj))


def holder(incident: Incident) -> str | None:
    lease = incident.cluster.kube.get_or_none(LEASES, "fracctl-recreate", NS)
    return ((lease or {}).get("spec") or {}).get("holderIdentity")


def test_the_halves_recreate_around_the_sync_and_release_the_lock(incident: Incident) -> None:
    folder = revision(incident)
    original = incident.cluster.live_target()
    assert original is not None
    old_uid = original["metadata"]["uid"]
    ctx = incident.context()
    with incident.operator():
        first = gate.pre_sync(ctx, objects(folder))
        assert first.locked and first.reason == "recreate", first
        assert incident.cluster.live_target() is None
        assert holder(incident) == gate.gate_identity(ctx)  # held across the sync
        backup = incident.cluster.kube.get(CONFIGMAPS, backup_name(original), NS)
        assert old_uid in backup["data"]["object.yaml"]
        sync(incident, folder)
        second = gate.post_sync(incident.context(), objects(folder))
    assert second.locked and second.ready == ["b200-0", "rtx-pro-6000-0"], second
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    assert holder(incident) is None
    # The new object's Event says what it was and where its backup is (no run hash).
    (event,) = [e for e in incident.cluster.kube.list(EVENTS, namespace="default")
                if e["involvedObject"].get("uid") == live["metadata"]["uid"]]  # fmt: skip
    saved = f"ConfigMap {NS}/{backup_name(original)}"
    assert event["reason"] == "Recreated", event
    assert event["message"] == (f"fracctl (fracctl gate, backup {saved}): recreated; "
                                f"nodeSelector {OLD} -> {NEW}"), event["message"]  # fmt: skip
    lease = incident.cluster.kube.get_or_none(LEASES, "fracctl-recreate", NS) or {}
    assert not set((lease.get("metadata") or {}).get("annotations") or {}) & set(NOTES.values())


def test_without_an_immutable_change_pre_sync_ends_at_once_without_the_lock(
    incident: Incident,
) -> None:
    folder = revision(incident, selector=OLD)  # the revision keeps the live selector
    uid = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    ctx = incident.context()
    before = dict(ctx.kube.calls)
    result = gate.pre_sync(ctx, objects(folder))
    assert not result.locked and result.reason == "nothing-to-do", result
    made = {k: n - before.get(k, 0) for k, n in ctx.kube.calls.items() if n != before.get(k, 0)}
    assert not any("leases" in k or k.startswith("DELETE") for k in made), made
    r = run_cli("-c", str(incident.config_file), "gate", "pre-sync", "--desired", str(folder))
    assert r.exit_code == ExitCode.OK, r.output
    assert "the lock was not taken" in r.stdout
    assert incident.cluster.kube.list(LEASES, namespace=NS) == []
    assert incident.cluster.live_target()["metadata"]["uid"] == uid  # type: ignore[index]
    r = run_cli("-c", str(incident.config_file), "gate", "post-sync", "--desired", str(folder))
    assert r.exit_code == ExitCode.OK, r.output
    assert "1 node(s) ready: rtx-pro-6000-0" in r.stdout
    assert holder(incident) is None


def test_a_fractional_pod_refuses_and_the_termination_message_names_it(
    incident: Incident,
) -> None:
    incident.cluster.pod(
        "ml-team", "train-0", annotations={"gpu-fraction": "0.5"}, node="rtx-pro-6000-0"
    )
    folder = revision(incident)
    log = incident.root / "termination-log"
    log.write_text("")  # the kubelet makes the file; fracctl only writes into it
    before = incident.cluster.live_target()["metadata"]["uid"]  # type: ignore[index]
    r = run_cli("-c", str(incident.config_file), "gate", "pre-sync", "--desired", str(folder),
                "--termination-log", str(log))  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    message = log.read_text()
    assert message.startswith("fracctl gate pre-sync: preflight refused, nothing changed")
    assert "ml-team/train-0 on rtx-pro-6000-0" in message
    assert message.removeprefix("fracctl gate pre-sync: ") in r.stderr
    # Read where Argo CD shows it: the cause, the pod and the fix once, no prefix lore
    # (the agents' default prefixes are what every cluster reads; the keys are listed).
    print(f"termination message ({len(message)} characters): {message}")
    assert len(message) <= 400, message
    assert message.count("let them finish") == 1 and "documented default" not in message
    assert incident.cluster.live_target()["metadata"]["uid"] == before  # type: ignore[index]
    assert holder(incident) is None


def test_a_success_writes_its_outcome_as_the_termination_message(incident: Incident) -> None:
    folder = revision(incident, selector=OLD)
    log = incident.root / "termination-log"
    log.write_text("")
    r = run_cli("-c", str(incident.config_file), "gate", "pre-sync", "--desired", str(folder),
                "--termination-log", str(log), "-o", "json")  # fmt: skip
    assert r.exit_code == ExitCode.OK, r.output
    assert r.json["locked"] is False and r.json["reason"] == "nothing-to-do"
    assert log.read_text() == "fracctl gate pre-sync: nothing-to-do (nothing-to-do)"


def test_post_sync_holds_the_live_object_to_the_revision_and_keeps_the_lock(
    incident: Incident,
) -> None:
    folder = revision(incident)
    with incident.operator():
        gate.pre_sync(incident.context(), objects(folder))
        sync(incident, revision(incident, selector=OLD))  # a sync that applied something else
        folder = revision(incident)
        with pytest.raises(ExternalError, match="is not the revision's: spec.nodeSelector"):
            gate.post_sync(incident.context(), objects(folder))
    assert holder(incident) == gate.gate_identity(incident.context())


def test_post_sync_fails_when_the_sync_created_nothing(incident: Incident) -> None:
    folder = revision(incident)
    with incident.operator():
        gate.pre_sync(incident.context(), objects(folder))
        with pytest.raises(ExternalError, match="GpuFractioningConfig/default is absent"):
            gate.post_sync(incident.context(), objects(folder))
        sync(incident, folder)  # the retry's sync creates it; its PostSync half finishes
        result = gate.post_sync(incident.context(), objects(folder))
    assert result.ready == ["b200-0", "rtx-pro-6000-0"]
    assert holder(incident) is None


@pytest.mark.parametrize("where", ["planned", "guarded", "backed-up", "deleted", "gone"])
def test_interrupted_then_the_retry_converges(incident: Incident, where: str) -> None:
    folder = revision(incident)

    def stop(at: str) -> None:
        if at == where:
            raise KeyboardInterrupt

    with incident.operator():
        with pytest.raises(KeyboardInterrupt):
            gate.pre_sync(incident.context(), objects(folder), boundary=stop)
        mid = where in ("deleted", "gone")
        assert (holder(incident) is not None) == mid, holder(incident)
        retry = gate.pre_sync(incident.context(), objects(folder))  # Argo CD's retry
        assert retry.locked == (incident.cluster.live_target() is None and not mid) or mid
        if incident.cluster.live_target() is None:
            sync(incident, folder)
        gate.post_sync(incident.context(), objects(folder))
    live = incident.cluster.live_target()
    assert live is not None and live["spec"]["nodeSelector"] == NEW
    assert holder(incident) is None


def test_a_failure_after_the_delete_names_the_backup_the_retry_and_the_way_back(
    incident: Incident,
) -> None:
    folder = revision(incident)
    original = incident.cluster.live_target()
    assert original is not None
    saved = f"ConfigMap {NS}/{backup_name(original)}, key object.yaml"

    t = incident.cluster.config.target
    kube = incident.cluster.kube

    def fail_at(where: str) -> Any:
        def at(step: str) -> None:
            # The test's finalizer holds the deleted object until the retry has planned:
            # the retry then waits for it to go (a plan that finds it gone does nothing).
            if step == "backed-up":
                held = [*kube.get(t.ref, t.name)["metadata"]["finalizers"], "test.fracctl.io/hold"]
                kube.patch(t.ref, t.name, {"metadata": {"finalizers": held}})
            if step == "planned" and where == "gone":
                left = [f for f in kube.get(t.ref, t.name)["metadata"]["finalizers"]
                        if f != "test.fracctl.io/hold"]  # fmt: skip
                kube.patch(t.ref, t.name, {"metadata": {"finalizers": left or None}})
            if step == where:
                raise ExternalError(f"the API server went away at {step}")

        return at

    with incident.operator():
        with pytest.raises(ExternalError) as e:
            gate.pre_sync(incident.context(), objects(folder), boundary=fail_at("deleted"))
        said = str(e.value)
        assert f"GpuFractioningConfig/default was deleted (its copy: {saved})" in said, said
        assert "argocd app sync APP" in said and "revert the commit" in said, said
        assert holder(incident) == gate.gate_identity(incident.context())
        with pytest.raises(ExternalError) as e:  # the retry: the object already gone
            gate.pre_sync(incident.context(), objects(folder), boundary=fail_at("gone"))
        assert f"(its copy: {saved})" in str(e.value), str(e.value)
        gate.pre_sync(incident.context(), objects(folder))
        sync(incident, folder)
        with pytest.raises(ExternalError) as e:
            gate.post_sync(incident.context(), objects(folder), boundary=fail_at("verified"))
        assert "the lock stays held by the gate; Argo CD's retry" in str(e.value)
        gate.post_sync(incident.context(), objects(folder))
    assert holder(incident) is None
    assert incident.cluster.live_target()["spec"]["nodeSelector"] == NEW  # type: ignore[index]


def test_a_recreate_from_elsewhere_waits_for_the_gate(incident: Incident) -> None:
    folder = revision(incident)
    with incident.operator():
        gate.pre_sync(incident.context(), objects(folder))
        with pytest.raises(Unsafe, match="fracctl gate .sync hooks."):
            recreate(incident.context(), yes=True)


def test_the_refusal_of_an_unsafe_revision_changes_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    incident = make_incident(cluster, tmp_path, label_b200=False)
    folder = revision(incident)
    with pytest.raises(Refused, match="fracctl nodes label b200-0"):
        gate.pre_sync(incident.context(), objects(folder))
    assert incident.cluster.live_target()["spec"]["nodeSelector"] == OLD  # type: ignore[index]
    assert holder(incident) is None


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda root: root / "absent", "no such file or folder"),
        (lambda root: (root / "empty").mkdir() or root / "empty", "no manifests in it"),
    ],
)
def test_a_desired_path_without_manifests_is_usage(
    incident: Incident, make: Any, needle: str
) -> None:
    path = make(incident.root)
    r = run_cli("-c", str(incident.config_file), "gate", "pre-sync", "--desired", str(path))
    assert r.exit_code == ExitCode.USAGE, r.output
    assert needle in r.stderr and r.stderr.count("\n") == 1
    assert incident.cluster.kube.list(LEASES, namespace=NS) == []
