"""When a DaemonSet has rolled out, and when the operator has acted on the config."""

from __future__ import annotations

from typing import Any

from fracctl.flows.recreate.rollout import daemonset_pending, observed_generation


def ds(generation: int = 2, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "gpu-fractioning-mpsd", "namespace": "gpu-fractioning",
                     "generation": generation},
        "status": {"observedGeneration": 2, "desiredNumberScheduled": 2,
                   "updatedNumberScheduled": 2, "numberReady": 2, **status},
    }  # fmt: skip


def test_rolled_out_when_every_scheduled_pod_is_updated_and_ready() -> None:
    assert daemonset_pending(ds()) == ""


def test_not_while_its_controller_has_not_seen_the_new_template() -> None:
    said = daemonset_pending(ds(generation=3))
    assert "has not yet seen generation 3" in said


def test_not_while_a_pod_is_old_or_unready() -> None:
    assert "1 of 2 pod(s) updated, 2 ready" in daemonset_pending(ds(updatedNumberScheduled=1))
    assert "2 of 2 pod(s) updated, 1 ready" in daemonset_pending(ds(numberReady=1))
    assert daemonset_pending(ds(numberUnavailable=1))


def test_the_operator_acted_on_a_generation_by_its_status() -> None:
    assert observed_generation({"status": {"observedGeneration": 4}}) == 4
    conditions = [{"type": "Ready", "observedGeneration": 3}, {"type": "MpsdReady"}]
    assert observed_generation({"status": {"conditions": conditions}}) == 3
    assert observed_generation({"status": {}}) is None
