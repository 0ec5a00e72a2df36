"""`fracctl sandbox up` on a warm build cache: how long until the incident is there.

Each run starts a new sandbox in a fresh state dir (the real control plane, kube-controller-
manager, kube-scheduler, KWOK and the simulations), times `up` until it returns, then
until the RTX node reports the readiness condition (its agent pods made by the DaemonSet
controller, placed by the scheduler, run by KWOK, read by the operator simulation), then
`down`. The binaries must be built already (`make control-plane kwok`): this measures
start-up, not the build.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "sandbox.json"


def fracctl() -> list[str]:
    script = Path(sys.executable).with_name("fracctl")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "fracctl"]


def rtx_ready(state: str, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(
            [*fracctl(), "sandbox", "status", "--state-dir", state, "-o", "json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        nodes = {n["name"]: n["ready"] for n in json.loads(out)["nodes"]}
        if nodes.get("rtx-pro-6000-0") == "True":
            return True
        time.sleep(0.1)
    return False


def one_run() -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="fracctl-bench-sandbox-") as tmp:
        state = str(Path(tmp) / "sbx")
        t0 = time.perf_counter()
        subprocess.run(
            [*fracctl(), "sandbox", "up", "--state-dir", state], check=True, capture_output=True
        )
        up = time.perf_counter() - t0
        try:
            if not rtx_ready(state):
                raise SystemExit("the RTX node never became ready")
            ready = time.perf_counter() - t0
        finally:
            t1 = time.perf_counter()
            subprocess.run(
                [*fracctl(), "sandbox", "down", "--state-dir", state],
                check=True,
                capture_output=True,
            )
            down = time.perf_counter() - t1
    return {"up_s": up, "ready_s": ready, "down_s": down}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 runs")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON result file")
    args, _ = ap.parse_known_args(argv)  # run.py passes every bench the same arguments
    runs = [one_run() for _ in range(2 if args.quick else args.runs)]
    result = {
        "runs": runs,
        "median": {k: statistics.median(r[k] for r in runs) for k in runs[0]},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for key, value in result["median"].items():
        print(f"sandbox {key}: median {value:.2f}s over {len(runs)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
