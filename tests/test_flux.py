"""Flux: revision matching (pure), and the adapter against the real API server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

import fracctl.adapters.flux as flux_module
from fracctl.adapters.flux import REQUESTED_AT, Flux, FluxReconcileFailed, revision_matches
from fracctl.errors import ExitCode, NotFound, Refused, TimedOut
from tests.flux_standin import FluxStandIn
from tests.helpers import Cluster, FakeClock

OLD = {"example.org/gpu-class": "rtx-pro-6000"}
NEW = {"example.org/gpu-fractions": "enabled"}


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def manifest(cluster: Cluster, selector: dict[str, str]) -> dict[str, Any]:
    t = cluster.config.target
    return {
        "apiVersion": t.api_version,
        "kind": t.kind,
        "metadata": {"name": t.name},
        "spec": {"nodeSelector": selector},
    }


def selector(cluster: Cluster) -> dict[str, str] | None:
    live = cluster.live_target()
    return None if live is None else live["spec"]["nodeSelector"]


# --- pure -----------------------------------------------------------------------------

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("applied", "want", "ok"),
    [
        (f"main@sha1:{SHA}", f"main@sha1:{SHA}", True),
        (f"main@sha1:{SHA}", f"sha1:{SHA}", True),
        (f"main@sha1:{SHA}", SHA, True),
        (f"main@sha1:{SHA}", SHA[:7], True),
        (f"main/{SHA}", SHA[:10], True),
        (f"main@sha1:{SHA}", SHA[:6], False),  # too short to mean anything
        (f"main@sha1:{SHA}", "fedcba9", False),
        ("", SHA, False),
        (f"main@sha1:{SHA}", "", False),
    ],
)
def test_revision_matches(applied: str, want: str, ok: bool) -> None:
    assert revision_matches(applied, want) is ok


# --- against the API server -----------------------------------------------------------


@pytest.fixture
def standin(cluster: Cluster) -> Iterator[FluxStandIn]:
    with FluxStandIn(kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)]) as s:
        yield s


def test_reconcile_applies_and_reports_ready(cluster: Cluster, standin: FluxStandIn) -> None:
    flux = Flux(cluster.kube, standin.namespace, standin.name)
    requested = flux.request_reconcile(now_iso())
    annotations = flux.get()["metadata"]["annotations"]
    assert annotations[REQUESTED_AT] == requested
    status = flux.wait_ready(requested, timeout=30, revision=standin.revision)
    assert status["lastHandledReconcileAt"] == requested
    assert status["lastAppliedRevision"] == standin.revision
    assert selector(cluster) == NEW
    assert "kustomization=flux-system/gpu-fractioning" in repr(flux)


def test_a_new_commit_is_applied_on_the_next_request(
    cluster: Cluster, standin: FluxStandIn
) -> None:
    flux = Flux(cluster.kube, standin.namespace, standin.name)
    first = flux.request_reconcile(now_iso())
    flux.wait_ready(first, timeout=30)
    cluster.wipe_target()
    revision = standin.set_manifests([manifest(cluster, OLD)])
    second = flux.request_reconcile(now_iso())
    status = flux.wait_ready(second, timeout=30, revision=revision)
    assert status["lastAppliedRevision"] == revision
    assert selector(cluster) == OLD


def test_immutable_rejection_is_ready_false(cluster: Cluster, standin: FluxStandIn) -> None:
    cluster.target(OLD)
    flux = Flux(cluster.kube, standin.namespace, standin.name)
    requested = flux.request_reconcile(now_iso())
    with pytest.raises(FluxReconcileFailed) as e:
        flux.wait_ready(requested, timeout=30)
    assert "ReconciliationFailed" in str(e.value)
    assert "nodeSelector is immutable" in str(e.value)
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert e.value.status["lastHandledReconcileAt"] == requested
    assert selector(cluster) == OLD


def test_other_revision_applied_is_reported(cluster: Cluster, standin: FluxStandIn) -> None:
    flux = Flux(cluster.kube, standin.namespace, standin.name)
    requested = flux.request_reconcile(now_iso())
    with pytest.raises(FluxReconcileFailed, match="not 0000000") as e:
        flux.wait_ready(requested, timeout=30, revision="0000000")
    assert "--with-source" in str(e.value)


def test_a_controller_that_never_handles_times_out(cluster: Cluster) -> None:
    with FluxStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], stuck=True
    ) as s:
        flux = Flux(cluster.kube, s.namespace, s.name)
        requested = flux.request_reconcile(now_iso())
        clock = FakeClock()
        with pytest.raises(TimedOut) as e:
            flux.wait_ready(requested, timeout=5, clock=clock)
    assert f"has not handled the request {requested}" in str(e.value)
    assert "last handled: none" in str(e.value)
    assert "kustomize-controller running" in str(e.value)
    assert clock.t == pytest.approx(5)
    assert cluster.live_target() is None


def test_handled_but_never_settled_times_out(cluster: Cluster) -> None:
    with FluxStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], stuck=True
    ) as s:
        flux = Flux(cluster.kube, s.namespace, s.name)
        requested = flux.request_reconcile(now_iso())
        cluster.kube.patch(
            flux.ref,
            s.name,
            {
                "status": {
                    "lastHandledReconcileAt": requested,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "Unknown",
                            "reason": "Progressing",
                            "message": "Reconciliation in progress",
                        }
                    ],
                }
            },
            namespace=s.namespace,
            subresource="status",
        )
        with pytest.raises(TimedOut, match="Ready=Unknown \\(Progressing"):
            flux.wait_ready(requested, timeout=3, clock=FakeClock())
        cluster.kube.patch(
            flux.ref,
            s.name,
            {"status": {"conditions": None}},
            namespace=s.namespace,
            subresource="status",
        )
        with pytest.raises(TimedOut, match="no Ready condition"):
            flux.wait_ready(requested, timeout=3, clock=FakeClock())


def test_suspended_kustomization_is_refused(cluster: Cluster) -> None:
    with FluxStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], suspend=True
    ) as s:
        flux = Flux(cluster.kube, s.namespace, s.name)
        with pytest.raises(Refused, match="suspended") as e:
            flux.request_reconcile(now_iso())
    assert "flux resume kustomization" in str(e.value)
    assert e.value.exit_code == ExitCode.FINDING


def test_missing_kustomization_is_not_found(cluster: Cluster, standin: FluxStandIn) -> None:
    flux = Flux(cluster.kube, standin.namespace, "no-such-kustomization")
    with pytest.raises(NotFound) as e:
        flux.request_reconcile(now_iso())
    assert "flux.kustomization" in str(e.value)


def test_no_flux_api_is_not_found_with_advice(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flux_module, "API_VERSION", "kustomize.toolkit.fluxcd.io/v9")
    flux = Flux(cluster.kube, "flux-system", "gpu-fractioning")
    with pytest.raises(NotFound, match="is Flux installed"):
        flux.get()
