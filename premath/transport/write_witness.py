"""`metadata.premathWriteWitness`: who wrote an issue row, under which policy and instruction
(agent-surface.md §1.7)."""

from __future__ import annotations

import os
import shutil
import time

from premath.issues.lifecycle import put_field
from premath.models.issue_row import sort_metadata

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow

WITNESS_KIND = "bd.issue.write.v1"
NANOS_PER_MILLI = 1_000_000
_JJ_OUTPUT_CAP = 1024 * 1024
JJ_LOOKUP_S = 1.0
"""How long a PATH lookup of `jj` holds: the MCP authority writes hundreds of times a second,
and searching PATH each time cost a claim more CPU than the rest of its witness."""
_jj_lookup: tuple[float, str, bool] | None = None


def write_witness(
    *,
    action: str,
    issue_id: str,
    issues_path: str,
    repo_root: str,
    mutation_policy: str,
    query_backend: str,
    instruction: dict[str, Any] | None,
    now_ns: int,
    jj: dict[str, Any] | None,
) -> dict[str, Any]:
    """The witness of one accepted mutation; its id is the build time, not a content digest.
    `jj` is `jj_snapshot(repo_root)`, taken by the caller before the store lock: up to three
    `jj` processes must not run while every other writer waits."""
    return {
        "schema": 1,
        "witnessKind": WITNESS_KIND,
        "witnessId": f"bdw1_{now_ns}",
        "action": action,
        "issueId": issue_id,
        "issuesPath": issues_path,
        "recordedAtUnixMs": now_ns // NANOS_PER_MILLI,
        "repoRoot": repo_root,
        "mutationPolicy": mutation_policy,
        "queryBackend": query_backend,
        "instruction": instruction,
        "jjSnapshot": jj,
    }


def _jj(argv: list[str], cwd: str) -> str | None:
    """The stdout of one `jj` command (bounded, 10 s), or None when it fails."""
    import tempfile

    from premath.runner.process import allowlisted_env, run_bounded

    with tempfile.TemporaryDirectory() as folder:
        stdout = os.path.join(folder, "stdout")
        outcome = run_bounded(
            ["jj", *argv],
            cwd=cwd,
            env=allowlisted_env(),
            timeout_s=10.0,
            stdout_path=stdout,
            stderr_path=None,
            output_cap=_JJ_OUTPUT_CAP,
        )
        if outcome.status != "ok" or outcome.exit_code != 0:
            return None
        with open(stdout, encoding="utf-8", errors="replace") as handle:
            return handle.read()


def _first_line(text: str | None) -> str | None:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[0] if lines else None


def _jj_installed() -> bool:
    """Whether `jj` is on PATH, as looked up at most `JJ_LOOKUP_S` ago with the same PATH."""
    global _jj_lookup
    now, path = time.monotonic(), os.environ.get("PATH", "")
    if _jj_lookup is None or _jj_lookup[1] != path or now - _jj_lookup[0] >= JJ_LOOKUP_S:
        _jj_lookup = (now, path, shutil.which("jj") is not None)
    return _jj_lookup[2]


def jj_snapshot(repo_root: str) -> dict[str, Any] | None:
    """`{repoRoot, changeId, status}` of the jj working copy, or None where jj is missing, the
    root is not a jj repository, or any command fails (the reference's three commands)."""
    if not _jj_installed() or not os.path.isdir(repo_root):
        return None
    root = _first_line(_jj(["root"], repo_root))
    if root is None:
        return None
    change_id = _first_line(_jj(["log", "-r", "@", "--no-graph", "-T", 'change_id ++ "\\n"'], root))
    status = _jj(["status"], root)
    if change_id is None or status is None:
        return None
    return {"repoRoot": root, "changeId": change_id, "status": status}


def attach(row: IssueRow, witness: dict[str, Any]) -> None:
    """Set `metadata.premathWriteWitness`: an object gains the key, another value is kept under
    `legacyMetadata`, no metadata becomes `{premathWriteWitness}`; keys stay sorted."""
    current = row.get("metadata")
    if isinstance(current, dict):
        metadata = {**current, "premathWriteWitness": witness}
    elif current is None and "metadata" not in row:
        metadata = {"premathWriteWitness": witness}
    else:
        metadata = {"legacyMetadata": current, "premathWriteWitness": witness}
    put_field(row, "metadata", sort_metadata(metadata))
