"""A scriptable test harness and a helper that writes experiment folders around it."""

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from premath.runner.runs import RunState, latest_records

# The harness obeys the clean contract; the task's `mode` picks its behaviour, `--variant X`
# (a variant arg) lets a task pick a per-variant outcome. It reports what it saw (argv, env
# names, cwd) in its metrics, so tests read the invocation back from trials.jsonl.
HARNESS = r"""
import json, os, subprocess, sys, time

argv = sys.argv[1:]
task_path, result_path = argv[-2], argv[-1]
flags = argv[:-2]
variant = flags[flags.index("--variant") + 1] if "--variant" in flags else "control"
with open(task_path) as handle:
    task = json.load(handle)
mode = task.get("mode", "ok")
if mode == "by_variant":
    mode = task["modes"].get(variant, "ok")
seen = {"argv": argv, "env": sorted(os.environ), "cwd": os.getcwd(), "variant": variant}

def write(document):
    with open(result_path, "w") as handle:
        json.dump(document, handle)

if mode == "flaky":
    marker = task["marker"] + "." + variant
    if not os.path.exists(marker):
        open(marker, "w").close()
        sys.exit(5)
    mode = "ok"
if mode == "hang_once":
    if not os.path.exists(task["marker"]):
        open(task["marker"], "w").close()
        mode = "grandchild"
    else:
        mode = "ok"
if mode == "ok":
    write({"outcome": "success", "objective": {"name": "score", "value": task.get("score", 1.0)},
           "metrics": seen, "extra_key": "tolerated"})
elif mode == "fail":
    write({"outcome": "failure", "objective": {"name": "score", "value": task.get("score", 0.0)},
           "metrics": seen})
elif mode == "harness_error":
    write({"outcome": "error", "metrics": seen})
elif mode == "exit3":
    print("something broke", file=sys.stderr)
    sys.exit(3)
elif mode == "noresult":
    pass
elif mode == "notjson":
    with open(result_path, "w") as handle:
        handle.write("this is not json")
elif mode == "badschema":
    write({"outcome": "maybe"})
elif mode == "huge":
    with open(result_path, "w") as handle:
        handle.write('{"outcome": "success", "pad": "' + "x" * (9 * 1024 * 1024) + '"}')
elif mode == "symlink":
    os.symlink(task_path, result_path)
elif mode == "spew":
    chunk = b"y" * (1 << 20)
    for _ in range(task.get("mb", 50)):
        sys.stdout.buffer.write(chunk)
    write({"outcome": "success"})
elif mode == "sleep":
    time.sleep(60)
elif mode == "grandchild":
    child = subprocess.Popen(["sleep", "60"])
    with open(task["pid_file"], "w") as handle:
        handle.write(str(child.pid))
    time.sleep(60)
elif mode == "allocate":
    ballast = bytearray(task["mb"] * 1024 * 1024)
    write({"outcome": "success"})
elif mode == "slow":
    time.sleep(task.get("seconds", 0.2))
    write({"outcome": "success", "metrics": seen})
elif mode == "until":
    while not os.path.exists(task["release"]):
        time.sleep(0.01)
    write({"outcome": "success", "metrics": seen})
"""


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))


def make_experiment(
    folder: Path,
    tasks: list[dict[str, Any]],
    *,
    variants: list[dict[str, Any]] | None = None,
    **sections: Any,
) -> Path:
    """Write harness.py, tasks.jsonl and experiment.yaml into `folder`; returns the YAML path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "harness.py").write_text(HARNESS)
    write_jsonl(folder / "tasks.jsonl", tasks)
    document: dict[str, Any] = {
        "version": "1.0",
        "experiment": {"id": "exp", "name": "Test experiment"},
        "dataset": {"path": "tasks.jsonl"},
        "design": {"comparison": "paired", "replications": 1, "seed": 7},
        "baseline": {"variant_id": "control"},
        "variant_plan": variants if variants is not None else [],
        "runtime": {"command": [sys.executable, "harness.py"], "timeout_ms": 20_000},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(document.get(key), dict):
            document[key] = {**document[key], **value}
        else:
            document[key] = value
    path = folder / "experiment.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def final_records(state: RunState) -> dict[tuple[str, str, int], Any]:
    return {key: r for key, r in latest_records(state.paths).items() if r.final}


@pytest.fixture
def experiment_dir(tmp_path: Path) -> Path:
    return tmp_path / "exp"
