"""Run the public CLI corpus (../shared/conformance/cli) for one command group.

Divergence D1-1 (with `--json`, an error also prints `{"error": {...}}` on stdout, where the
reference prints nothing) changes many scenarios in a single, mechanical way. For scenarios
declared "D1-1" we check exactly that: the run differs from the golden only in error steps whose
stdout is our error object where the golden's is empty, and matches everywhere else.
"""

import importlib.util
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from tests.support.cli import SHARED

CLI_CORPUS = SHARED / "conformance" / "cli"
REPO_ROOT = Path(__file__).resolve().parents[2]
JSON_ERROR_DIVERGENCE = "D1-1"


def require_shared(path: Path) -> Path:
    """Skip (with the reason) where ../shared is absent, as in a user's fresh clone."""
    if not path.exists():
        pytest.skip(f"{path} is absent: the conformance corpora live in ../shared beside the repo")
    return path


@cache
def _diffrun() -> ModuleType:
    require_shared(CLI_CORPUS / "diffrun.py")
    spec = importlib.util.spec_from_file_location("diffrun", CLI_CORPUS / "diffrun.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _without_json_errors(actual: dict[str, Any], golden: dict[str, Any]) -> dict[str, Any]:
    """`actual` with our `{"error": ...}` stdout blanked wherever the golden has empty stdout."""
    steps = []
    for ours, theirs in zip(actual["steps"], golden["steps"], strict=False):
        stdout = ours["stdout"].get("json")
        if (
            isinstance(stdout, dict)
            and set(stdout) == {"error"}
            and set(stdout["error"]) == {"code", "message"}
            and theirs["stdout"] == {"text": ""}
            and ours["exit"] == theirs["exit"] != 0
        ):
            ours = {**ours, "stdout": {"text": ""}}
        steps.append(ours)
    return {**actual, "steps": steps}


STRADDLE_ATTEMPTS = 4


def record(scenario: dict[str, Any], matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Our run of `scenario` (diffrun's record of it), run again while it does not `matches` and
    the run crossed a wall-clock second.

    The corpus's times are whole seconds (`<NOW>`): rows written within one second keep their
    order, but a run that crosses a second lists the later second's rows first (the reference
    too). A loaded machine stretches a run across a second boundary now and then; a run begun
    just after one has the most room."""
    diffrun = _diffrun()
    os.environ.setdefault("PYTHONPATH", str(REPO_ROOT))
    for _ in range(STRADDLE_ATTEMPTS):
        began = time.time_ns() // 1_000_000_000
        actual: dict[str, Any] = diffrun.run_scenario(scenario, [sys.executable, "-m", "premath"])
        if matches(actual) or time.time_ns() // 1_000_000_000 == began:
            break
        time.sleep(1 - time.time() % 1)  # wait for the start of the next second
    return actual


def run_scenario(name: str) -> dict[str, Any]:
    """Run one scenario: its golden, our record, and the first difference (raw and sans D1-1)."""
    scenario_path = require_shared(CLI_CORPUS / "scenarios" / f"{name}.json")
    diffrun = _diffrun()
    scenario = diffrun.load_scenario(scenario_path)
    golden = orjson.loads((CLI_CORPUS / "golden" / f"{name}.json").read_bytes())
    actual = record(
        scenario,
        lambda actual: (
            diffrun.first_difference(golden, _without_json_errors(actual, golden)) is None
        ),
    )
    return {
        "golden": golden,
        "actual": actual,
        "difference": diffrun.first_difference(golden, actual),
        "difference_sans_json_errors": diffrun.first_difference(
            golden, _without_json_errors(actual, golden)
        ),
    }


def corpus_scenarios(group: str) -> list[str]:
    scenarios = require_shared(CLI_CORPUS / "scenarios")
    return sorted(p.stem for p in scenarios.glob(f"{group}.*.json"))


def run_corpus(group: str) -> dict[str, dict[str, Any]]:
    names = corpus_scenarios(group)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(names, pool.map(run_scenario, names), strict=True))


def assert_corpus(group: str, divergent: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every scenario of `group` passes except exactly the declared divergences.

    `divergent` maps scenario name -> divergence id in docs/divergences.md. A "D1-1" scenario
    must match once our JSON error objects are set aside; any other id must still differ (a
    divergence that quietly starts passing is stale) and has its own test of our behaviour.
    """
    results = run_corpus(group)
    assert results, f"no scenarios found for {group}"
    problems = {}
    for name, result in results.items():
        declared = divergent.get(name)
        if declared is None and result["difference"] is not None:
            problems[name] = f"fails without a declared divergence: {result['difference']}"
        elif declared == JSON_ERROR_DIVERGENCE and (
            result["difference"] is None or result["difference_sans_json_errors"] is not None
        ):
            problems[name] = "declared D1-1 but " + (
                "passes as it is (remove it)"
                if result["difference"] is None
                else f"differs beyond JSON errors: {result['difference_sans_json_errors']}"
            )
        elif declared not in (None, JSON_ERROR_DIVERGENCE) and result["difference"] is None:
            problems[name] = f"declared {declared} but passes (remove it)"
    unknown = sorted(set(divergent) - set(results))
    assert not unknown, f"declared divergences naming no scenario: {unknown}"
    assert not problems, "\n".join(f"{name}: {text}" for name, text in sorted(problems.items()))
    return results
