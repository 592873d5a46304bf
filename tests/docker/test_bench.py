"""`premath bench run --sandbox-backend docker`: the harness and its tool calls in one container."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import orjson

from tests.docker.conftest import REPO, containers_named
from tests.support.cli import run_premath

TERMINAL_BENCH = REPO / "tools" / "terminal-bench"

# Proves where it runs: pid 1 of the container is the harness itself, so a tool call that reads
# /proc/1/cmdline sees `harness.py` only when it runs in the harness's container.
PROBE_HARNESS = """
import json, subprocess, sys, time
task = json.load(open(sys.argv[1]))
if task.get("sleep_s"):
    print("sleeping", flush=True)
    time.sleep(task["sleep_s"])
done = subprocess.run([*task["premath"]["tool"], "--", "cat", "/proc/1/cmdline"],
                      capture_output=True, text=True)
seen = json.loads(done.stdout)["stdout"].replace("\\0", " ")
subprocess.run([*task["premath"]["record"], "--row",
                json.dumps({"source": "agent", "message": "looked", "model_name": "m"})],
               check=True)
open(sys.argv[2], "w").write(json.dumps(
    {"outcome": "success" if "harness.py" in seen else "failure", "metrics": {"pid1": seen}}))
"""


def workspace_with(tmp_path: Path, harness: str) -> Path:
    workspace = tmp_path / "ws"
    (workspace / ".harness").mkdir(parents=True)
    (workspace / ".harness" / "harness.py").write_text(textwrap.dedent(harness))
    return workspace


def bench_argv(image: str, workspace: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "bench",
        "run",
        "--instruction",
        "look around",
        "--command",
        f"python3 {workspace}/.harness/harness.py",
        "--cwd",
        os.fspath(workspace),
        "--run-dir",
        os.fspath(run_dir),
        "--sandbox-backend",
        "docker",
        "--harness-image",
        image,
        *extra,
        "--json",
    ]


def test_the_harness_and_its_tool_calls_run_in_the_container(tmp_path, premath_image):
    workspace = workspace_with(tmp_path, PROBE_HARNESS)
    run_dir = tmp_path / f"run-{uuid.uuid4().hex[:8]}"
    completed = run_premath(
        *bench_argv(premath_image, workspace, run_dir), cwd=tmp_path, timeout=300
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert orjson.loads(completed.stdout)["status"] == "succeeded"
    result = orjson.loads((run_dir / "raw" / "out" / "result.json").read_bytes())
    assert "harness.py" in result["metrics"]["pid1"]
    metadata = orjson.loads((run_dir / "run-metadata.json").read_bytes())
    assert metadata["sandbox_backend"] == "docker"
    assert metadata["harness"]["image"] == premath_image
    assert metadata["harness"]["image_id"].startswith("sha256:")
    summary = orjson.loads((run_dir / "summary.json").read_bytes())
    assert (summary["tools"]["calls"], summary["trajectory"]["valid"]) == (1, True)
    assert containers_named(f"premath-bench-{run_dir.name}-") == []


def test_a_timeout_removes_the_container(tmp_path, premath_image):
    workspace = workspace_with(tmp_path, PROBE_HARNESS)
    task = tmp_path / "task.json"
    task.write_text('{"instruction": "wait", "sleep_s": 600}')
    run_dir = tmp_path / f"run-{uuid.uuid4().hex[:8]}"
    argv = bench_argv(premath_image, workspace, run_dir, "--timeout", "3")
    argv[argv.index("--instruction") : argv.index("--instruction") + 2] = ["--task", str(task)]
    completed = run_premath(*argv, cwd=tmp_path, timeout=120)
    assert completed.returncode == 1
    assert orjson.loads(completed.stdout)["failure_class"] == "timeout"
    assert containers_named(f"premath-bench-{run_dir.name}-") == []


def test_an_interrupted_run_removes_the_container(tmp_path, premath_image):
    workspace = workspace_with(tmp_path, PROBE_HARNESS)
    task = tmp_path / "task.json"
    task.write_text('{"instruction": "wait", "sleep_s": 600}')
    run_dir = tmp_path / f"run-{uuid.uuid4().hex[:8]}"
    argv = bench_argv(premath_image, workspace, run_dir)
    argv[argv.index("--instruction") : argv.index("--instruction") + 2] = ["--task", str(task)]
    run = subprocess.Popen(
        [sys.executable, "-m", "premath", *argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout = run_dir / "raw" / "harness.stdout"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (stdout.exists() and stdout.read_bytes()):
        time.sleep(0.1)
    run.send_signal(signal.SIGTERM)
    out, _ = run.communicate(timeout=60)
    assert run.returncode == 1
    assert orjson.loads(out)["failure_class"] == "interrupted"
    assert containers_named(f"premath-bench-{run_dir.name}-") == []


def test_an_image_without_premath_is_refused_before_the_run_starts(tmp_path, engine):
    workspace = workspace_with(tmp_path, PROBE_HARNESS)
    run_dir = tmp_path / f"run-{uuid.uuid4().hex[:8]}"
    completed = run_premath(*bench_argv(engine, workspace, run_dir), cwd=tmp_path, timeout=120)
    assert completed.returncode == 1
    assert (
        "has no working `premath` on its PATH" in orjson.loads(completed.stdout)["error"]["message"]
    )
    assert not run_dir.exists()


def test_the_local_smoke_script_runs_in_docker(tmp_path, premath_image):
    completed = subprocess.run(
        ["bash", os.fspath(TERMINAL_BENCH / "scripts" / "run-local.sh"), "--docker"],
        env={
            **os.environ,
            "BENCH_RUNS_DIR": os.fspath(tmp_path),
            "PYTHON": sys.executable,
            "BENCH_HARNESS_IMAGE": premath_image,
        },
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    (run_dir,) = tmp_path.iterdir()
    metadata = orjson.loads((run_dir / "run-metadata.json").read_bytes())
    assert metadata["sandbox_backend"] == "docker"
