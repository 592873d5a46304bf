"""`iss1_` snapshot refs of the issues store (specs/harness-session.md, specs/issue-memory.md)."""

from __future__ import annotations

import hashlib
import os

from premath.clock import SystemClock
from premath.lean import datetime
from premath.store.issues_file import IssueMap, canonical_line, load_issues

SNAPSHOT_PREFIX = "iss1_"


def snapshot_ref_of(issues: IssueMap) -> str:
    """`iss1_` + sha256 over each issue's canonical line (`\\n`-terminated), in id order."""
    digest = hashlib.sha256()
    for issue_id in sorted(issues):
        digest.update(canonical_line(issues[issue_id]))
    return SNAPSHOT_PREFIX + digest.hexdigest()


def issues_snapshot_ref(path: str, now: datetime | None = None) -> str | None:
    """The snapshot ref of the store at `path`, or None when it is missing or cannot be loaded.

    Like the reference, every load failure gives None silently. Rows without `created_at` or
    `updated_at` take `now` (the reference's load-time default), so such files hash differently
    on every call, exactly as in the reference.
    """
    if not path or not os.path.exists(path):
        return None
    try:
        issues = load_issues(path, now or SystemClock().now(), tolerate_torn_tail=False)
    except Exception:  # noqa: BLE001 - the reference turns every load failure into "no ref"
        return None
    return snapshot_ref_of(issues)
