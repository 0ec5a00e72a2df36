from __future__ import annotations

import pytest

from fracctl import config as cfg
from fracctl.core import mps
from fracctl.core.clock import Backoff
from fracctl.errors import ConfigError
from tests.support.helpers import parse_env_file

# --- sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mib"),
    [("4096M", 4096), ("4G", 4096), ("4096MiB", 4096), ("4GiB", 4096), ("256", 256), (512, 512)],
)
def test_parse_mib(text: str | int, mib: int) -> None:
    assert mps.parse_mib(text) == mib


@pytest.mark.parametrize("text", ["", "lots", "0M", "-1M", "1.5M", "4096X", "1K"])
def test_parse_mib_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="size|MiB"):
        mps.parse_mib(text)


def test_pinned_limits_round_trip() -> None:
    limits = mps.parse_pinned_limits(["1=8G", "0=4096M"])
    assert limits == {0: 4096, 1: 8192}
    assert mps.pinned_limit_value(limits) == "0=4096M,1=8192M"


@pytest.mark.parametrize(
    ("items", "message"),
    [(["4096M"], "<device>=<size>"), (["x=1G"], "<device>=<size>"), (["0=1G", "0=2G"], "two")],
)
def test_pinned_limits_reject(items: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        mps.parse_pinned_limits(items)


# --- daemon argv / env / commands --------------------------------------------------------


def test_daemon_argv_protocol3_multi_user() -> None:
    assert mps.daemon_argv("/usr/bin/x", protocol=3, multi_user=True) == [
        "/usr/bin/x",
        "-f",
        "-p",
        "3",
        "-m",
    ]


def test_daemon_argv_protocol2_passes_no_new_flags() -> None:
    # -p and -m exist only from r615: an older driver must still start.
    assert mps.daemon_argv("x", protocol=2, multi_user=True) == ["x", "-f"]


def test_daemon_env_sets_dirs_and_drops_overriding_variables() -> None:
    base = {
        "PATH": "/usr/bin",
        "CUDA_MPS_PROTOCOL_VERSION": "2",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=1M",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "5",
    }
    env = mps.daemon_env(base, pipe_dir="/run/p", log_dir="/var/log/l")
    assert env == {
        "PATH": "/usr/bin",
        "CUDA_MPS_PIPE_DIRECTORY": "/run/p",
        "CUDA_MPS_LOG_DIRECTORY": "/var/log/l",
    }


def test_default_commands() -> None:
    assert mps.default_commands(active_thread_percentage=50, pinned_limits={1: 8192, 0: 4096}) == [
        "set_default_active_thread_percentage 50",
        "set_default_device_pinned_mem_limit 0 4096M",
        "set_default_device_pinned_mem_limit 1 8192M",
    ]
    assert mps.default_commands(active_thread_percentage=None, pinned_limits={}) == []


# --- parsing ------------------------------------------------------------------------------


def test_parse_pids_ignores_noise() -> None:
    assert mps.parse_pids("123\n\n  456 extra\nNo servers\n") == [123, 456]


@pytest.mark.parametrize(
    ("rc", "out", "failed"),
    [
        (0, "100.0\n", False),
        (0, "", False),
        (1, "", True),
        (0, "Error: command refused", True),
        (0, "Unknown command foo", True),
        (0, "Cannot find MPS control daemon process", True),
    ],
)
def test_command_failed(rc: int, out: str, failed: bool) -> None:
    assert mps.command_failed(rc, out) is failed


def test_parse_percentage() -> None:
    assert mps.parse_percentage("100.0\n") == 100.0
    assert mps.parse_percentage("nothing") is None


def test_parse_namespaces_with_header() -> None:
    rows = mps.parse_namespaces("NAME     SERVER CLIENTS\ndefault  0      2\nteam-a   0      0\n")
    assert [r["name"] for r in rows] == ["default", "team-a"]
    assert rows[0]["clients"] == "2"


def test_parse_namespaces_without_header() -> None:
    assert mps.parse_namespaces("default\nbatch limit=4096M\n") == [
        {"name": "default", "detail": ""},
        {"name": "batch", "detail": "limit=4096M"},
    ]
    assert mps.parse_namespaces("") == []


# --- backoff ------------------------------------------------------------------------------


def policy(*, max_retries: int = 3) -> mps.RestartPolicy:
    return mps.RestartPolicy(
        backoff=Backoff(first=1, factor=2, cap=60), max_retries=max_retries, stable_threshold=60
    )


def test_restart_policy_gives_up_after_max_retries() -> None:
    p = policy()
    decisions = [p.failed(ran_for=1) for _ in range(4)]
    assert [d.restart for d in decisions] == [True, True, True, False]
    assert [d.delay for d in decisions[:3]] == [1, 2, 4]
    assert decisions[-1].attempt == 4


def test_restart_policy_resets_after_a_stable_run() -> None:
    p = policy()
    p.failed(ran_for=1)
    p.failed(ran_for=1)
    d = p.failed(ran_for=61)  # the third run was stable: counting starts over
    assert d.reset and d.restart and d.attempt == 1 and d.delay == 1


def test_restart_policy_reset_while_running() -> None:
    p = policy()
    p.failed(ran_for=1)
    assert not p.reset_if_stable(59)
    assert p.reset_if_stable(60)
    assert not p.reset_if_stable(120)  # nothing left to forget
    assert p.failures == 0


def test_zero_retries_never_restarts() -> None:
    p = policy(max_retries=0)
    assert not p.failed(ran_for=1).restart


# --- systemd rendering --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "quoted"),
    [
        ("/usr/bin/fracctl", "/usr/bin/fracctl"),
        ("/opt/my tools/fracctl", '"/opt/my tools/fracctl"'),
        ("50%", '"50%%"'),
        ("$HOME", '"$$HOME"'),
        ('a"b', '"a\\"b"'),
    ],
)
def test_systemd_quote(word: str, quoted: str) -> None:
    assert mps.systemd_quote(word) == quoted


def test_systemd_quote_rejects_newlines() -> None:
    with pytest.raises(ValueError, match="newline"):
        mps.systemd_quote("a\nExecStartPre=/bin/evil")


def test_env_file_round_trip_and_injection() -> None:
    values = {"A": "plain", "B": 'with "quotes" and \\ and $VAR', "C": ""}
    text = mps.render_env_file(values, header="line one\nline two")
    assert text.startswith("# line one\n# line two\n")
    assert parse_env_file(text) == values
    with pytest.raises(ValueError, match="newline"):
        mps.render_env_file({"A": "x\nLD_PRELOAD=/evil.so"}, header="")
    with pytest.raises(ValueError, match="name"):
        mps.render_env_file({"bad-name": "x"}, header="")


def test_render_unit() -> None:
    unit = mps.render_unit(
        description="d",
        exec_start=["/opt/my tools/fracctl", "node", "mps", "install", "--foreground"],
        env_file="/etc/fracctl/mps.env",
        stop_timeout=90.5,
    )
    assert 'ExecStart="/opt/my tools/fracctl" node mps install --foreground\n' in unit
    assert "EnvironmentFile=/etc/fracctl/mps.env\n" in unit
    assert "KillMode=mixed\n" in unit
    assert "TimeoutStopSec=90\n" in unit
    assert unit.rstrip().endswith("WantedBy=multi-user.target")


# --- versions -----------------------------------------------------------------------------


def test_parse_driver_version() -> None:
    proc = (
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  615.20.01  Release Build  "
        "(dvs-builder@U16)  Thu Jan  1 00:00:00 UTC 2026\nGCC version:  gcc version 12.2.0\n"
    )
    assert mps.parse_driver_version(proc) == "615.20.01"
    assert mps.parse_driver_version("570.133.20\n570.133.20\n") == "570.133.20"
    assert mps.parse_driver_version("no driver") is None


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("containerd github.com/containerd/containerd/v2 v2.0.5 fb4c30d4", "2.0.5"),
        ("containerd containerd.io 1.7.27 05044ec0a9a7", "1.7.27"),
        ("containerd", None),
    ],
)
def test_parse_containerd_version(text: str, version: str | None) -> None:
    assert mps.parse_containerd_version(text) == version


# --- preflight evaluation -------------------------------------------------------------------


def good_facts(**kw: object) -> mps.HostFacts:
    base: dict[str, object] = {
        "driver_version": "615.20",
        "driver_source": "nvidia-smi",
        "control_binary": "/usr/bin/nvidia-cuda-mps-control",
        "control_help": "-p, --protocol <2|3>",
        "nri_socket": "/var/run/nri/nri.sock",
        "nri_socket_present": True,
        "containerd_version": "2.0.5",
        "containerd_socket": "/run/containerd/containerd.sock",
        "containerd_socket_present": True,
        "mem_available_mib": 64000,
        "gpus": [(0, "NVIDIA B200", "Default")],
    }
    base.update(kw)
    return mps.HostFacts(**base)  # type: ignore[arg-type]


SETTINGS = mps.PreflightSettings(protocol=3, control_binary="nvidia-cuda-mps-control")


def by_name(checks: list[mps.HostCheck]) -> dict[str, mps.HostCheck]:
    return {c.name: c for c in checks}


def test_preflight_all_ok() -> None:
    checks = mps.evaluate_preflight(good_facts(), SETTINGS)
    assert [c.status for c in checks] == ["ok"] * 6


@pytest.mark.parametrize(
    ("facts", "name", "fix"),
    [
        ({"driver_version": None}, "driver", "install the NVIDIA driver"),
        ({"driver_version": "570.133.20"}, "driver", "r615+"),
        ({"control_binary": None}, "mps-control", "compute utilities"),
        ({"control_help": "usage: -d -f"}, "mps-control", "r615+"),
        ({"nri_socket_present": False}, "nri-socket", "enable NRI"),
        ({"containerd_version": "1.7.27"}, "containerd", "upgrade containerd"),
        (
            {"containerd_version": None, "containerd_socket_present": False},
            "containerd",
            "install containerd",
        ),
        ({"mem_available_mib": 40}, "host-memory", "free host memory"),
        ({"gpus": None}, "compute-mode", "nvidia-smi"),
        ({"gpus": []}, "compute-mode", "nvidia-smi -L"),
        ({"gpus": [(0, "B200", "Prohibited")]}, "compute-mode", "EXCLUSIVE_PROCESS"),
    ],
)
def test_preflight_failures_say_what_to_do(facts: dict[str, object], name: str, fix: str) -> None:
    check = by_name(mps.evaluate_preflight(good_facts(**facts), SETTINGS))[name]
    assert check.status == "fail", check
    assert fix in check.fix


def test_preflight_memory_scales_with_gpus() -> None:
    facts = good_facts(mem_available_mib=120, gpus=[(i, "B200", "Default") for i in range(4)])
    check = by_name(mps.evaluate_preflight(facts, SETTINGS))["host-memory"]
    assert check.status == "fail" and "200 MiB" in check.detail


def test_preflight_protocol2_accepts_an_old_driver() -> None:
    s = mps.PreflightSettings(protocol=2, control_binary="nvidia-cuda-mps-control")
    checks = by_name(mps.evaluate_preflight(good_facts(driver_version="570.1", control_help=""), s))
    assert checks["driver"].status == "ok" and checks["mps-control"].status == "ok"


def test_preflight_pinned_limit_for_a_missing_device() -> None:
    s = mps.PreflightSettings(protocol=3, control_binary="x", pinned_limits={0: 4096, 3: 4096})
    check = by_name(mps.evaluate_preflight(good_facts(), s))["compute-mode"]
    assert check.status == "fail" and "3" in check.detail


@pytest.mark.parametrize(
    ("name", "status"),
    [("NVIDIA H200", "fail"), ("NVIDIA H200 NVL", "fail"), ("NVIDIA H20", "ok"),
     ("NVIDIA B200", "ok"), ("NVIDIA GH200 480GB", "ok")],
)  # fmt: skip
def test_preflight_refuses_a_denied_gpu_product(name: str, status: str) -> None:
    s = mps.PreflightSettings(protocol=3, control_binary="x", denied_products=["H200"])
    gpus = [(0, "NVIDIA B200", "Default"), (1, name, "Default")]
    check = by_name(mps.evaluate_preflight(good_facts(gpus=gpus), s))["gpu-product"]
    assert check.status == status, check
    if status == "fail":
        assert f"GPU 1: {name}" in check.detail and "fracctl nodes unlabel" in check.fix


def test_preflight_product_check_needs_products_and_gpus() -> None:
    assert "gpu-product" not in by_name(mps.evaluate_preflight(good_facts(), SETTINGS))
    s = mps.PreflightSettings(protocol=3, control_binary="x", denied_products=["H200"])
    assert "gpu-product" not in by_name(mps.evaluate_preflight(good_facts(gpus=None), s))


def test_preflight_unknown_containerd_version_with_socket_warns() -> None:
    check = by_name(mps.evaluate_preflight(good_facts(containerd_version=None), SETTINGS))[
        "containerd"
    ]
    assert check.status == "warn"


# --- probe arithmetic ---------------------------------------------------------------------


def test_probe_steps_pass_the_limit_by_one() -> None:
    assert mps.probe_steps(4096, 256) == 17
    assert mps.probe_steps(4000, 256) == 17
    with pytest.raises(ValueError):
        mps.probe_steps(4096, 0)


def test_probe_result_the_incident() -> None:
    r = mps.probe_result(
        device=0, limit_mib=4096, step_mib=256, successes=13, error="CUDA_ERROR_OUT_OF_MEMORY"
    )
    assert (r.usable_mib, r.failed_at_mib, r.failed_step, r.overhead_mib) == (3328, 3584, 14, 768)
    assert r.enforced
    assert r.to_dict()["overhead_mib"] == 768


def test_probe_result_not_enforced() -> None:
    r = mps.probe_result(device=0, limit_mib=4096, step_mib=256, successes=17, error=None)
    assert not r.enforced and r.usable_mib == 4352 and r.to_dict()["overhead_mib"] is None


# --- config section -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("PROTOCOL", "4", "protocol must be 2 or 3"),
        ("DEFAULT_ACTIVE_THREAD_PERCENTAGE", "0", "1..100"),
        ("PINNED_MEM_LIMITS", "0=4096M;rm -rf /", "pinned_mem_limits"),
        ("PINNED_MEM_LIMITS", "0=1G,0=2G", "twice"),
        ("UNIT_NAME", "../evil", "unit_name"),
        ("HEALTH_INTERVAL", "0", "health_interval must be positive"),
        ("MAX_RETRIES", "-1", "max_retries"),
    ],
)
def test_mps_config_validation(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        cfg.load(None, env={f"FRACCTL_MPS_{key}": value})


def test_mps_config_defaults() -> None:
    c = cfg.load(None, env={}).mps
    assert (c.pipe_dir, c.log_dir, c.protocol, c.graceful_stop) == (
        "/run/nvidia-mps",
        "/var/log/nvidia-mps",
        3,
        60,
    )
