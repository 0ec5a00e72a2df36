"""Flux: revision matching (pure), and the adapter's timeouts against the stand-in.

The adapter against the real Flux is in test_flux_e2e.py; here only what the real
controllers cannot be made to do while they run for the whole session: never handle a
request, or handle it and never settle (the stand-in, held to the real one by
test_flux_contract.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

import fracctl.adapters.flux as flux_module
from fracctl.adapters.flux import Flux, revision_matches
from fracctl.core.clock import following
from fracctl.errors import NotFound, TimedOut
from tests.support.flux_standin import FluxStandIn
from tests.support.helpers import Cluster, FakeClock

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


def test_a_recreate_follows_the_reconcile_at_short_delays(cluster: Cluster) -> None:
    """The delays the flux backend's recreate passes: never more than 0.5 s between reads."""
    with FluxStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], stuck=True
    ) as s:
        flux = Flux(cluster.kube, s.namespace, s.name)
        requested = flux.request_reconcile(now_iso())
        clock = FakeClock()
        with pytest.raises(TimedOut):
            flux.wait_ready(requested, timeout=3, clock=clock, backoff=following())
    assert clock.sleeps[:3] == [0.1, pytest.approx(0.15), pytest.approx(0.225)]
    assert max(clock.sleeps) == 0.5
    assert clock.t == pytest.approx(3)


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
                            "lastTransitionTime": now_iso(),
                            "observedGeneration": 1,
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


def test_no_flux_api_is_not_found_with_advice(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flux_module, "API_VERSION", "kustomize.toolkit.fluxcd.io/v9")
    flux = Flux(cluster.kube, "flux-system", "gpu-fractioning")
    with pytest.raises(NotFound, match="is Flux installed"):
        flux.get()


@pytest.mark.parametrize(
    ("reason", "stalled", "final"),
    [
        ("DependencyNotReady", False, False),
        ("ArtifactFailed", False, False),
        ("ProgressingWithRetry", False, False),
        ("ArtifactFailed", True, True),  # access denied: Flux marks it Stalled
        ("ReconciliationFailed", False, True),
    ],
)
def test_a_transient_reason_is_not_final(
    cluster: Cluster, reason: str, stalled: bool, final: bool
) -> None:
    from fracctl.adapters.flux import FluxReconcileFailed

    with FluxStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], stuck=True
    ) as s:
        flux = Flux(cluster.kube, s.namespace, s.name)
        requested = flux.request_reconcile(now_iso())
        # As kustomize-controller writes them: each condition carries its generation (the
        # real CRD defaults status.observedGeneration to -1 until a try succeeds).
        ready = {"type": "Ready", "status": "False", "reason": reason, "message": "m",
                 "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}  # fmt: skip
        conds = [ready]
        if stalled:
            conds.append({**conds[0], "type": "Stalled", "status": "True"})
        cluster.kube.patch(
            flux.ref, s.name,
            {"status": {"lastHandledReconcileAt": requested, "conditions": conds}},
            namespace=s.namespace, subresource="status",
        )  # fmt: skip
        want = FluxReconcileFailed if final else TimedOut
        with pytest.raises(want, match=reason):
            flux.wait_ready(requested, timeout=3, clock=FakeClock())


def test_a_repeated_token_is_made_unique(cluster: Cluster) -> None:
    """A token the controller handled already would read as handled, with the old verdict."""
    with FluxStandIn(
        kubeconfig=cluster.kubeconfig, manifests=[manifest(cluster, NEW)], stuck=True
    ) as s:
        flux = Flux(cluster.kube, s.namespace, s.name)
        first = flux.request_reconcile("2026-12-02T15:42:23Z")
        second = flux.request_reconcile("2026-12-02T15:42:23Z")
        third = flux.request_reconcile()
    assert first == "2026-12-02T15:42:23Z"
    assert second != first and second.endswith("Z") and "." in second  # microseconds
    assert third not in (first, second)
