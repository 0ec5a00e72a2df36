"""The gate keeps the rollout's order: a later step's PreSync refuses until every cluster
of every earlier step runs the revision.

The hub here is the test's own API server with Argo CD's real CRDs: the ApplicationSet
and its Applications carry the status Argo CD v3.2 writes (the real controllers' own run
is tests/argocd/test_argocd_gate_e2e.py); the revision rolls the daemons (a second
toleration), so the gate has work to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fracctl.errors import ExitCode, Refused, UsageError
from fracctl.flows import gate
from fracctl.flows.appset import APPLICATIONS, APPSETS
from fracctl.flows.engines import clean_desired
from fracctl.flows.gate import order
from fracctl.sandbox import argocd_local
from tests.gate.test_gate_restarts_cluster import lease, revision
from tests.recreate.test_restarts_daemons_cluster import daemon_pods, incident_without_b200, settled
from tests.support.argocd_real import require_built
from tests.support.helpers import Cluster, ensure_namespace, run_cli
from tests.support.recreate_fixtures import Incident

HUB = "fracctl-hub-test"  # a namespace Argo CD does not watch: the status is the test's
NEW, OLD = "b" * 40, "a" * 40
TRACKING = "gated-ap:/Pod:fracctl/fracctl-gate-pre-sync"


@pytest.fixture
def incident(cluster: Cluster, tmp_path: Path) -> Incident:
    binaries, _ = require_built()
    argocd_local.install_crds(cluster.kube, binaries / "crds")
    ensure_namespace(cluster.kube, HUB)
    return incident_without_b200(cluster, tmp_path)


def fleet_dir(incident: Incident, *, kubeconfig: bool = True) -> Path:
    folder = incident.root / "fleet"
    folder.mkdir(exist_ok=True)
    if kubeconfig:
        (folder / "kubeconfig").write_text(Path(incident.cluster.kubeconfig).read_text())
        (folder / "namespace").write_text(HUB + "\n")
    return folder


def status(*, compared: str, last: str, phase: str = "Succeeded") -> dict[str, Any]:
    return {"sync": {"status": "Synced", "revision": compared}, "health": {"status": "Healthy"},
            "operationState": {"phase": phase, "operation": {"sync": {}},
                               "startedAt": "2026-12-07T20:00:00Z",
                               "syncResult": {"revision": last}}}  # fmt: skip


def hub(kube: Any, *, canary_at: str, strategy: str = "RollingSync", syncing: str = NEW) -> None:
    """The ApplicationSet (canary step 1, ap step 2) and its two Applications."""
    for ref in (APPLICATIONS, APPSETS):
        for obj in kube.list(ref, namespace=HUB):
            kube.delete(ref, obj["metadata"]["name"], HUB)
    entries = [{"application": a, "step": step, "status": st, "message": "m",
                "targetRevisions": [NEW]}
               for a, step, st in (("gated-canary", "1", "Healthy"),
                                   ("gated-ap", "2", "Progressing"))]  # fmt: skip
    owner = kube.create(APPSETS, {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "gated", "namespace": HUB},
        "spec": {"generators": [], "template": {"metadata": {}, "spec": {
            "project": "default", "destination": {}}}, "strategy": {"type": strategy}},
    })  # fmt: skip
    kube.patch(
        APPSETS,
        "gated",
        {"status": {"applicationStatus": entries}},
        namespace=HUB,
        subresource="status",
    )  # fmt: skip  (a subresource of the ApplicationSet's CRD)
    ref = {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": "gated",
           "uid": owner["metadata"]["uid"]}  # fmt: skip
    for name, st in (
        ("gated-canary", status(compared=canary_at, last=canary_at)),
        ("gated-ap", status(compared=NEW, last=syncing, phase="Running")),
    ):
        kube.create(APPLICATIONS, {
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": HUB, "ownerReferences": [ref]},
            "spec": {"project": "default", "destination": {}, "source": {"repoURL": "x"}},
            "status": st,
        })  # fmt: skip


def test_a_later_step_is_refused_until_the_canary_runs_the_revision(incident: Incident) -> None:
    folder, fleet = revision(incident), fleet_dir(incident)
    with incident.operator():
        before = settled(incident.cluster)
        hub(incident.cluster.kube, canary_at=OLD)
        with pytest.raises(Refused) as refused:
            gate.pre_sync(incident.context(), gate.read_desired(folder), fleet=fleet,
                          tracking=TRACKING)  # fmt: skip
        said = str(refused.value)
        assert "rollout-order: gated-ap would sync bbbbbbb before the steps ahead" in said
        assert "gated-canary (step 1): Argo CD compares it with aaaaaaa" in said
        assert " -> let the earlier steps finish this revision first" in said
        assert daemon_pods(incident.cluster) == before, "nothing changed"
        assert not (lease(incident).get("spec") or {}).get("holderIdentity"), "no lock taken"
        # The canary runs it: the same hook goes on, arms the update, and the sync runs.
        hub(incident.cluster.kube, canary_at=NEW)
        first = gate.pre_sync(incident.context(), gate.read_desired(folder), fleet=fleet,
                              tracking=TRACKING)  # fmt: skip
        assert "rollout order: every cluster of the steps before gated-ap's runs bbbbbbb" in (
            first.lines), first.lines  # fmt: skip
        assert first.locked and first.reason == "restarts-daemons"
        (obj,) = gate.read_desired(folder)
        incident.cluster.kube.apply(incident.cluster.config.target.ref, clean_desired(obj))
        second = gate.post_sync(incident.context(), gate.read_desired(folder))
        assert second.ready == ["rtx-pro-6000-0"]
    assert not (lease(incident).get("spec") or {}).get("holderIdentity")


def test_the_refusal_is_the_hooks_termination_message(
    incident: Incident, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, fleet = revision(incident), fleet_dir(incident)
    log = incident.root / "termination-log"
    log.write_text("")
    hub(incident.cluster.kube, canary_at=OLD)
    monkeypatch.setenv("FRACCTL_GATE_TRACKING_ID", TRACKING)
    r = run_cli("-c", str(incident.config_file), "gate", "pre-sync", "--desired", str(folder),
                "--fleet", str(fleet), "--termination-log", str(log))  # fmt: skip
    assert r.exit_code == ExitCode.FINDING, r.output
    assert log.read_text().startswith(
        "fracctl gate pre-sync: rollout order refused, nothing changed: rollout-order: "
    )


def test_without_a_hub_mounted_the_order_is_argo_cds_alone(incident: Incident) -> None:
    ctx = incident.context()
    assert order.check_order(ctx, None, "") == ""
    line = order.check_order(ctx, fleet_dir(incident, kubeconfig=False), "")
    assert line.startswith("no fleet hub mounted (Secret fracctl-gate-fleet)")


@pytest.mark.parametrize("tracking", ["", "not-a-tracking-id"])
def test_a_hub_without_the_pods_tracking_id_is_a_usage_error(
    incident: Incident, tracking: str
) -> None:
    with pytest.raises(UsageError, match="this pod carries no Argo CD tracking id"):
        order.check_order(incident.context(), fleet_dir(incident), tracking)


def test_an_application_the_hub_lacks_is_a_usage_error(incident: Incident) -> None:
    hub(incident.cluster.kube, canary_at=NEW)
    with pytest.raises(UsageError, match=f"no Application {HUB}/gated-eu on the fleet's hub") as e:
        order.check_order(incident.context(), fleet_dir(incident), "gated-eu:/Pod:fracctl/x")
    assert f"reading the fleet's hub for the rollout's order ({HUB}/gated-eu)" in str(e.value)


def test_all_at_once_has_no_order_to_keep(incident: Incident) -> None:
    hub(incident.cluster.kube, canary_at=OLD, strategy="AllAtOnce")
    line = order.check_order(incident.context(), fleet_dir(incident), TRACKING)
    assert line == "ApplicationSet gated syncs all at once: no rollout order to keep"


def test_a_revision_argo_cd_has_not_resolved_is_refused(
    incident: Incident, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(order, "RESOLVE_SECONDS", 0.0)
    hub(incident.cluster.kube, canary_at=NEW, syncing="")
    with pytest.raises(Refused, match="Argo CD has not resolved the revision gated-ap syncs"):
        order.check_order(incident.context(), fleet_dir(incident), TRACKING)
