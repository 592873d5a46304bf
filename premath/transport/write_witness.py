"""`metadata.premathWriteWitness`: who wrote an issue row, under which policy and instruction
(agent-surface.md §1.7)."""

import shutil
from typing import Any

from premath.issues.lifecycle import put_field
from premath.models.issue_row import IssueRow, sort_metadata

WITNESS_KIND = "bd.issue.write.v1"
NANOS_PER_MILLI = 1_000_000


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
) -> dict[str, Any]:
    """The witness of one accepted mutation; its id is the build time, not a content digest."""
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
        "jjSnapshot": jj_snapshot(repo_root),
    }


def jj_snapshot(repo_root: str) -> dict[str, Any] | None:
    """None where `jj` is not installed (the reference's answer when jj fails).

    TODO(issue 12): run `jj root`, `jj log` and `jj status` through runner.process where jj is.
    """
    del repo_root
    if shutil.which("jj") is None:
        return None
    return None


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
