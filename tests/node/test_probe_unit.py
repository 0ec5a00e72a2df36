"""The probe pod and the reading of its status, as plain data."""

from __future__ import annotations

import pytest

from fracctl import config as cfg
from fracctl.core.fractions.kai_words import NOT_READY
from fracctl.errors import ExitCode, UsageError
from fracctl.flows.guards.probe import EXPECT, PodProbeResult
from fracctl.flows.guards.probe_pod import (
    PodFate,
    decide,
    fraction_request,
    parse_memory,
    probe_pod,
    toleration,
)


@pytest.mark.parametrize(
    ("text", "mib"), [("4Gi", 4096), ("4096Mi", 4096), ("4096", 4096), ("1Ti", 1048576)]
)
def test_memory_is_mib(text: str, mib: int) -> None:
    assert parse_memory(text) == mib


@pytest.mark.parametrize("text", ["4G", "4GB", "-1Gi", "0", "four", ""])
def test_bad_memory(text: str) -> None:
    with pytest.raises(UsageError):
        parse_memory(text)


def test_fraction_request() -> None:
    assert fraction_request(memory=None, fraction=0.25) == {"gpu-fraction": "0.25"}
    assert fraction_request(memory="3Gi", fraction=None) == {"gpu-memory": "3072"}
    with pytest.raises(UsageError):
        fraction_request(memory=None, fraction=None)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("gpu:NoSchedule", {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}),
        ("a=b:NoExecute", {"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute"}),
        ("a", {"key": "a", "operator": "Exists"}),
        (":NoSchedule", {"operator": "Exists", "effect": "NoSchedule"}),
    ],
)  # fmt: skip
def test_toleration(spec: str, want: dict[str, str]) -> None:
    assert toleration(spec) == want


def test_bad_toleration_in_config_names_the_key() -> None:
    with pytest.raises(cfg.ConfigError) as e:
        cfg.load(env={"FRACCTL_PROBE_TOLERATIONS": "a=b:Sometimes"})
    assert "probe" in str(e.value) and "tolerations" in str(e.value)


def test_probe_pod_is_non_root_and_read_only() -> None:
    c = cfg.Config()
    pod = probe_pod(
        c, name="fracctl-probe-1", request={"gpu-fraction": "0.5"}, pool={"a": "b"},
        deadline_seconds=400,
    )  # fmt: skip
    spec = pod["spec"]
    assert spec["schedulerName"] == "kai-scheduler"
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] > 0
    (container,) = spec["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "nvidia.com/gpu" not in container["resources"]["limits"]  # fractions: annotation only
    assert spec["activeDeadlineSeconds"] == 400
    assert spec["automountServiceAccountToken"] is False
    assert pod["metadata"]["annotations"] == {"gpu-fraction": "0.5"}


def pod(phase: str = "Pending", **cond: str) -> dict[str, object]:
    status: dict[str, object] = {"phase": phase}
    if cond:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", **cond}]
    return {"status": status, "spec": {}}


def test_decide() -> None:
    assert decide(pod()) is None
    assert decide(pod("Running")) == (PodFate.RUNNING, "Running", "")
    assert decide(pod("Failed"))[0] is PodFate.FAILED  # type: ignore[index]
    msg = f"0/3 nodes are available: 3 {NOT_READY}. Condition x is missing."
    assert decide(pod(reason="Unschedulable", message=msg)) == (
        PodFate.NOT_READY,
        "Unschedulable",
        msg,
    )
    assert decide(pod(reason="Unschedulable", message="no nodes"))[0] is PodFate.UNSCHEDULABLE  # type: ignore[index]
    # A scheduling gate, not a decision.
    assert decide(pod(reason="SchedulingGated", message="gated")) is None


@pytest.mark.parametrize(
    ("outcome", "expect", "code"),
    [
        (PodFate.RUNNING, "any", ExitCode.OK),
        (PodFate.NOT_READY, "any", ExitCode.OK),
        (PodFate.NOT_READY, "not-ready", ExitCode.OK),
        (PodFate.NOT_READY, "running", ExitCode.FINDING),
        (PodFate.RUNNING, "not-ready", ExitCode.FINDING),
        (PodFate.UNSCHEDULABLE, "any", ExitCode.FINDING),
        (PodFate.FAILED, "any", ExitCode.FINDING),
        (PodFate.TIMEOUT, "any", ExitCode.TIMEOUT),
        (PodFate.SCHEDULED, "running", ExitCode.TIMEOUT),
    ],
)
def test_exit_codes(outcome: PodFate, expect: str, code: ExitCode) -> None:
    r = PodProbeResult("p", "default", {}, {}, outcome)
    assert r.exit_code(expect) == code
    assert r.summary()


@pytest.mark.parametrize("expect", EXPECT)
@pytest.mark.parametrize("fate", list(PodFate))
def test_every_fate_exits_with_an_exit_code_member(fate: PodFate, expect: str) -> None:
    assert type(PodProbeResult("p", "default", {}, {}, fate).exit_code(expect)) is ExitCode


def test_the_fates_print_as_before() -> None:
    assert [f.value for f in PodFate] == [
        "running",
        "not-ready",
        "unschedulable",
        "failed",
        "scheduled",
        "timeout",
    ]
