"""The surreal query projection (`premath.surreal.issue_projection.v0`, agent-surface.md §1.8):
a copy of the issue store that `mcp-serve --issue-query-backend surreal` keeps beside it.

Ours serves reads from the authority (the JSONL store, warm in memory) and keeps the projection
file fresh for other readers: rebuilt when missing or older than the store, and after every
mutation. Written atomically (the reference writes it in place)."""

from __future__ import annotations

import os

from premath.store.atomic import write_atomic
from premath.store.canonical import document_bytes, with_serde_floats
from premath.store.issues_file import IssueMap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROJECTION_KIND = "premath.surreal.issue_projection.v0"


def projection_document(issues: IssueMap, issues_path: str, now_ns: int) -> dict[str, Any]:
    from premath.issues.snapshot import snapshot_ref_of

    return {
        "schema": 1,
        "kind": PROJECTION_KIND,
        "sourceIssuesPath": issues_path,
        "sourceSnapshotRef": snapshot_ref_of(issues),
        "generatedAtUnixMs": now_ns // 1_000_000,
        "issueCount": len(issues),
        "issues": [with_serde_floats(issues[issue_id]) for issue_id in sorted(issues)],
    }


def write_projection(path: str, issues: IssueMap, issues_path: str, now_ns: int) -> None:
    """Pretty JSON in struct order, no trailing newline, as the reference writes it."""
    data = document_bytes(projection_document(issues, issues_path, now_ns))
    write_atomic(path, data.removesuffix(b"\n"))


def projection_is_stale(path: str, issues_path: str) -> bool:
    """Missing, or older than the store (the reference's freshness rule is mtime only)."""
    try:
        return os.stat(path).st_mtime_ns < os.stat(issues_path).st_mtime_ns
    except OSError:
        return True
