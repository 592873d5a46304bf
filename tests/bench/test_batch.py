"""`premath bench batch`: task files and Harbor task folders under a variant matrix, each trial
a normal bench run folder, one comparison summary in the experiment report's format."""

import sys
from pathlib import Path

import orjson

from tests.support.cli import invoke

HARNESS = r"""
import json, sys
flags, task_path, result_path = sys.argv[1:-2], sys.argv[-2], sys.argv[-1]
task = json.load(open(task_path))
solved = "--strong" in flags or task["task_id"].startswith("easy")
json.dump({"outcome": "success" if solved else "failure"}, open(result_path, "w"))
"""


def _tasks(folder: Path) -> list[str]:
    (folder / "files").mkdir(parents=True)
    for name in ("easy-1", "hard-1"):
        task = {"task_id": name, "instruction": f"solve {name}"}
        (folder / "files" / f"{name}.json").write_bytes(orjson.dumps(task))
    harbor = folder / "harbor" / "hard-2"  # a Harbor dataset: one folder per task
    (harbor / "tests").mkdir(parents=True)
    (harbor / "instruction.md").write_text("solve hard-2\n")
    (harbor / "task.toml").write_text('version = "1.0"\n')
    return [str(folder / "files"), str(folder / "harbor")]


def test_batch_runs_every_task_under_every_variant_and_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.py").write_text(HARNESS)
    agent = f"{sys.executable} agent.py"
    result = invoke(
        "bench", "batch", *_tasks(tmp_path), "--variant", f"base={agent}",
        "--variant", f"strong={agent} --strong", "--replications", "2", "--run-id", "b",
        "--json",
    )  # fmt: skip
    assert (result.exit_code, result.stderr) == (0, "")
    document = result.json
    assert document["trials"] == {
        "scheduled": 12, "ran": 12, "success": 8, "failure": 4, "error": 0, "pending": 0,
    }  # fmt: skip
    report = document["report"]
    rates = {v["variant_id"]: v["pass_rate"] for v in report["variants"]}
    assert rates == {"base": 2 / 6, "strong": 1.0}
    run = tmp_path / ".premath" / "bench" / "batches" / "b"
    assert orjson.loads((run / "report.json").read_bytes()) == report
    # Each trial is a normal bench run folder, the Harbor task's folder passed along.
    bench_runs = sorted(run.glob("trials/*/attempt-1/out/bench-run"))
    assert len(bench_runs) == 12
    for folder in bench_runs:
        summary = orjson.loads((folder / "summary.json").read_bytes())
        assert summary["status"] == "succeeded"
        assert (folder / "atif" / "trajectory.json").is_file()
    harbor_input = next(
        run.glob("trials/*-base-hard-2-r0/attempt-1/out/bench-run/raw/in/task.json")
    )
    assert orjson.loads(harbor_input.read_bytes())["task_dir"].endswith("harbor/hard-2")
    # The batch is an experiment run: the report command reads it the same way.
    again = invoke("experiment", "report", str(run), "--json")
    assert again.json["variants"] == report["variants"]


def test_batch_refuses_bad_input_before_writing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    missing = invoke("bench", "batch", "nope", "--variant", "a=true", "--json")
    assert missing.exit_code == 1
    assert missing.json["error"]["code"] == "input_invalid"
    bad_variant = invoke("bench", "batch", str(tmp_path), "--variant", "noequals", "--json")
    assert bad_variant.exit_code == 2
    assert not (tmp_path / ".premath").exists()
