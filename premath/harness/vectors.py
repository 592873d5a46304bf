"""Our conformance vector suites, as the host API's `conformance.*_vectors.run` actions run them.

`python -m premath.harness.vectors <suite> [--fixtures DIR]` judges every vector (`case.json`
with its `expect.json`) under DIR, prints `PASS <id>` / `FAIL <id>: <why>` and a count, and
exits 0 when all pass, 1 when one fails, 2 when there is nothing to run.

- `world-core`: the JoinClosed gate's typestate vectors (typestate.md §8);
- `runtime-orchestration`: the harness capability vectors: boot/stop recovery (§10);
- `frontend-parity`: the capability invariance pairs: local and external frontends agree.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

Judge = Callable[[dict[str, Any], dict[str, Any]], str | None]
SUITES: dict[str, tuple[str, str]] = {
    "world-core": ("../shared/conformance/typestate", "*/*/case.json"),
    "runtime-orchestration": ("../shared/conformance/capabilities", "[ga]*/*/case.json"),
    "frontend-parity": ("../shared/conformance/capabilities", "invariance/*/case.json"),
}


def _join_check(case: dict[str, Any], expect: dict[str, Any]) -> str | None:
    from premath.harness.join.check import evaluate_join_check

    output = evaluate_join_check(case["input"])
    if output["result"] != expect["result"]:
        return f"result {output['result']} != {expect['result']}"
    if set(output["failureClasses"]) != set(expect.get("expectedFailureClasses", [])):
        return f"failureClasses {output['failureClasses']}"
    if "expectedJoinClosed" in expect and output["joinClosed"] is not expect["expectedJoinClosed"]:
        return f"joinClosed {output['joinClosed']}"
    return None


def _capability(case: dict[str, Any], expect: dict[str, Any]) -> str | None:
    from premath.harness.capabilities import evaluate_harness_runtime

    outcome = evaluate_harness_runtime(case)
    if outcome.result != expect["result"]:
        return f"result {outcome.result} != {expect['result']}"
    expected = expect.get("expectedFailureClasses")
    if expected is not None and set(outcome.gate_failure_classes) != set(expected):
        return f"failureClasses {sorted(set(outcome.gate_failure_classes))}"
    return None


JUDGES: dict[str, Judge] = {
    "world-core": _join_check,
    "runtime-orchestration": _capability,
    "frontend-parity": _capability,
}


def run_suite(suite: str, fixtures: Path) -> tuple[list[str], bool]:
    """Report lines and whether every vector passed; no vector at all is a failure."""
    pattern = SUITES[suite][1]
    cases = sorted(fixtures.glob(pattern))
    lines: list[str] = []
    outcomes: list[Any] = []
    for case_path in cases:
        vector_id = case_path.parent.relative_to(fixtures).as_posix()
        case = orjson.loads(case_path.read_bytes())
        expect = orjson.loads((case_path.parent / "expect.json").read_bytes())
        why = JUDGES[suite](case, expect)
        outcomes.append(expect.get("result"))
        lines.append(f"PASS {vector_id}" if why is None else f"FAIL {vector_id}: {why}")
    if suite == "frontend-parity" and len(set(outcomes)) > 1:
        lines.append(f"FAIL parity: frontends disagree ({outcomes})")
    failed = sum(line.startswith("FAIL") for line in lines)
    lines.append(f"{len(cases) - failed} passed, {failed} failed")
    return lines, bool(cases) and failed == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="premath.harness.vectors")
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("--fixtures", help="Vector folder [default: ../shared/conformance/...]")
    args = parser.parse_args(argv)
    fixtures = Path(args.fixtures or SUITES[args.suite][0])
    if not fixtures.is_dir():
        sys.stderr.write(f"error: no vector folder at {fixtures}; pass --fixtures DIR\n")
        return 2
    lines, passed = run_suite(args.suite, fixtures)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
