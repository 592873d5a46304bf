"""Every path argument refuses what is not a regular file: /dev/zero, a FIFO (issue 17).

Before, `/dev/zero` read until MemoryError (15 GB in 40 s for a dataset path) and a FIFO hung
forever. Each case runs the real CLI under a 1 GiB address-space limit and a deadline.
"""

import os
import resource
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ISSUE_ROW = (
    b'{"id":"bd-1","title":"one","status":"open","priority":2,"issue_type":"task",'
    b'"created_at":"2026-02-22T00:00:00Z","updated_at":"2026-02-22T00:00:00Z","ephemeral":false}\n'
)

COMMANDS: dict[str, list[str]] = {
    "run": ["run", "--command", "true", "{P}"],
    "harness-join-check": ["harness-join-check", "--input", "{P}"],
    "atif validate": ["atif", "validate", "{P}"],
    "harness-session read": ["harness-session", "read", "--path", "{P}"],
    "harness-feature read": ["harness-feature", "read", "--path", "{P}"],
    "issue list": ["issue", "list", "--issues", "{P}"],
    "harness-policy show": ["harness-policy", "show", "--policy", "{P}"],
    "issue update --notes-file": ["issue", "update", "bd-1", "--notes-file", "{P}"],
    "experiment validate": ["experiment", "validate", "{P}"],
    "experiment dataset.path": ["experiment", "validate", "experiment.yaml"],
    "harness-trajectory query": ["harness-trajectory", "query", "--path", "{P}"],
}

EXPERIMENT = """\
version: "1.0"
experiment: {{id: hostile, name: hostile}}
dataset: {{path: {P}}}
baseline: {{variant_id: control}}
design: {{replications: 1}}
runtime: {{command: [python3, harness.py], timeout_ms: 1000}}
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.fixture(params=["/dev/zero", "fifo"])
def hostile(request, tmp_path) -> str:
    if request.param == "fifo":
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        return str(fifo)
    return request.param


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_path_that_is_not_a_regular_file_is_a_clear_error(tmp_path, hostile, name):
    (tmp_path / ".premath").mkdir()
    (tmp_path / ".premath" / "issues.jsonl").write_bytes(ISSUE_ROW)
    (tmp_path / "experiment.yaml").write_text(EXPERIMENT.format(P=hostile))
    argv = [a.replace("{P}", hostile) for a in COMMANDS[name]]
    proc = subprocess.run(
        [sys.executable, "-m", "premath", *argv, "--json"],
        cwd=tmp_path, capture_output=True, timeout=60, check=False, preexec_fn=_limit_memory,
    )  # fmt: skip
    document = orjson.loads(proc.stdout)
    error = document.get("error") or _first_problem(document)
    assert proc.returncode in (1, 2), proc.stderr
    assert error["code"] != "internal_error", error
    assert "not a regular file" in error["message"] or "is not a file" in error["message"], error
    assert Path(hostile).name in error["message"]


def _first_problem(document: dict) -> dict:
    """Validators list problems in their document instead of failing outright."""
    problems = document.get("problems") or document.get("errors") or []
    if not problems and document.get("files"):
        problems = document["files"][0]["errors"]
    assert problems, document
    first = problems[0]
    return {"code": first.get("code", "input_invalid"), "message": first.get("message", "")}
