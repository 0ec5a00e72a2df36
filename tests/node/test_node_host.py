"""The host adapter against a fake host root, and ``fracctl node preflight`` through it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from fracctl.adapters.host import Host
from fracctl.errors import ExitCode
from tests.support.fake_mps import FAKE_CONTROL, FakeMPS, fake_mps, wrapper
from tests.support.helpers import run_cli

PROC_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  "
    "(dvs-builder@U16)  Thu Jan  1 00:00:00 UTC 2026\n"
)


def script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


class FakeHost:
    """A host root with the files and binaries preflight looks at."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sockets: list[socket.socket] = []
        self.bin = root / "usr" / "bin"

    def nvidia_smi(self, driver: str = "615.20", gpus: str = "0, NVIDIA B200, Default") -> None:
        script(
            self.bin / "nvidia-smi",
            'case "$1" in\n'
            f'  --query-gpu=driver_version) echo "{driver}" ;;\n'
            f"  --query-gpu=index,name,compute_mode) printf '%s\\n' \"{gpus}\" ;;\n"
            "  *) exit 2 ;;\nesac\n",
        )

    def proc_version(self, driver: str) -> None:
        p = self.root / "proc" / "driver" / "nvidia" / "version"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(PROC_VERSION.format(v=driver))

    def containerd(self, version_line: str) -> None:
        script(self.bin / "containerd", f'echo "{version_line}"\n')

    def meminfo(self, available_kib: int) -> None:
        p = self.root / "proc" / "meminfo"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"MemTotal:       99999999 kB\nMemAvailable:   {available_kib} kB\n")

    def socket(self, host_path: str) -> None:
        p = self.root / host_path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(p))
        self.sockets.append(s)

    def control(self) -> None:
        wrapper(self.bin / "nvidia-cuda-mps-control", FAKE_CONTROL)

    def healthy(self) -> None:
        self.nvidia_smi()
        self.containerd("containerd github.com/containerd/containerd/v2 v2.0.5 fb4c30d4")
        self.meminfo(64 * 1024 * 1024)
        self.socket("/var/run/nri/nri.sock")
        self.socket("/run/containerd/containerd.sock")
        self.control()

    def close(self) -> None:
        for s in self.sockets:
            s.close()


@pytest.fixture
def fake() -> Iterator[FakeMPS]:
    with fake_mps() as f:
        yield f


@pytest.fixture
def host(fake: FakeMPS) -> Iterator[FakeHost]:
    h = FakeHost(fake.host)
    try:
        yield h
    finally:
        h.close()


def use_host(monkeypatch: pytest.MonkeyPatch, fake: FakeMPS, **mps: object) -> None:
    monkeypatch.setenv("FRACCTL_MPS_HOST_ROOT", str(fake.host))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("FAKE_MPS_STATE", str(fake.state))
    for key, value in mps.items():
        monkeypatch.setenv(f"FRACCTL_MPS_{key.upper()}", str(value))


# --- the adapter --------------------------------------------------------------------------


def test_paths_and_binaries_are_under_the_root(host: FakeHost) -> None:
    host.healthy()
    h = Host(host.root, env={"PATH": "/usr/bin:/bin"})
    assert h.path("/proc/meminfo") == host.root / "proc" / "meminfo"
    assert h.which("nvidia-smi") == "/usr/bin/nvidia-smi"
    assert h.which("/usr/bin/containerd") == "/usr/bin/containerd"
    assert h.which("kubectl") is None
    assert h.run(["kubectl", "version"]) is None


def test_driver_version_prefers_nvidia_smi_then_proc(host: FakeHost) -> None:
    h = Host(host.root, env={"PATH": "/usr/bin"})
    assert h.driver_version() == (None, "")
    host.proc_version("570.133.20")
    assert h.driver_version() == ("570.133.20", "/proc/driver/nvidia/version")
    host.nvidia_smi(driver="615.20")
    assert h.driver_version() == ("615.20", "nvidia-smi")


def test_gpus_compute_mode_memory_containerd_sockets(host: FakeHost) -> None:
    host.nvidia_smi(gpus="0, NVIDIA B200, Default\n1, NVIDIA B200, Exclusive_Process")
    host.containerd("containerd containerd.io 1.7.27 05044ec0a9a7")
    host.meminfo(2 * 1024 * 1024)
    host.socket("/run/containerd/containerd.sock")
    (host.root / "var" / "run" / "nri").mkdir(parents=True)
    (host.root / "var" / "run" / "nri" / "nri.sock").write_text("not a socket")
    h = Host(host.root, env={"PATH": "/usr/bin"})
    assert h.gpus() == [(0, "NVIDIA B200", "Default"), (1, "NVIDIA B200", "Exclusive_Process")]
    assert h.containerd_version() == "1.7.27"
    assert h.mem_available_mib() == 2048
    assert h.is_socket("/run/containerd/containerd.sock")
    assert not h.is_socket("/var/run/nri/nri.sock")
    assert not h.is_socket("/nowhere.sock")


def test_a_hanging_binary_is_bounded(host: FakeHost) -> None:
    script(host.bin / "containerd", "sleep 30\n")
    r = Host(host.root, env={"PATH": "/usr/bin"}, timeout=0.5).run(["containerd", "--version"])
    assert r is not None and r.timed_out and not r.ok


def test_process_facts(host: FakeHost) -> None:
    h = Host("/")
    assert h.pid_alive(os.getpid())
    assert h.process_name(os.getpid())
    assert not h.pid_alive(2**22 + 12345)
    assert h.process_name(2**22 + 12345) is None


def test_make_dirs_reports_what_it_created(tmp_path: Path) -> None:
    h = Host(tmp_path)
    assert h.make_dirs("/a/b/c") == ["/a", "/a/b", "/a/b/c"]
    assert h.make_dirs("/a/b/c") == []
    assert h.write_text("/a/x/f.txt", "hi") == ["/a/x"]
    assert h.read_text("/a/x/f.txt") == "hi"
    assert not h.remove_empty_dir("/a/x")  # not empty
    assert h.remove_file("/a/x/f.txt") and not h.remove_file("/a/x/f.txt")
    assert h.remove_empty_dir("/a/x")


# --- fracctl node preflight ---------------------------------------------------------------


def test_preflight_all_ok(monkeypatch: pytest.MonkeyPatch, fake: FakeMPS, host: FakeHost) -> None:
    host.healthy()
    use_host(monkeypatch, fake)
    r = run_cli("node", "preflight")
    assert r.exit_code == ExitCode.OK, r.output
    assert "all checks ok" in r.stdout
    for name in ("driver", "mps-control", "nri-socket", "containerd", "host-memory"):
        assert name in r.stdout


def test_preflight_failures_exit_1_with_fixes(
    monkeypatch: pytest.MonkeyPatch, fake: FakeMPS, host: FakeHost
) -> None:
    host.healthy()
    host.nvidia_smi(driver="570.133.20", gpus="0, NVIDIA H200, Prohibited")
    host.containerd("containerd containerd.io 1.7.27 05044ec0a9a7")
    (host.root / "var" / "run" / "nri" / "nri.sock").unlink()
    use_host(monkeypatch, fake)
    r = run_cli("node", "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    data = r.json
    assert not data["ok"]
    failed = {c["name"]: c for c in data["checks"] if c["status"] == "fail"}
    assert set(failed) == {"driver", "nri-socket", "containerd", "compute-mode", "gpu-product"}
    assert all(c["fix"] for c in failed.values())
    assert "r615" in failed["driver"]["detail"]
    # The driver's own name for the GPU: no node label can make an H200 look like a B200.
    assert "GPU 0: NVIDIA H200" in failed["gpu-product"]["detail"]


def test_preflight_table_names_what_to_do(
    monkeypatch: pytest.MonkeyPatch, fake: FakeMPS, host: FakeHost
) -> None:
    host.healthy()
    host.meminfo(10 * 1024)
    use_host(monkeypatch, fake)
    r = run_cli("node", "preflight")
    assert r.exit_code == ExitCode.FINDING, r.output
    assert "1 of 7 checks failed" in r.stdout
    assert "free host memory" in r.stdout


def test_preflight_on_a_bare_host(
    monkeypatch: pytest.MonkeyPatch, fake: FakeMPS, host: FakeHost
) -> None:
    host.root.mkdir(parents=True, exist_ok=True)
    use_host(monkeypatch, fake)
    r = run_cli("node", "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    statuses = {c["name"]: c["status"] for c in r.json["checks"]}
    assert statuses == {
        "driver": "fail",
        "mps-control": "fail",
        "nri-socket": "fail",
        "containerd": "fail",
        "host-memory": "warn",
        "compute-mode": "fail",
    }


def test_preflight_mps_control_without_protocol3(
    monkeypatch: pytest.MonkeyPatch, fake: FakeMPS, host: FakeHost
) -> None:
    host.healthy()
    fake.behave(protocol3=False)
    use_host(monkeypatch, fake)
    r = run_cli("node", "preflight", "-o", "json")
    assert r.exit_code == ExitCode.FINDING, r.output
    check = {c["name"]: c for c in r.json["checks"]}["mps-control"]
    assert check["status"] == "fail" and "protocol" in check["detail"]
    use_host(monkeypatch, fake, protocol=2)
    r = run_cli("node", "preflight", "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output


def test_preflight_host_root_flag(
    monkeypatch: pytest.MonkeyPatch, fake: FakeMPS, host: FakeHost
) -> None:
    host.healthy()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("FAKE_MPS_STATE", str(fake.state))
    r = run_cli("node", "preflight", "--host-root", str(host.root), "-o", "json")
    assert r.exit_code == ExitCode.OK, r.output


def test_preflight_bad_output_is_usage() -> None:
    r = run_cli("node", "preflight", "-o", "xml")
    assert r.exit_code == ExitCode.USAGE, r.output
