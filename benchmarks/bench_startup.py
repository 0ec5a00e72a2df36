"""Start-up time of `fracctl --version`, `--help` and `drift --help`, beside kubectl's.

Heavy libraries (kubernetes, httpx, ruamel) must not load on these paths; this measures
what a user waits for before anything happens. Every command is run in the same loop,
interleaved, so a change in machine load affects them all alike; `kubectl version
--client` is the yardstick the target is stated in (`--help` at most 3.5x of it).

fracctl is invoked as a user would: the console script next to the interpreter
(`.venv/bin/fracctl`) when it exists, else `python -m fracctl`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent / "out" / "startup.json"
#: `fracctl --help` may take at most this many times `kubectl version --client`.
RATIO_LIMIT = 3.5


def fracctl_command() -> tuple[list[str], str]:
    """How to run fracctl as a user would, and a description of it."""
    script = Path(sys.executable).with_name("fracctl")
    if script.is_file():
        return [str(script)], f"console script {script}"
    return [sys.executable, "-m", "fracctl"], f"{sys.executable} -m fracctl"


def commands() -> tuple[dict[str, list[str]], list[str]]:
    """The commands to time, by label, and notes about what was left out."""
    fracctl, _ = fracctl_command()
    found: dict[str, list[str]] = {}
    notes = []
    kubectl = shutil.which("kubectl")
    if kubectl:
        found["kubectl version --client"] = [kubectl, "version", "--client"]
    else:
        notes.append("kubectl not found on PATH: its yardstick and the ratio are skipped")
    found["python -c pass"] = [sys.executable, "-c", "pass"]
    found["fracctl --version"] = [*fracctl, "--version"]
    found["fracctl --help"] = [*fracctl, "--help"]
    found["fracctl drift --help"] = [*fracctl, "drift", "--help"]
    return found, notes


def run_once(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def measure(cmds: dict[str, list[str]], runs: int) -> dict[str, list[float]]:
    """Run each command ``runs`` times, interleaved (one of each per round)."""
    for cmd in cmds.values():  # warm the file cache and byte-code; not counted
        run_once(cmd)
    times: dict[str, list[float]] = {label: [] for label in cmds}
    for _ in range(runs):
        for label, cmd in cmds.items():
            times[label].append(run_once(cmd))
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="5 runs")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON result file")
    args, _ = ap.parse_known_args(argv)  # run.py passes every bench the same arguments
    runs = 5 if args.quick else args.runs
    cmds, notes = commands()
    _, how = fracctl_command()
    print(f"fracctl run as: {how}")
    for note in notes:
        print(f"note: {note}")
    times = measure(cmds, runs)
    result: dict[str, object] = {"runs": runs, "fracctl": how, "notes": notes, "commands": {}}
    per_command: dict[str, object] = {}
    for label, t in times.items():
        s = summary(t)
        per_command[label] = {"argv": cmds[label], "times_s": t, **s}
        print(
            f"{label:<26} median {s['median'] * 1000:6.1f} ms   min {s['min'] * 1000:6.1f} ms"
            f"   max {s['max'] * 1000:6.1f} ms   ({runs} runs)"
        )
    result["commands"] = per_command
    kubectl = times.get("kubectl version --client")
    if kubectl:
        ratio = statistics.median(times["fracctl --help"]) / statistics.median(kubectl)
        result["help_to_kubectl_ratio"] = ratio
        print(f"fracctl --help / kubectl version --client: {ratio:.2f}x (at most {RATIO_LIMIT}x)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
