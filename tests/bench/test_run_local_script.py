"""Smoke test of tools/terminal-bench/scripts/run-local.sh: one command, four artifacts."""

import os
import subprocess
import sys

import orjson

from tests.bench.conftest import TERMINAL_BENCH

SCRIPTS = TERMINAL_BENCH / "scripts"


def test_run_local_produces_all_four_artifacts(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "BENCH_RUNS_DIR": str(tmp_path / "runs")}
    done = subprocess.run(
        ["bash", str(SCRIPTS / "run-local.sh")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    completion, validation = done.stdout.splitlines()
    assert completion.startswith(f"bench run succeeded (exit 0): run_dir={run} ")
    assert validation == f"valid: {run}/atif/trajectory.json"
    assert sorted(p.name for p in run.iterdir()) == [
        "atif",
        "raw",
        "run-metadata.json",
        "summary.json",
        "work",  # the sample harness's own work area (hello.txt)
    ]
    assert (run / "raw" / "events.jsonl").stat().st_size > 0
    summary = orjson.loads((run / "summary.json").read_bytes())
    assert (summary["status"], summary["tools"]) == ("succeeded", {"calls": 4, "denied": 1})
    metadata = orjson.loads((run / "run-metadata.json").read_bytes())
    assert (metadata["dataset_id"], metadata["model_name"]) == ("premath-sample@1", "scripted")


def test_validate_script_fails_on_an_invalid_trajectory(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"agent": {"name": "a", "version": "1"}, "steps": []}')
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(SCRIPTS / "validate-atif.sh"), str(bad)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "steps: List should have at least 1 item" in done.stdout
