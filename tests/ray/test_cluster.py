"""`--executor ray` on a real two-node cluster: the same run folder as the local executor,
interrupts that cancel the cluster's tasks, and a lost node recorded as errors then rerun."""

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import yaml

from tests.bench import test_batch as batch
from tests.docker.conftest import BASE_IMAGE
from tests.docker.test_executor import write_experiment
from tests.ray.conftest import RayCluster
from tests.support import optional_tools
from tests.support.cli import run_premath

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "clean_harness"


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (run_dir / "trials.jsonl").read_bytes().splitlines()]


def _finals(run_dir: Path) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    latest = {}
    for row in _rows(run_dir):
        latest[(row["variant_id"], row["task_id"], row["replication"])] = row
    return {
        key: (row["outcome"], row["error_class"], row["objective"], row["final"])
        for key, row in latest.items()
    }


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = run_premath(*args, "--json", cwd=cwd, env=env, timeout=600)
    # stdout first: its document names the failed trials; stderr's tail is mostly Ray's logs
    assert proc.returncode == 0, (proc.stdout.decode()[-3000:], proc.stderr.decode()[-2000:])
    document: dict[str, Any] = orjson.loads(proc.stdout)  # stdout holds the document only
    return document


def _slow_experiment(folder: Path, delay_ms: int) -> Path:
    """The example's harness and tasks, each trial slowed down, no automatic retries."""
    folder.mkdir()
    shutil.copy(EXAMPLE / "harness.py", folder / "harness.py")
    shutil.copy(EXAMPLE / "tasks.jsonl", folder / "tasks.jsonl")
    document = yaml.safe_load((EXAMPLE / "experiment.yaml").read_text())
    delay = ["--delay-ms", str(delay_ms)]
    document["dataset"]["limit"] = 4
    document["design"]["replications"] = 1
    document["baseline"]["args"] = delay
    document["variant_plan"] = [{"variant_id": "fast", "args": ["--strategy", "fast", *delay]}]
    document["retry"] = {"max_attempts": 1}
    document["concurrency"] = 2
    document["executor"] = "ray"  # the file names the executor; no flag below
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _wait_for_rows(run_dir: Path, count: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 240
    while True:
        log = run_dir / "trials.jsonl"
        if log.exists() and len(log.read_bytes().splitlines()) >= count:
            return
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.1)


def _start_run(experiment: Path, runs: Path, run_id: str, env: dict[str, str]):
    argv = ["experiment", "run", os.fspath(experiment), "--runs-dir", os.fspath(runs)]
    return subprocess.Popen(
        [sys.executable, "-m", "premath", *argv, "--run-id", run_id, "--json"],
        cwd=runs.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_example_on_the_cluster_matches_the_local_executor(ray_cluster: RayCluster, tmp_path):
    example = os.fspath(EXAMPLE / "experiment.yaml")
    local = _run("experiment", "run", example, "--runs-dir", "runs", "--run-id", "l", cwd=tmp_path)
    on_ray = _run(
        "experiment",
        "run",
        example,
        "--executor",
        "ray",
        "--runs-dir",
        "runs",
        "--run-id",
        "r",
        cwd=tmp_path,
        env=ray_cluster.env,
    )
    assert on_ray["executor"] == "ray"
    assert on_ray["trials"] == local["trials"]
    assert on_ray["trials"]["scheduled"] == 72
    local_dir, ray_dir = tmp_path / "runs" / "l", tmp_path / "runs" / "r"
    assert _finals(ray_dir) == _finals(local_dir)
    assert {row["executor"] for row in _rows(ray_dir)} == {"ray"}
    # Rows differ only in their run, times, durations and executor.
    volatile = {"run_id", "duration_ms", "started_at", "finished_at", "executor", "metrics"}
    strip = [{k: v for k, v in row.items() if k not in volatile} for row in _rows(ray_dir)]
    local_strip = [{k: v for k, v in row.items() if k not in volatile} for row in _rows(local_dir)]
    key = lambda row: row["trial_id"]  # noqa: E731
    assert sorted(strip, key=key) == sorted(local_strip, key=key)
    # Each attempt's files came back to the run folder: result, and stderr the harness wrote.
    for trial in (local_dir / "trials").iterdir():
        ours, theirs = trial / "attempt-1", ray_dir / "trials" / trial.name / "attempt-1"
        listing = sorted(p.relative_to(ours).as_posix() for p in ours.rglob("*"))
        assert sorted(p.relative_to(theirs).as_posix() for p in theirs.rglob("*")) == listing
        assert (theirs / "stderr.txt").read_bytes() == (ours / "stderr.txt").read_bytes()
        answer = orjson.loads((theirs / "out" / "result.json").read_bytes())["answer"]
        assert answer == orjson.loads((ours / "out" / "result.json").read_bytes())["answer"]
    assert any((ray_dir / "trials").glob("*-fast-*/attempt-1/stderr.txt"))
    assert (
        b"solving" in next((ray_dir / "trials").glob("*-fast-*/attempt-1/stderr.txt")).read_bytes()
    )
    reports = [
        _run("experiment", "report", run, "--runs-dir", "runs", cwd=tmp_path) for run in "lr"
    ]
    assert reports[0]["variants"] == reports[1]["variants"]


def test_ctrl_c_cancels_the_cluster_tasks_and_resume_runs_only_what_is_missing(
    ray_cluster: RayCluster, tmp_path
):
    experiment = _slow_experiment(tmp_path / "exp", delay_ms=4000)
    runs = tmp_path / "runs"
    proc = _start_run(experiment, runs, "stop", ray_cluster.env)
    _wait_for_rows(runs / "stop", 2, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr.decode()[-2000:]
    assert b"experiment resume stop" in stderr
    recorded = _rows(runs / "stop")
    assert 2 <= len(recorded) < 8
    # The cancelled tasks ended their harnesses and cleaned their node folders.
    deadline = time.monotonic() + 120  # a hang guard: Ray's cancel crawls on a loaded machine
    while list(ray_cluster.scratch.glob("premath-ray-*")):
        assert time.monotonic() < deadline, "a cancelled Ray task left its attempt behind"
        time.sleep(0.2)
    resumed = _run(
        "experiment", "resume", "stop", "--runs-dir", "runs", cwd=tmp_path, env=ray_cluster.env
    )
    assert resumed["trials"]["ran"] == 8 - len(recorded)
    assert resumed["trials"]["pending"] == 0
    rows = _rows(runs / "stop")
    assert len(rows) == 8
    assert len({row["trial_id"] for row in rows}) == 8  # never recorded twice


def test_bench_batch_on_the_cluster(ray_cluster: RayCluster, tmp_path):
    (tmp_path / "agent.py").write_text(batch.HARNESS)
    agent = f"{sys.executable} agent.py"
    document = _run(
        "bench", "batch", *batch._tasks(tmp_path), "--variant", f"base={agent}",
        "--variant", f"strong={agent} --strong", "--executor", "ray", "--concurrency", "2",
        "--run-id", "b", cwd=tmp_path, env=ray_cluster.env,
    )  # fmt: skip
    assert document["executor"] == "ray"
    rates = {v["variant_id"]: v["pass_rate"] for v in document["report"]["variants"]}
    assert rates == {"base": 1 / 3, "strong": 1.0}
    summaries = list(
        (tmp_path / ".premath/bench/batches/b").glob("trials/*/*/out/bench-run/summary.json")
    )
    assert len(summaries) == 6  # each trial's bench run folder came back from its node


CONTAINER_PROBE = """
import json, os, sys
json.dump({"outcome": "success", "metrics": {"interfaces": sorted(os.listdir("/sys/class/net")),
           "uid": os.getuid()}}, open(sys.argv[-1], "w"))
"""


def test_an_experiment_naming_an_image_runs_in_containers_on_the_nodes(
    ray_cluster: RayCluster, tmp_path
):
    optional_tools.require(optional_tools.docker_engine())
    experiment = write_experiment(
        tmp_path / "exp",
        [{"id": "t1"}, {"id": "t2"}],
        image=BASE_IMAGE,
        command=["python3", "-c", CONTAINER_PROBE],
    )
    summary = _run(
        "experiment",
        "run",
        os.fspath(experiment),
        "--executor",
        "ray",
        "--runs-dir",
        "runs",
        "--run-id",
        "boxed",
        cwd=tmp_path,
        env=ray_cluster.env,
    )
    assert summary["trials"]["success"] == 2
    rows = _rows(tmp_path / "runs" / "boxed")
    assert {row["executor"] for row in rows} == {"ray"}
    assert [row["metrics"]["interfaces"] for row in rows] == [["lo"], ["lo"]]


def test_a_lost_node_becomes_errors_that_rerun_errors_completes(ray_cluster: RayCluster, tmp_path):
    """Last in this module: it kills the cluster's extra node."""
    experiment = _slow_experiment(tmp_path / "exp", delay_ms=3000)
    runs = tmp_path / "runs"
    local = _run(
        "experiment",
        "run",
        os.fspath(experiment),
        "--executor",
        "local",
        "--runs-dir",
        "runs",
        "--run-id",
        "local",
        cwd=tmp_path,
    )
    proc = _start_run(experiment, runs, "lost", ray_cluster.env)
    ray_cluster.wait_for_harness_on_worker("harness.py")
    ray_cluster.kill_worker()  # a trial is in flight on it
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr.decode()[-3000:]
    summary = orjson.loads(stdout)  # Ray's notice of the dead node went to stderr
    lost = [row for row in _rows(runs / "lost") if row["outcome"] == "error"]
    assert summary["trials"]["error"] == len(lost) >= 1
    assert {row["error_class"] for row in lost} == {"executor_failed"}
    assert all("Ray task" in row["message"] for row in lost), lost
    rerun = _run(
        "experiment",
        "resume",
        "lost",
        "--rerun-errors",
        "--runs-dir",
        "runs",
        cwd=tmp_path,
        env=ray_cluster.env,
    )
    assert rerun["trials"]["ran"] == len(lost)
    assert rerun["trials"] == {**local["trials"], "ran": len(lost)}
    assert _finals(runs / "lost") == _finals(runs / "local")
    rows = _rows(runs / "lost")
    attempts = Counter((row["trial_id"], row["attempt"]) for row in rows)
    assert max(attempts.values()) == 1  # no attempt recorded twice
    for row in lost:
        again = [r for r in rows if r["trial_id"] == row["trial_id"]]
        assert [r["attempt"] for r in again] == [1, 2]
