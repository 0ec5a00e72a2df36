"""``fracctl node probe-memory``: the step logic against a stand-in allocator injected at
the flow's adapter boundary, and the no-driver error path for real."""

from __future__ import annotations

import ctypes.util
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pytest

from fracctl.adapters.cuda import CudaDriver, CudaError, DeviceInfo
from fracctl.core.mps import MIB
from fracctl.errors import ExitCode, ExternalError, UsageError
from fracctl.flows.guards import node_checks
from fracctl.flows.guards.node_checks import MemoryProbeReport
from tests.support.fake_mps import FakeMPS, fake_mps
from tests.support.helpers import run_cli

OOM = "CUDA_ERROR_OUT_OF_MEMORY"


@dataclass
class FakeAllocator:
    """A device whose context holds ``overhead_mib`` of a ``limit_mib`` pinned limit."""

    limit_mib: int | None = 4096  # None: no limit applies
    overhead_mib: int = 768
    fail_open: str | None = None
    fail_at_step: tuple[int, str] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    live_mib: int = 0
    steps: int = 0
    opened: int | None = None
    closed: bool = False

    def __call__(self, env: Mapping[str, str]) -> FakeAllocator:
        self.env = dict(env)
        return self

    def open(self, device: int) -> DeviceInfo:
        if self.fail_open:
            raise CudaError("cuCtxCreate_v2", 100, self.fail_open)
        self.opened = device
        free = (self.limit_mib or 81920) - self.overhead_mib
        return DeviceInfo("Fake B200", 12090, free, self.limit_mib or 81920)

    def alloc(self, nbytes: int) -> int:
        self.steps += 1
        if self.fail_at_step and self.fail_at_step[0] == self.steps:
            raise CudaError("cuMemAlloc_v2", 805, self.fail_at_step[1])
        mib = nbytes // MIB
        if self.limit_mib is not None and self.overhead_mib + self.live_mib + mib > self.limit_mib:
            raise CudaError("cuMemAlloc_v2", 2, OOM)
        self.live_mib += mib
        return self.steps

    def close(self) -> None:
        self.live_mib = 0
        self.closed = True


@pytest.fixture
def fake() -> Iterator[FakeMPS]:
    with fake_mps() as f:
        yield f


def probe(fake: FakeMPS, alloc: FakeAllocator, **kw: object) -> MemoryProbeReport:
    ctx, _ = fake.context()
    args: dict[str, object] = {"limit_mib": 4096, "step_mib": 256, "device": 0, **kw}
    return node_checks.probe_memory(ctx, allocator=alloc, **args)  # type: ignore[arg-type]


def test_the_incident_figures(fake: FakeMPS) -> None:
    alloc = FakeAllocator()
    res = probe(fake, alloc)
    r = res.result
    assert (r.usable_mib, r.failed_step, r.failed_at_mib, r.error) == (3328, 14, 3584, OOM)
    assert r.overhead_mib == 768 and r.enforced
    assert alloc.closed and alloc.live_mib == 0 and alloc.opened == 0
    assert alloc.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=4096M"
    assert alloc.env["CUDA_MPS_PIPE_DIRECTORY"] == str(fake.pipe)
    assert res.mps_client is False


def test_device_and_step_are_respected(fake: FakeMPS) -> None:
    alloc = FakeAllocator(limit_mib=8192, overhead_mib=500)
    r = probe(fake, alloc, limit_mib=8192, step_mib=1024, device=1).result
    assert r.usable_mib == 7168 and r.failed_step == 8 and r.device == 1
    assert alloc.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "1=8192M"


def test_first_step_failing_means_the_context_ate_the_limit(fake: FakeMPS) -> None:
    r = probe(fake, FakeAllocator(overhead_mib=4000)).result
    assert r.usable_mib == 0 and r.failed_step == 1 and r.overhead_mib == 4096


def test_limit_not_enforced_stops_one_step_past_it(fake: FakeMPS) -> None:
    alloc = FakeAllocator(limit_mib=None)
    r = probe(fake, alloc).result
    assert not r.enforced and r.usable_mib == 4352 and r.error is None
    assert alloc.steps == 17 and alloc.closed


def test_a_non_oom_failure_is_an_error_and_still_cleans_up(fake: FakeMPS) -> None:
    alloc = FakeAllocator(fail_at_step=(3, "CUDA_ERROR_MPS_CONNECTION_FAILED"))
    with pytest.raises(ExternalError, match="step 3 .* CUDA_ERROR_MPS_CONNECTION_FAILED") as e:
        probe(fake, alloc)
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert alloc.closed


def test_no_device_is_exit_3_and_cleans_up(fake: FakeMPS) -> None:
    alloc = FakeAllocator(fail_open="CUDA_ERROR_NO_DEVICE")
    with pytest.raises(ExternalError, match="CUDA device 0: .*CUDA_ERROR_NO_DEVICE") as e:
        probe(fake, alloc)
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert alloc.closed


def test_limit_comes_from_config_or_must_be_given(fake: FakeMPS) -> None:
    ctx, _ = fake.context(pinned_mem_limits=["0=2048M"])
    alloc = FakeAllocator(limit_mib=2048, overhead_mib=768)
    r = node_checks.probe_memory(ctx, limit_mib=None, step_mib=256, allocator=alloc).result
    assert r.limit_mib == 2048 and r.usable_mib == 1280
    ctx, _ = fake.context()
    with pytest.raises(UsageError, match="pass --limit"):
        node_checks.probe_memory(ctx, limit_mib=None, step_mib=256, allocator=FakeAllocator())


def test_missing_library_is_a_clear_exit_3() -> None:
    with pytest.raises(ExternalError) as e:
        CudaDriver.load(env={}, names=["libcuda-fracctl-absent.so.1"])
    assert e.value.exit_code == ExitCode.EXTERNAL
    assert "cannot load the CUDA driver library" in str(e.value)
    assert "needs an NVIDIA driver and GPU" in str(e.value)


# --- through the CLI ------------------------------------------------------------------------


def test_cli_without_a_driver_exits_3(fake: FakeMPS, monkeypatch: pytest.MonkeyPatch) -> None:
    if ctypes.util.find_library("cuda"):
        pytest.skip("this machine has libcuda; the no-driver path is covered above")
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    r = run_cli("node", "probe-memory", "--limit", "4096M")
    assert r.exit_code == ExitCode.EXTERNAL, r.output
    assert "Error: cannot load the CUDA driver library" in r.stderr
    assert "Traceback" not in r.output


@pytest.fixture
def cli_alloc(fake: FakeMPS, monkeypatch: pytest.MonkeyPatch) -> FakeAllocator:
    for key, value in fake.env().items():
        monkeypatch.setenv(key, value)
    alloc = FakeAllocator()
    monkeypatch.setattr(node_checks, "_load_driver", alloc)
    return alloc


def test_cli_table(cli_alloc: FakeAllocator) -> None:
    r = run_cli("node", "probe-memory", "--limit", "4096M", "--step", "256M")
    assert r.exit_code == ExitCode.OK, r.output
    assert "usable:           3328 MiB" in r.stdout
    assert "failing step:     #14, to 3584 MiB (CUDA_ERROR_OUT_OF_MEMORY)" in r.stdout
    assert "context overhead: 768 MiB" in r.stdout
    assert "not an MPS client" in r.stderr


def test_cli_json(cli_alloc: FakeAllocator) -> None:
    r = run_cli("node", "probe-memory", "--limit", "4G", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output
    d = r.json
    assert (d["usable_mib"], d["overhead_mib"], d["failed_step"], d["enforced"]) == (
        3328,
        768,
        14,
        True,
    )
    assert d["device_name"] == "Fake B200" and d["mps_client"] is False


def test_cli_not_enforced_exits_1(cli_alloc: FakeAllocator) -> None:
    cli_alloc.limit_mib = None
    r = run_cli("node", "probe-memory", "--limit", "4096M")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "limit NOT enforced" in r.stdout


@pytest.mark.parametrize(
    "args", [["--limit", "lots"], ["--limit", "4096M", "--step", "0"], ["-o", "xml"], []]
)
def test_cli_usage_errors(cli_alloc: FakeAllocator, args: list[str]) -> None:
    r = run_cli("node", "probe-memory", *args)
    assert r.exit_code == ExitCode.USAGE, r.output


def test_a_missing_driver_symbol_is_a_cuda_error() -> None:
    class Lib:
        def cuGetErrorName(self, code: int, out: object) -> int:  # noqa: N802
            return 1

    drv = CudaDriver(Lib())  # type: ignore[arg-type]
    with pytest.raises(CudaError) as e:
        drv.open(0)
    assert e.value.name == "cuInit is not exported by this libcuda"
