"""``scripts/gpu-check.sh`` end to end against the stand-ins (no GPU here).

The probe cannot load libcuda on a machine without a driver, so the script ends with
status 1; what this guards is the plumbing: MPS starts in a temporary pipe dir, the
probe runs as its client, status is shown, and SIGTERM stops MPS cleanly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_mps import FAKE_CONTROL, fake_mps, pid_alive, wrapper

REPO = Path(__file__).resolve().parents[2]


def test_gpu_check_script_plumbing(tmp_path: Path) -> None:
    if shutil.which("bash") is None or shutil.which("timeout") is None:
        pytest.skip("needs bash and coreutils timeout")
    bin_dir = tmp_path / "bin"
    wrapper(bin_dir / "nvidia-cuda-mps-control", FAKE_CONTROL)
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  --query-gpu=driver_version) echo 615.20 ;;\n"
        '  *) echo "Fake B200, 183359 MiB, Default" ;;\n'
        "esac\n"
    )
    smi.chmod(0o755)
    with fake_mps() as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FRACCTL_", "CUDA_MPS_"))}
        env.update(
            PATH=f"{bin_dir}:{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
            FAKE_MPS_STATE=str(fake.state),
            FRACCTL=f"{sys.executable} -m fracctl",
            PYTHONPATH=str(REPO),
        )
        r = subprocess.run(
            ["bash", str(REPO / "scripts" / "gpu-check.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
        )
        out = r.stdout + r.stderr
        assert "driver 615.20 -> MPS protocol 3" in out, out
        assert "applied set_default_device_pinned_mem_limit 0 4096M" in out, out
        assert "probe-memory --limit 4096M --step 256M (as an MPS client)" in out, out
        assert "MPS control daemon: running" in out, out
        assert "stopped cleanly (SIGTERM)" in out, out
        assert "supervisor exit code 0" in out, out
        assert r.returncode == 1, out  # no GPU here: the probe had nothing to measure
        assert fake.daemon_pids() and not any(pid_alive(p) for p in fake.daemon_pids())
