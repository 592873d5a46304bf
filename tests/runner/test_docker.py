"""The docker executor: the exact `docker run` line, a fake docker CLI, and a real engine if any."""

import os
import sys
from pathlib import Path

import orjson
import pytest

from premath.errors import InputInvalid
from premath.runner.executors import (
    Invocation,
    container_name,
    docker_argv,
    placed_container_name,
)
from premath.runner.runs import open_run, run_experiment
from tests.runner.conftest import final_records, make_experiment

REPO = Path(__file__).resolve().parents[2]
IMAGE_FORMAT = "{{.Id}} {{range .RepoDigests}}{{.}} {{end}}"


def invocation(**overrides) -> Invocation:
    fields = {
        "command": ("python", "harness.py"),
        "args": ("--temperature", "0.9"),
        "env": (("DEBUG", "1"),),
        "image": "my-harness:latest",
        "timeout_s": 300.0,
        "network": "none",
        "cpus": 2.0,
        "memory_mb": 2048,
        "workdir": Path("/unused"),
        "user": None,
        "label": "run1-000001-hot-t1-r0",
    } | overrides
    return Invocation(**fields)


def test_docker_argv_is_the_seed_line_hardened():
    argv = docker_argv(invocation(), "premath-x", "/runs/r/in/task.json", "/runs/r/out")
    assert argv == [
        "docker",
        "run",
        "--pull=never",
        "--name",
        "premath-x",
        "--network=none",
        "--read-only",
        "--security-opt",
        "no-new-privileges",
        "--cap-drop",
        "ALL",
        "--cpus=2",
        "--memory=2048m",
        "-v",
        "/runs/r/in/task.json:/in/task.json:ro",
        "-v",
        "/runs/r/out:/out",
        "-e",
        "DEBUG=1",
        "my-harness:latest",
        "python",
        "harness.py",
        "--temperature",
        "0.9",
        "/in/task.json",
        "/out/result.json",
    ]


def test_docker_argv_full_network_no_limits_no_env():
    argv = docker_argv(
        invocation(network="full", cpus=None, memory_mb=None, env=(), args=()),
        "n",
        "/t.json",
        "/o",
    )
    assert argv == [
        "docker",
        "run",
        "--pull=never",
        "--name",
        "n",
        "--read-only",
        "--security-opt",
        "no-new-privileges",
        "--cap-drop",
        "ALL",
        "-v",
        "/t.json:/in/task.json:ro",
        "-v",
        "/o:/out",
        "my-harness:latest",
        "python",
        "harness.py",
        "/in/task.json",
        "/out/result.json",
    ]
    fractional = docker_argv(invocation(cpus=0.5), "n", "/t", "/o")
    assert "--cpus=0.5" in fractional


def test_docker_argv_refuses_unmountable_paths_and_missing_images():
    with pytest.raises(InputInvalid, match="cannot mount"):
        docker_argv(invocation(), "n", "/a:b/task.json", "/o")
    with pytest.raises(InputInvalid, match="needs an image"):
        docker_argv(invocation(image=None), "n", "/t", "/o")


def test_container_names_are_docker_safe_and_placed():
    assert container_name("run 1/x", "attempt-2") == "premath-run_1_x-attempt-2"
    assert len(container_name("x" * 300)) == 128
    here, there = Path("/runs/a/attempt-1"), Path("/runs/b/attempt-1")
    assert placed_container_name(here, "r") == placed_container_name(here, "r")
    assert placed_container_name(here, "r") != placed_container_name(there, "r")
    assert len(placed_container_name(here, "x" * 300)) == 128


FAKE_DOCKER = r"""#!{python}
import json, os, sys, time
log = os.path.join(os.environ["DOCKER_CONFIG"], "calls.jsonl")
with open(log, "a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\n")
args = sys.argv[1:]
if args[0] == "version":
    print("24.0.7")
    sys.exit(0)
if args[0] == "rm":
    sys.exit(0)
if args[0] == "image":
    print("sha256:0")
    sys.exit(0)
if args[0] == "inspect":
    print("false")
    sys.exit(0)
mounts = [args[i + 1] for i, a in enumerate(args) if a == "-v"]
out_dir = [m.split(":")[0] for m in mounts if m.split(":")[1] == "/out"][0]
i = args.index("--cap-drop") + 2
while args[i].startswith("-"):
    i += 2 if args[i] in ("-v", "-e") else 1
image = args[i]
if "sleepy" in args:
    time.sleep(60)
with open(os.path.join(out_dir, "result.json"), "w") as handle:
    json.dump({{"outcome": "success", "metrics": {{"image": image}}}}, handle)
"""


@pytest.fixture
def fake_docker(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(FAKE_DOCKER.format(python=sys.executable))
    script.chmod(0o755)
    config = tmp_path / "docker-config"
    config.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DOCKER_CONFIG", os.fspath(config))
    return config / "calls.jsonl"


def _calls(log: Path) -> list[list[str]]:
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def test_a_docker_run_goes_through_the_cli_with_per_trial_names(workdir, clock, fake_docker):
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "t1"}],
        variants=[{"variant_id": "v2", "image": "harness:v2", "args": ["--variant", "v2"]}],
        runtime={"image": "harness:v1", "command": ["python", "harness.py"]},
    )
    run_experiment(
        os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="d1", executor="docker"
    )
    records = final_records(open_run("d1"))
    assert {key: r.metrics["image"] for key, r in records.items()} == {
        ("control", "t1", 0): "harness:v1",
        ("v2", "t1", 0): "harness:v2",
    }
    assert {r.executor for r in records.values()} == {"docker"}
    calls = _calls(fake_docker)
    assert calls[:3] == [
        ["version", "--format", "{{.Server.Version}}"],
        ["image", "inspect", "--format", IMAGE_FORMAT, "harness:v1"],
        ["image", "inspect", "--format", IMAGE_FORMAT, "harness:v2"],
    ]
    runs = [c for c in calls if c[0] == "run"]
    names = sorted(c[c.index("--name") + 1] for c in runs)
    trials = workdir / ".premath/runs/d1/trials"
    assert names == [
        placed_container_name(
            trials / "000000-control-t1-r0/attempt-1", "d1-000000-control-t1-r0", "attempt-1"
        ),
        placed_container_name(
            trials / "000001-v2-t1-r0/attempt-1", "d1-000001-v2-t1-r0", "attempt-1"
        ),
    ]
    assert names[0].startswith("premath-d1-000000-control-t1-r0-attempt-1-")
    attempt = (trials / "000001-v2-t1-r0/attempt-1").absolute()
    v2 = next(c for c in runs if "harness:v2" in c)
    assert v2[-7:] == [
        "harness:v2",
        "python",
        "harness.py",
        "--variant",
        "v2",
        "/in/task.json",
        "/out/result.json",
    ]
    assert f"{attempt}/in/task.json:/in/task.json:ro" in v2
    assert sorted(c[2] for c in calls if c[0] == "rm") == names


def test_a_timed_out_container_is_removed_by_name(workdir, clock, fake_docker):
    experiment = make_experiment(
        workdir / "exp",
        [{"id": "t1"}],
        runtime={"image": "img", "command": ["sleepy"], "timeout_ms": 500},
    )
    run_experiment(
        os.fspath(experiment), clock=clock, lock_timeout=5.0, run_id="d1", executor="docker"
    )
    (record,) = final_records(open_run("d1")).values()
    assert record.error_class == "timeout"
    removals = [c for c in _calls(fake_docker) if c[0] == "rm"]
    ((rm, force, name),) = removals
    assert (rm, force) == ("rm", "-f")
    assert name.startswith("premath-d1-000000-control-t1-r0-attempt-1-")


def test_no_engine_is_a_clear_error_before_anything_is_written(workdir, clock, monkeypatch):
    monkeypatch.setenv("PATH", os.fspath(workdir / "empty-bin"))
    experiment = make_experiment(workdir / "exp", [{"id": "t1"}], runtime={"image": "img"})
    with pytest.raises(InputInvalid, match="needs a Docker engine"):
        run_experiment(os.fspath(experiment), clock=clock, lock_timeout=5.0, executor="docker")
    assert not (workdir / ".premath").exists()


def test_an_attempt_the_executor_cannot_start_is_an_executor_failed_trial(
    workdir, clock, fake_docker
):
    experiment = make_experiment(workdir / "exp", [{"id": "t1"}], runtime={"image": "img"})
    run_experiment(
        os.fspath(experiment),
        clock=clock,
        lock_timeout=5.0,
        run_id="d1",
        executor="docker",
        runs_dir="runs:colon",
    )
    (record,) = final_records(open_run("d1", "runs:colon")).values()
    assert (record.outcome, record.error_class) == ("error", "executor_failed")
    assert "cannot mount" in (record.message or "")
    assert [c[0] for c in _calls(fake_docker)] == ["version", "image"]
