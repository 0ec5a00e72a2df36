"""KAI's refusals, word for word from its source, and fracctl's reading of them."""

from __future__ import annotations

from fracctl.core.fractions import kai_words as kai
from fracctl.flows.guards.probe import PodProbeResult
from fracctl.flows.guards.probe_pod import PodFate, decide

# pkg/scheduler/plugins/gpusharingnodevalidation/gpusharingnodevalidation.go
# (kai-scheduler/KAI-Scheduler): checkNvFractionalGPUReadyCondition
GO_NOT_READY = (
    '"node is not ready for fractional GPU scheduling. Condition %s is %s. Reason: %s. Message: %s"'
)
GO_MISSING = ("v1.ConditionUnknown", 'fractionalGPUReadyReasonMissing = "ConditionNotFound"')
# pkg/scheduler/api/common_info/errors.go: ResourcesWereNotFoundMsg, TasksFitErrors.Error
GO_RESOURCES = 'ResourcesWereNotFoundMsg = "no nodes with enough resources were found"'
GO_HISTOGRAM = (
    'fmt.Sprintf("%v %v", v, k)',
    'fmt.Sprintf(": %v.", strings.Join(nodeReasonsHistogram, ". \\n"))',
)
# pkg/common/constants: NvFractionNodeReadyConditionType (older releases: gpu-sharing.…)
COND = "gpu-fractioning.nvidia.com/Ready"
OLD_COND = "gpu-sharing.nvidia.com/Ready"


def test_the_format_strings_are_kais() -> None:
    assert f'"{kai.NOT_READY_FORMAT}"' == GO_NOT_READY
    assert kai.MISSING_STATUS == "Unknown" and f'"{kai.MISSING_REASON}"' in GO_MISSING[1]
    assert f'"{kai.RESOURCES_NOT_FOUND}"' in GO_RESOURCES
    assert kai.NOT_READY_FORMAT.startswith(kai.NOT_READY + ". ")


def test_a_missing_condition_reads_as_kai_writes_it() -> None:
    assert kai.not_ready(COND, kai.MISSING_STATUS, kai.MISSING_REASON, "") == (
        "node is not ready for fractional GPU scheduling. Condition "
        f"{COND} is Unknown. Reason: ConditionNotFound. Message: "
    )


def test_the_summary_of_every_node_is_kais_histogram() -> None:
    # The expected text of KAI's own test (gpusharingnodevalidation_test.go), before
    # the message was added to the format, is rebuilt the way TasksFitErrors.Error does.
    old = "node is not ready for fractional GPU scheduling. Condition %s is False. Reason: %s"
    reasons = [old % (OLD_COND, "DevicePluginNotReady"), old % (OLD_COND, "NoConfigMap")]
    assert kai.fit_errors(reasons) == (
        "no nodes with enough resources were found: "
        f"1 node is not ready for fractional GPU scheduling. Condition {OLD_COND} is False. "
        "Reason: DevicePluginNotReady. \n"
        f"1 node is not ready for fractional GPU scheduling. Condition {OLD_COND} is False. "
        "Reason: NoConfigMap."
    )
    assert kai.fit_errors([kai.NO_MATCH] * 3) == (
        "no nodes with enough resources were found: "
        "3 node(s) didn't match Pod's node affinity/selector."
    )


def test_each_refusal_is_read_back_in_both_forms() -> None:
    missing = kai.not_ready(COND, "Unknown", "ConditionNotFound", "")
    down = kai.not_ready(COND, "False", "DaemonNotRunning", "mps-control-daemon exited. Again")
    text = kai.fit_errors([missing, missing, down])
    found = kai.not_ready_in(text)
    assert [(r.status, r.reason, r.message) for r in found] == [  # KAI sorts "1 …" first
        ("False", "DaemonNotRunning", "mps-control-daemon exited. Again"),
        ("Unknown", "ConditionNotFound", ""),
    ]
    assert found[1].missing and not found[0].missing
    old = f"{kai.NOT_READY}. Condition {COND} is False. Reason: NoConfigMap"
    assert kai.not_ready_in(kai.fit_errors([old]))[0].reason == "NoConfigMap"


def pending(message: str) -> dict[str, object]:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    return {"status": {"phase": "Pending", "conditions": [{**condition, "message": message}]}}


def test_probe_classifies_kais_real_texts() -> None:
    missing = kai.fit_errors([kai.not_ready(COND, "Unknown", "ConditionNotFound", "")] * 2)
    outcome, reason, message = decide(pending(missing))  # type: ignore[misc]
    assert (outcome, reason) == (PodFate.NOT_READY, "Unschedulable")
    pool = {"gpu": "b200"}
    result = PodProbeResult(
        "p", "ns", {"gpu-memory": "1024"}, pool, PodFate.NOT_READY, message=message
    )
    assert result.summary().endswith(f"({COND} is missing)")
    none = kai.fit_errors([kai.NO_MATCH] * 3)
    assert decide(pending(none))[0] is PodFate.UNSCHEDULABLE  # type: ignore[index]
