"""Run the public CLI corpus (../shared/conformance/cli) for one command group."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest

from tests.support.cli import SHARED

CLI_CORPUS = SHARED / "conformance" / "cli"
REPO_ROOT = Path(__file__).resolve().parents[2]


def require_shared(path: Path) -> Path:
    """Skip (with the reason) where ../shared is absent, as in a user's fresh clone."""
    if not path.exists():
        pytest.skip(f"{path} is absent: the conformance corpora live in ../shared beside the repo")
    return path


def corpus_scenarios(group: str) -> list[str]:
    scenarios = require_shared(CLI_CORPUS / "scenarios")
    return sorted(p.stem for p in scenarios.glob(f"{group}.*.json"))


def run_corpus(group: str) -> dict[str, str | None]:
    """Scenario name -> first difference (None when it passes), for `<group>.*` scenarios."""
    scenarios = require_shared(CLI_CORPUS / "scenarios")
    with tempfile.TemporaryDirectory() as selection:
        for path in scenarios.glob(f"{group}.*.json"):
            os.symlink(path, Path(selection) / path.name)
        proc = subprocess.run(
            [
                sys.executable, str(CLI_CORPUS / "diffrun.py"), "check", "--json",
                "--bin", f"{sys.executable} -m premath",
                "--scenarios", selection, "--golden", str(CLI_CORPUS / "golden"),
            ],
            capture_output=True,
            check=False,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            timeout=900,
        )
    report = orjson.loads(proc.stdout)
    return {r["scenario"]: r["difference"] for r in report["results"]}


def assert_corpus(group: str, divergent: dict[str, str]) -> None:
    """Every scenario of `group` passes except exactly the declared divergences.

    `divergent` maps scenario name -> divergence id in docs/divergences.md; each of those must
    still fail (a divergence that quietly starts passing is stale) and has its own test.
    """
    results = run_corpus(group)
    assert results, f"no scenarios found for {group}"
    failing = {name: diff for name, diff in results.items() if diff is not None}
    unexpected = {name: diff for name, diff in failing.items() if name not in divergent}
    stale = sorted(name for name in divergent if results.get(name, "missing") is None)
    assert not unexpected, f"scenarios failing without a declared divergence: {unexpected}"
    assert not stale, f"declared divergences that now pass (remove them): {stale}"
    missing = sorted(name for name in divergent if name not in results)
    assert not missing, f"declared divergences naming no scenario: {missing}"
