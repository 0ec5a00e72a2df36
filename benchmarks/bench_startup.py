"""Start-up time of `fracctl --version` and `fracctl --help` (median of N runs).

Heavy libraries (kubernetes, httpx, ruamel) must not load on these paths; this measures
what a user waits for before anything happens.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def measure(args: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fracctl", *args], capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="5 runs")
    args = ap.parse_args(argv)
    runs = 5 if args.quick else args.runs
    baseline = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append(time.perf_counter() - t0)
    print(f"python -c pass          median {statistics.median(baseline) * 1000:6.0f} ms")
    for cmd in (["--version"], ["--help"]):
        t = measure(cmd, runs)
        print(
            f"fracctl {' '.join(cmd):<14}  median {statistics.median(t) * 1000:6.0f} ms"
            f"   min {min(t) * 1000:6.0f} ms   ({runs} runs)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
