"""Run every `benchmarks/bench_*.py` module's `rows(quick)` and print one Markdown table.

`--quick` (what CI runs) uses small sizes and few runs, so the benchmarks cannot rot; no number
fails the build.
"""

import argparse
import importlib
import pkgutil
import sys

import benchmarks
from benchmarks._measure import Row

HEADER = ("measure", "size", "ours", "baseline", "ratio", "target", "verdict")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sizes, few runs (CI)")
    parser.add_argument("--only", help="run only bench modules whose name contains this text")
    args = parser.parse_args()
    rows: list[Row] = []
    for module in sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__)):
        if not module.startswith("bench_") or (args.only and args.only not in module):
            continue
        print(f"running {module} ...", file=sys.stderr, flush=True)
        rows.extend(importlib.import_module(f"benchmarks.{module}").rows(args.quick))
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for row in rows:
        print("| " + " | ".join(getattr(row, field) for field in HEADER) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
