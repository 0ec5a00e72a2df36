"""The contract between tests/support/flux_standin.py and the real kustomize-controller.

The same two reconciles on both: git's commit against the old object (the immutable
selector fails the apply), then again once the object is gone (Flux creates it). The
status fields the flux backend and the adapter read must agree in kind and words; the
revision's commit and the timestamps naturally differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

import pytest

from fracctl.adapters.flux import Flux, FluxReconcileFailed
from fracctl.flows.render import render_desired
from tests.support.flux_real import ready
from tests.support.flux_standin import FluxStandIn
from tests.support.recreate_fixtures import Incident

Obj = dict[str, Any]


@contextmanager
def kustomization(kind: str, incident: Incident, request: pytest.FixtureRequest) -> Iterator[Flux]:
    kube = incident.cluster.kube
    if kind == "real":
        with request.getfixturevalue("real_flux").serving(incident, settle=False) as served:
            yield Flux(kube, served.namespace, served.name)
    else:
        desired = render_desired(incident.context())
        with FluxStandIn(kubeconfig=incident.cluster.kubeconfig, manifests=desired) as s:
            yield Flux(kube, s.namespace, s.name)


def shape(ks: Obj) -> Obj:
    """What fracctl reads of a Kustomization's status, without commits and times."""
    st = ks.get("status") or {}
    generation = ks["metadata"]["generation"]
    out: Obj = {}
    for kind in ("Ready", "Reconciling"):
        c = ready(ks, kind)
        out[kind] = c and {
            "status": c["status"],
            "reason": c["reason"],
            "judged this generation": c.get("observedGeneration") == generation,
        }
    message = str(ready(ks).get("message") or "")
    out["message"] = message.split(":", 1)[0]
    out["message ends in a newline"] = message.endswith("\n")
    out["status.observedGeneration"] = (
        "current" if st.get("observedGeneration") == generation else st.get("observedGeneration")
    )
    out["applied"] = str(st.get("lastAppliedRevision") or "").split("@")[0] or None
    out["attempted"] = str(st.get("lastAttemptedRevision") or "").split(":")[0] or None
    return out


def reconcile(flux: Flux) -> Obj:
    token = flux.request_reconcile(datetime.now(timezone.utc).isoformat())
    try:
        flux.wait_ready(token, timeout=60)
    except FluxReconcileFailed:
        pass
    ks = flux.get()
    assert ks["status"]["lastHandledReconcileAt"] == token
    return ks


@pytest.fixture(params=["standin", pytest.param("real", marks=pytest.mark.e2e)])
def seen(request: pytest.FixtureRequest, real_incident: Incident) -> list[Obj]:
    with real_incident.operator(), kustomization(request.param, real_incident, request) as flux:
        failed = shape(reconcile(flux))
        real_incident.cluster.wipe_target()
        applied = shape(reconcile(flux))
    return [failed, applied]


def test_the_stand_in_reports_what_the_real_controller_reports(seen: list[Obj]) -> None:
    failed, applied = seen
    assert failed == {
        "Ready": {
            "status": "False",
            "reason": "ReconciliationFailed",
            "judged this generation": True,
        },
        "Reconciling": {
            "status": "True",
            "reason": "ProgressingWithRetry",
            "judged this generation": True,
        },
        "message": "GpuFractioningConfig/default dry-run failed (Invalid)",
        "message ends in a newline": True,
        "status.observedGeneration": -1,
        "applied": None,
        "attempted": "main@sha1",
    }
    assert applied == {
        "Ready": {
            "status": "True",
            "reason": "ReconciliationSucceeded",
            "judged this generation": True,
        },
        "Reconciling": {},
        "message": "Applied revision",
        "message ends in a newline": False,
        "status.observedGeneration": "current",
        "applied": "main",
        "attempted": "main@sha1",
    }
