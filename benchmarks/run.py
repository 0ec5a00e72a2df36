"""Run every benchmark, then write RESULTS.md and the plots from their results.

`make bench` (full sizes) or `make bench BENCH_ARGS=--quick`.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    args = sys.argv[1:]
    failed = 0
    for path in sorted(HERE.glob("bench_*.py")):
        print(f"\n=== {path.stem} {' '.join(args)}", flush=True)
        module = importlib.import_module(f"benchmarks.{path.stem}")
        failed |= int(module.main(list(args)) or 0)
    from benchmarks import report

    report.main([])
    return failed


if __name__ == "__main__":
    sys.exit(main())
