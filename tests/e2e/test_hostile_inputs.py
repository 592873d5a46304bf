"""Hostile input is an input or I/O error with its code, never `internal error` (issue 17)."""

import resource
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support.bench_runs import live_bench_run

DEEP_JSON = b'{"a":' * 1000 + b"1" + b"}" * 1000
EXPERIMENT = """\
version: "1.0"
experiment: {{id: x, name: x}}
dataset: {{path: tasks.jsonl}}
baseline: {{variant_id: control}}
design: {{replications: 1}}
runtime: {{command: [python3, harness.py], timeout_ms: {timeout}}}
{extra}"""


def _files(folder: Path, case: str) -> list[str]:
    """Write the case's input files; return the premath arguments that read them."""
    (folder / "tasks.jsonl").write_bytes(b'{"id":"t1"}\n')
    if case == "session nested 1000 deep":
        (folder / "s.json").write_bytes(DEEP_JSON)
        return ["harness-session", "read", "--path", "s.json"]
    if case == "ledger nested 1000 deep":
        (folder / "l.json").write_bytes(DEEP_JSON)
        return ["harness-feature", "read", "--path", "l.json"]
    if case == "join-check input nested 1000 deep":
        (folder / "j.json").write_bytes(DEEP_JSON)
        return ["harness-join-check", "--input", "j.json"]
    if case == "ATIF 100,000-digit integer":
        (folder / "t.json").write_bytes(b'{"schema_version": ' + b"9" * 100_000 + b"}")
        return ["atif", "validate", "t.json"]
    if case == "YAML nested 20,000 deep":
        (folder / "e.yaml").write_text("a: " + "[" * 20000 + "]" * 20000 + "\n")
        return ["experiment", "validate", "e.yaml"]
    if case == "timeout_ms 1e30":
        (folder / "e.yaml").write_text(EXPERIMENT.format(timeout="1.0e+30", extra=""))
        return ["experiment", "validate", "e.yaml"]
    if case == "5,000-digit key":
        env = "variant_plan:\n  - variant_id: a\n    env: {" + "1" * 5000 + ": x}\n"
        (folder / "e.yaml").write_text(EXPERIMENT.format(timeout=1000, extra=env))
        return ["experiment", "validate", "e.yaml"]
    if case == "task object 900 deep":
        (folder / "task.json").write_bytes(b'{"a":' * 900 + b"1" + b"}" * 900)
        return ["run", "--command", "true", "task.json"]
    if case == "dataset task 900 deep":
        (folder / "tasks.jsonl").write_bytes(b'{"id":"t","a":' + b"[" * 900 + b"]" * 900 + b"}\n")
        (folder / "e.yaml").write_text(EXPERIMENT.format(timeout=1000, extra=""))
        return ["experiment", "validate", "e.yaml"]
    if case == "bench tool without raw/tools":
        live_bench_run(folder / "run")
        return ["bench", "tool", "--run-dir", "run", "--", "true"]
    raise AssertionError(case)


CASES = [
    "session nested 1000 deep",
    "ledger nested 1000 deep",
    "join-check input nested 1000 deep",
    "ATIF 100,000-digit integer",
    "YAML nested 20,000 deep",
    "timeout_ms 1e30",
    "5,000-digit key",
    "task object 900 deep",
    "dataset task 900 deep",
    "bench tool without raw/tools",
]


@pytest.mark.parametrize("case", CASES)
def test_hostile_input_is_a_clear_error(tmp_path, case):
    argv = _files(tmp_path, case)
    proc = subprocess.run(
        [sys.executable, "-m", "premath", *argv, "--json"],
        cwd=tmp_path, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    document = orjson.loads(proc.stdout)
    assert b"internal error" not in proc.stdout + proc.stderr, proc.stderr
    if "error" in document:
        assert proc.returncode in (1, 2)
        assert document["error"]["code"] != "internal_error"


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


FULL_DISK_WRITES = [
    ["harness-session", "write", "--path", "s.json", "--summary", "x" * 8192],
    ["harness-feature", "write", "--path", "l.json", "--feature-id", "f", "--status", "pending",
     "--summary", "x" * 8192],
]  # fmt: skip


@pytest.mark.parametrize("argv", FULL_DISK_WRITES, ids=["session write", "feature write"])
def test_a_write_that_hits_a_full_disk_is_an_io_error(tmp_path, argv):
    proc = subprocess.run(
        [sys.executable, "-m", "premath", *argv, "--json"],
        cwd=tmp_path, capture_output=True, timeout=60, check=False,
        preexec_fn=_limit_file_size(1024),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    error = orjson.loads(proc.stdout)["error"]
    assert error["code"] == "io_error", error
    assert "File too large" in error["message"]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temp file left behind
