"""The experiment runner's docker executor against a real engine: outcomes, limits, clean-up."""

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest
import yaml

from tests.docker.conftest import REPO, containers_named
from tests.support.cli import run_premath

EXAMPLE = REPO / "examples" / "clean_harness"
# Run ids unique to this session: container names derive from them, and other test sessions may
# share the engine.
RUN = {
    name: f"{name}{uuid.uuid4().hex[:8]}" for name in ("l", "d", "lim", "u", "oom", "slow", "int")
}

# Runs inside the container as `python3 -c PROBE <task> <result>`: reports what it may and may
# not do there, then does what the task asks (sleep, a `setsid` descendant, a large allocation).
PROBE = r"""
import json, os, sys, time
task_path, result_path = sys.argv[-2], sys.argv[-1]
task = json.load(open(task_path))
def can_write(path):
    try:
        with open(path, "a") as handle:
            handle.write("x")
        return True
    except OSError:
        return False
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
seen = {
    "interfaces": sorted(os.listdir("/sys/class/net")),
    "root_writable": can_write("/escaped.txt"),
    "task_writable": can_write(task_path),
    "cap_eff": status["CapEff"].strip(),
    "uid": os.getuid(),
}
print("probe started", flush=True)
if task.get("descendant"):
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)
if task.get("allocate_mb"):
    hoard = bytearray(task["allocate_mb"] << 20)
    for i in range(0, len(hoard), 4096):
        hoard[i] = 1
time.sleep(task.get("sleep_s", 0))
with open(result_path, "w") as handle:
    json.dump({"outcome": "success", "metrics": seen}, handle)
"""


def write_experiment(folder: Path, tasks: list[dict], **runtime: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tasks.jsonl").write_text("".join(orjson.dumps(t).decode() + "\n" for t in tasks))
    document = {
        "version": "1.0",
        "experiment": {"id": "probe", "name": "container probe"},
        "dataset": {"path": "tasks.jsonl"},
        "design": {"comparison": "paired", "replications": 1},
        "baseline": {"variant_id": "control"},
        "runtime": {"command": ["python3", "-c", PROBE], "timeout_ms": 60_000, **runtime},
        "concurrency": 2,
    }
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def run_json(*args: str, cwd: Path, timeout: float = 300, code: int = 0) -> dict:
    """The run's summary; `code` 1 for a run whose every trial ends in error."""
    completed = run_premath(*args, "--json", cwd=cwd, timeout=timeout)
    assert completed.returncode == code, completed.stderr.decode()
    return orjson.loads(completed.stdout)


def trial_rows(cwd: Path, run_id: str) -> list[dict]:
    log = cwd / ".premath" / "runs" / run_id / "trials.jsonl"
    rows = log.read_bytes().splitlines() if log.exists() else []
    return [orjson.loads(row) for row in rows]


def outcomes(cwd: Path, run_id: str) -> dict[tuple[str, str, int], str]:
    return {
        (row["variant_id"], row["task_id"], row["replication"]): row["outcome"]
        for row in trial_rows(cwd, run_id)
    }


def test_the_example_gives_the_same_outcomes_locally_and_in_containers(tmp_path, harness_image):
    local = tmp_path / "local"
    shutil.copytree(EXAMPLE, local)
    run_json("experiment", "run", "experiment.yaml", "--run-id", RUN["l"], cwd=local)
    boxed = tmp_path / "docker"
    shutil.copytree(EXAMPLE, boxed)
    text = (boxed / "experiment.yaml").read_text()
    (boxed / "experiment.yaml").write_text(
        text.replace("runtime:\n", f"runtime:\n  image: {harness_image}\n", 1)
    )
    run_json(
        "experiment",
        "run",
        "experiment.yaml",
        "--run-id",
        RUN["d"],
        "--executor",
        "docker",
        cwd=boxed,
    )
    assert outcomes(boxed, RUN["d"]) == outcomes(local, RUN["l"])
    counts = sorted(outcomes(local, RUN["l"]).values())
    assert (len(counts), counts.count("success"), counts.count("error")) == (72, 64, 0)
    assert {row["executor"] for row in trial_rows(boxed, RUN["d"])} == {"docker"}
    assert containers_named(f"premath-{RUN['d']}-") == []


def test_the_limits_hold_inside_the_container(tmp_path, engine):
    experiment = write_experiment(tmp_path, [{"id": "t1"}], image=engine)
    run_json(
        "experiment",
        "run",
        os.fspath(experiment),
        "--run-id",
        RUN["lim"],
        "--executor",
        "docker",
        cwd=tmp_path,
    )
    (row,) = trial_rows(tmp_path, RUN["lim"])
    assert row["outcome"] == "success", row
    seen = row["metrics"]
    assert seen["interfaces"] == ["lo"]
    assert seen["root_writable"] is False
    assert seen["task_writable"] is False
    assert int(seen["cap_eff"], 16) == 0
    assert seen["uid"] == 0
    assert not (tmp_path / "escaped.txt").exists()


def test_a_requested_user_runs_the_harness_and_can_write_out(tmp_path, engine):
    experiment = write_experiment(tmp_path, [{"id": "t1"}], image=engine, user="1000:1000")
    run_json(
        "experiment",
        "run",
        os.fspath(experiment),
        "--run-id",
        RUN["u"],
        "--executor",
        "docker",
        cwd=tmp_path,
    )
    (row,) = trial_rows(tmp_path, RUN["u"])
    assert (row["outcome"], row["metrics"]["uid"]) == ("success", 1000)


def test_the_oom_killer_is_its_own_error_class_and_keeps_partial_output(tmp_path, engine):
    experiment = write_experiment(
        tmp_path,
        [{"id": "t1", "allocate_mb": 1024}],
        image=engine,
        resources={"memory_mb": 128},
    )
    run_json(
        "experiment",
        "run",
        os.fspath(experiment),
        "--run-id",
        RUN["oom"],
        "--executor",
        "docker",
        cwd=tmp_path,
        code=1,  # its one trial errored
    )
    (row,) = trial_rows(tmp_path, RUN["oom"])
    assert (row["outcome"], row["error_class"]) == ("error", "oom_killed")
    stdout = next(
        (tmp_path / ".premath" / "runs" / RUN["oom"] / "trials").glob("*/attempt-1/stdout.txt")
    )
    assert stdout.read_text() == "probe started\n"
    assert containers_named(f"premath-{RUN['oom']}-") == []


def test_a_timeout_ends_the_container_with_its_setsid_descendants(tmp_path, engine):
    experiment = write_experiment(
        tmp_path,
        [{"id": "t1", "descendant": True, "sleep_s": 600}],
        image=engine,
        timeout_ms=2000,
    )
    started = time.monotonic()
    run_json(
        "experiment",
        "run",
        os.fspath(experiment),
        "--run-id",
        RUN["slow"],
        "--executor",
        "docker",
        cwd=tmp_path,
        code=1,  # its one trial errored
    )
    assert time.monotonic() - started < 60
    (row,) = trial_rows(tmp_path, RUN["slow"])
    assert row["error_class"] == "timeout"
    assert containers_named(f"premath-{RUN['slow']}-") == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_leaves_no_container_and_resumes(tmp_path, engine, signum):
    tasks = [{"id": f"t{n}", "sleep_s": 3} for n in range(4)]
    experiment = write_experiment(tmp_path, tasks, image=engine)
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "premath",
            "experiment",
            "run",
            os.fspath(experiment),
            "--run-id",
            RUN["int"],
            "--executor",
            "docker",
            "--json",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not containers_named(f"premath-{RUN['int']}-") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert containers_named(f"premath-{RUN['int']}-"), "no container started"
    run.send_signal(signum)
    run.communicate(timeout=60)
    assert run.returncode != 0
    assert containers_named(f"premath-{RUN['int']}-") == []
    done = {key for key, outcome in outcomes(tmp_path, RUN["int"]).items() if outcome != "error"}
    assert len(done) < 4
    run_json("experiment", "resume", RUN["int"], "--rerun-errors", cwd=tmp_path)
    final = outcomes(tmp_path, RUN["int"])
    assert sorted(final.values()) == ["success"] * 4
    assert containers_named(f"premath-{RUN['int']}-") == []


def test_an_image_that_is_not_local_is_refused_before_anything_is_written(tmp_path, engine):
    experiment = write_experiment(tmp_path, [{"id": "t1"}], image="premath-no-such-image:1")
    completed = run_premath(
        "experiment", "run", os.fspath(experiment), "--executor", "docker", "--json", cwd=tmp_path
    )
    assert completed.returncode == 1
    error = orjson.loads(completed.stdout)["error"]
    assert (
        "premath-no-such-image:1 is not on the Docker engine and premath never pulls"
        in (error["message"])
    )
    assert not (tmp_path / ".premath").exists()


def test_an_engine_that_does_not_answer_says_how_to_start_one(tmp_path, engine):
    experiment = write_experiment(tmp_path, [{"id": "t1"}], image=engine)
    completed = run_premath(
        "experiment",
        "run",
        os.fspath(experiment),
        "--executor",
        "docker",
        "--json",
        cwd=tmp_path,
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"},
    )
    assert completed.returncode == 1
    message = orjson.loads(completed.stdout)["error"]["message"]
    assert "needs a Docker engine" in message
    assert "mise run docker-setup" in message
