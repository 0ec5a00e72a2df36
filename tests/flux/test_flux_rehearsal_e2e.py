"""The flux backend's rehearsal, second round, against the REAL Flux: prove that Flux will
act before the delete (kustomize-controller v1.9.6, fluxcd/pkg ssa v0.76.2).

Each refusal leaves the live object untouched (same uid, no deletionTimestamp) under both
``--dry-run`` and ``--yes``; the positive controls converge with no step by hand.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from fracctl.core.kube.resources import ResourceRef
from fracctl.errors import ExitCode
from tests.support.flux_real import RealFlux, ready
from tests.support.helpers import commit_all, run_cli
from tests.support.recreate_fixtures import NEW, OLD, Incident

pytestmark = pytest.mark.e2e


def live_of(incident: Incident) -> dict[str, Any]:
    live = incident.cluster.live_target()
    assert live is not None, "the live object is gone"
    return live


def refused(incident: Incident, config: str, needle: str) -> str:
    uid = live_of(incident)["metadata"]["uid"]
    said = ""
    for mode in ("--dry-run", "--yes"):
        r = run_cli("-c", config, "recreate", "--backend", "flux", mode)
        print(r.stderr)
        assert r.exit_code == ExitCode.FINDING, r.output
        assert needle in r.stderr, r.stderr
        assert "nothing was deleted or changed" in r.stderr
        said = r.stderr
    live = live_of(incident)
    assert live["metadata"]["uid"] == uid and not live["metadata"].get("deletionTimestamp")
    assert live["spec"]["nodeSelector"] == OLD
    return said


def converges(incident: Incident, config: str) -> dict[str, Any]:
    uid = live_of(incident)["metadata"]["uid"]
    r = run_cli("-c", config, "recreate", "--backend", "flux", "--yes", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    live = live_of(incident)
    assert live["metadata"]["uid"] != uid and live["spec"]["nodeSelector"] == NEW
    return dict(r.json)


@contextmanager
def frozen(real_flux: RealFlux, name: str) -> Iterator[None]:
    """The controller process stopped (SIGSTOP): it runs no reconcile until thawed."""
    pid = real_flux.local.pids[name]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_stopped_kustomize_controller_refuses_then_converges_once_it_runs(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    real_incident.edit_config(timeouts={"sync": "20s"})
    with real_incident.operator(), real_flux.serving(real_incident) as served:
        config = served.configure(real_incident)
        with frozen(real_flux, "kustomize-controller"):
            said = refused(real_incident, config, "did not handle a reconcile request within 20s")
        assert "no kustomize-controller runs for it now" in said
        out = converges(real_incident, config)  # the same run, the controller back
    assert any("kustomize-controller handled a reconcile request" in p for p in out["proofs"])


def test_git_marking_the_object_for_flux_to_skip_refuses(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    f = real_incident.root / "gitops" / "gpu-fractioning" / "gpufractioningconfig.yaml"
    text = f.read_text().replace(
        "metadata:\n  name: default\n",
        "metadata:\n  name: default\n  annotations:\n"
        "    kustomize.toolkit.fluxcd.io/reconcile: disabled\n",
    )
    f.write_text(text)
    commit_all(real_incident.root / "gitops", message="Flux, leave it")
    with real_incident.operator(), real_flux.serving(real_incident) as served:
        refused(
            real_incident,
            served.configure(real_incident),
            "carries kustomize.toolkit.fluxcd.io/reconcile: disabled: Flux skips it",
        )


def test_an_identity_flux_applies_as_that_may_not_create_refuses(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    accounts = ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True)
    kube = real_flux.kube
    body = {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "tenant", "namespace": "flux-system"}}  # fmt: skip
    kube.create(accounts, body)
    try:
        with (
            real_incident.operator(),
            real_flux.serving(real_incident, serviceAccountName="tenant", settle=False) as served,
        ):
            refused(
                real_incident,
                served.configure(real_incident),
                "Flux applies as system:serviceaccount:flux-system:tenant, which may not create",
            )
    finally:
        kube.delete(accounts, "tenant", "flux-system")


def test_a_dependency_judged_by_cel_refuses(real_incident: Incident, real_flux: RealFlux) -> None:
    dep = [{"name": "infrastructure", "readyExpr": "dep.status.conditions.all(c, true)"}]
    with (
        real_incident.operator(),
        real_flux.serving(real_incident, dependsOn=dep, settle=False) as served,
    ):
        refused(real_incident, served.configure(real_incident), "by a readyExpr (CEL)")


def test_a_kustomization_that_fails_for_more_than_the_selector_refuses(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    """Git also holds an object the API server refuses: Flux stops at it."""
    bad = real_incident.root / "gitops" / "gpu-fractioning" / "broken.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: broken\n  namespace: default\n"
        "spec:\n  ports:\n    - port: 70000\n"  # out of range: the API server refuses it
    )
    kust = real_incident.root / "gitops" / "gpu-fractioning" / "kustomization.yaml"
    if kust.exists():
        kust.write_text(kust.read_text() + "  - broken.yaml\n")
    commit_all(real_incident.root / "gitops", message="and a broken ConfigMap")
    with real_incident.operator(), real_flux.serving(real_incident) as served:
        cond = ready(served.kustomization())
        print(cond)
        said = refused(real_incident, served.configure(real_incident), "broken")
    assert "the target would not be recreated" in said or "fails for more than" in said


def test_recreate_through_flux_with_prune_converges(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    with real_incident.operator(), real_flux.serving(real_incident, prune=True) as served:
        out = converges(real_incident, served.configure(real_incident))
        ks = served.kustomization()
    assert ready(ks)["status"] == "True"
    proofs = "\n".join(out["proofs"])
    assert "Flux applies as system:serviceaccount:flux-system:kustomize-controller" in proofs
    assert "no marker that makes Flux skip it" in proofs
    assert "its last verdict fails only on GpuFractioningConfig/default's immutable" in proofs


def test_git_marking_the_object_ssa_ignore_refuses(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    f = real_incident.root / "gitops" / "gpu-fractioning" / "gpufractioningconfig.yaml"
    text = f.read_text().replace(
        "metadata:\n  name: default\n",
        "metadata:\n  name: default\n  labels:\n    kustomize.toolkit.fluxcd.io/ssa: Ignore\n",
    )
    f.write_text(text)
    commit_all(real_incident.root / "gitops", message="Flux, ignore it")
    with real_incident.operator(), real_flux.serving(real_incident) as served:
        refused(
            real_incident,
            served.configure(real_incident),
            "kustomize.toolkit.fluxcd.io/ssa: Ignore",
        )


def test_a_kustomization_for_another_cluster_refuses(
    real_incident: Incident, real_flux: RealFlux
) -> None:
    remote = {"secretRef": {"name": "remote-kubeconfig"}}
    with (
        real_incident.operator(),
        real_flux.serving(real_incident, kubeConfig=remote, settle=False) as s,
    ):
        refused(
            real_incident,
            s.configure(real_incident),
            "applies to another cluster (spec.kubeConfig)",
        )


def test_a_forced_kustomization_without_leases_is_not_asked(
    real_guarded: Incident, real_flux: RealFlux
) -> None:
    """With spec.force, a reconcile request would make Flux delete the object itself (the
    guard policy refuses it here): fracctl does not ask, and refuses without Leases."""
    incident = real_guarded
    with incident.operator(), real_flux.serving(incident, force=True) as served:
        refused(incident, served.configure(incident), "has spec.force, and flux.leases names")
