"""Shared set-up for loop tests: an issues file, a worker config, file readers."""

import shlex
import sys
from pathlib import Path
from typing import Any

import orjson

from premath.clock import SystemClock
from premath.harness.loop_config import WorkerConfig, make_worker_config
from premath.issues.memory import add_issue, dep_add

PY = shlex.quote(sys.executable)
ACCEPTABLE = "Do it.\n\nAcceptance:\n- done\n\nVerification commands:\n- `premath issue check`"


def py(code: str) -> str:
    """A shell command running `code` with this interpreter."""
    return f"{PY} -c {shlex.quote(code)}"


def make_issues(root: Path, ids: list[str], blocks: dict[str, list[str]] | None = None) -> str:
    path = str(root / ".premath" / "issues.jsonl")
    now = SystemClock().now()
    for issue_id in ids:
        add_issue(
            path,
            f"task {issue_id}",
            issue_id=issue_id,
            description=ACCEPTABLE,
            now=now,
            timeout_s=5,
        )
    for issue_id, blockers in (blocks or {}).items():
        for blocker in blockers:
            dep_add(path, issue_id, blocker, kind="blocks", created_by="test", now=now, timeout_s=5)
    return path


def worker_config(root: Path, worker_id: str = "w1", **overrides: Any) -> WorkerConfig:
    worktree = root / f"wt-{worker_id}"
    worktree.mkdir(exist_ok=True)
    options: dict[str, Any] = {
        "worker_id": worker_id,
        "repo_root": str(root),
        "worktree": str(worktree),
        "work_cmd": "true",
        "verify_cmd": "true",
        "backoff_scale": 0.0,
        "lock_timeout_s": 5.0,
    }
    options.update(overrides)
    return make_worker_config(**options)


def issue_rows(root: Path) -> dict[str, dict[str, Any]]:
    rows = {}
    for line in (root / ".premath" / "issues.jsonl").read_bytes().splitlines():
        if line.strip():
            row = orjson.loads(line)
            rows[row["id"]] = row
    return rows


def trajectory(root: Path) -> list[dict[str, Any]]:
    path = root / ".premath" / "harness_trajectory.jsonl"
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def session(root: Path, name: str = "harness_session.json") -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads((root / ".premath" / name).read_bytes())
    return result


def ledger(root: Path, name: str = "harness_feature_ledger.json") -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads((root / ".premath" / name).read_bytes())
    return result
