"""Whether the operator that releases the finalizer runs and leads: pure judgements."""

from __future__ import annotations

from typing import Any

import pytest

from fracctl.core.recreate.operator import deployment_available, lease_renewed

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
WHERE = "gpu-fractioning/gpu-fractioning.kai.scheduler"


def lease(**spec: Any) -> dict[str, Any]:
    base = {
        "holderIdentity": "operator-7d9f_1",
        "leaseDurationSeconds": 15,
        "renewTime": "2027-01-15T07:59:58.500000Z",
    }
    return {"spec": {**base, **spec}}


def test_a_lease_renewed_within_its_duration_leads() -> None:
    v = lease_renewed(lease(), WHERE, now=NOW)
    assert v.ok
    assert v.text == f"the operator leads: Lease {WHERE} renewed 1.5s ago by operator-7d9f_1"


def test_a_lease_older_than_its_duration_does_not() -> None:
    v = lease_renewed(lease(renewTime="2027-01-15T07:59:40Z"), WHERE, now=NOW)
    assert not v.ok
    assert "last renewed 20s ago by operator-7d9f_1, longer than its 15s duration" in v.text
    assert "no replica leads" in v.text


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({"holderIdentity": ""}, "has no holder or no renewal"),
        ({"renewTime": None}, "has no holder or no renewal"),
        ({"renewTime": "yesterday"}, "has no holder or no renewal"),
        ({"leaseDurationSeconds": None}, "has no holder or no renewal"),
    ],
)
def test_a_lease_without_holder_or_renewal_does_not_lead(spec: dict[str, Any], why: str) -> None:
    v = lease_renewed(lease(**spec), WHERE, now=NOW)
    assert not v.ok and why in v.text


def test_a_missing_lease_does_not_lead() -> None:
    v = lease_renewed(None, WHERE, now=NOW)
    assert not v.ok and v.text.endswith(f"Lease {WHERE} does not exist")


def deployment(available: int, cond: str | None = "True", **extra: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"availableReplicas": available}
    if cond is not None:
        status["conditions"] = [{"type": "Available", "status": cond, **extra}]
    return {"status": status}


def test_an_available_deployment() -> None:
    v = deployment_available(deployment(1), "gpu-fractioning/gpu-fractioning")
    assert v.ok and "has 1 available replica(s)" in v.text


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        (None, "does not exist"),
        (deployment(0), "has 0 available replicas"),
        (
            deployment(1, "False", reason="MinimumReplicasUnavailable", message="down"),
            "has 1 available replicas: MinimumReplicasUnavailable down",
        ),
        ({"status": {}}, "has 0 available replicas"),
    ],
)
def test_an_unavailable_deployment(obj: dict[str, Any] | None, why: str) -> None:
    v = deployment_available(obj, "gpu-fractioning/gpu-fractioning")
    assert not v.ok and why in v.text, v.text
