"""Run every `benchmarks/bench_*.py` module's `rows(quick)` and print one Markdown table.

`--quick` (what CI runs) uses small sizes and few runs, so the benchmarks cannot rot; no number
fails the build. Each module runs in a fresh interpreter: one that grew large (Ray, a 100k-issue
store) would otherwise slow every later fork and inflate every later child's peak memory.
"""

import argparse
import dataclasses
import importlib
import os
import pkgutil
import subprocess
import sys

import orjson

import benchmarks
from benchmarks._measure import Row, compile_premath

HEADER = ("measure", "size", "ours", "baseline", "ratio", "target", "verdict")


def _rows_of(module: str, quick: bool) -> list[Row]:
    argv = [sys.executable, "-m", "benchmarks", "--module", module, *(["--quick"] if quick else [])]
    done = subprocess.run(argv, stdout=subprocess.PIPE, check=True)
    return [Row(**fields) for fields in orjson.loads(done.stdout)]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sizes, few runs (CI)")
    parser.add_argument("--only", help="run only bench modules whose name contains this text")
    parser.add_argument("--module", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.module:
        compile_premath()
        rows = importlib.import_module(f"benchmarks.{args.module}").rows(args.quick)
        sys.stdout.buffer.write(orjson.dumps([dataclasses.asdict(row) for row in rows]))
        return 0
    table: list[Row] = []
    for module in sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__)):
        if not module.startswith("bench_") or (args.only and args.only not in module):
            continue
        print(f"running {module} ...", file=sys.stderr, flush=True)
        table.extend(_rows_of(module, args.quick))
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for row in table:
        print("| " + " | ".join(getattr(row, field) for field in HEADER) + " |")
    reference = os.environ.get("PREMATH_REFERENCE_BIN")
    if reference:
        print(
            f"\nReference: {reference}, run in this run by the rows whose baseline says "
            '"reference ran"; no row divides by a recorded reference figure.'
        )
    else:
        print(
            "\nReference: not run (PREMATH_REFERENCE_BIN unset): rows comparing with it "
            'say "reference not run" and give no ratio or verdict.'
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
