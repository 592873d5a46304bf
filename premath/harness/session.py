"""The session handoff: read, write (under its lock, atomically) and the bootstrap projection.

Behaviour follows specs/harness-session.md; divergences are named where they apply.
"""

from __future__ import annotations

import os

from premath.harness.artifact_io import load_artifact, save_artifact
from premath.lean import datetime
from premath.models.session import (
    BOOTSTRAP_KIND,
    SESSION_KIND,
    SESSION_SCHEMA,
    in_field_order,
    parse_session,
)
from premath.models.vocabulary import DEFAULT_ISSUES_PATH
from premath.text import clean_optional, id_token, normalize_refs, rust_trim
from premath.timefmt import format_seconds_z, session_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_SESSION_PATH = ".premath/harness_session.json"


def load_session(path: str) -> dict[str, Any]:
    """The validated session at `path`, in field order."""
    return load_artifact(
        path,
        parse_session,
        read_prefix=f"failed to read harness session artifact {path}: ",
        parse_prefix=f"failed to parse harness session artifact {path}: ",
    )


def read_session_document(path: str) -> dict[str, Any]:
    """`harness-session read`: the session, so an agent can resume where the last one stopped."""
    return {"action": "harness-session.read", "path": path, "session": load_session(path)}


def generate_session_id(moment: datetime, issue_id: str | None) -> str:
    """`hs1_<%Y%m%dT%H%M%SZ>[_<token(issueId)>]` (specs/harness-session.md)."""
    stamp = f"hs1_{session_stamp(moment)}"
    return stamp if issue_id is None else f"{stamp}_{id_token(issue_id, 'session')}"


def write_session(
    path: str,
    *,
    now: datetime,
    lock_timeout_s: float,
    state: str = "stopped",
    session_id: str | None = None,
    issue_id: str | None = None,
    summary: str | None = None,
    next_step: str | None = None,
    instruction_refs: tuple[str, ...] = (),
    witness_refs: tuple[str, ...] = (),
    lineage_refs: tuple[str, ...] = (),
    issues_path: str = DEFAULT_ISSUES_PATH,
    recorded_issues_path: str | None = None,
) -> dict[str, Any]:
    """Create or update the session and return it as written.

    The snapshot ref is taken of the store at `issues_path`; the session names it as
    `recorded_issues_path` when given (the loop's repository-relative form, D16-7).

    A `None` text option or an empty ref tuple means "not given": the existing value is kept
    verbatim. A given blank text clears the field; a given ref list replaces the old one
    (`("",)` clears it).
    """
    from premath.issues.snapshot import issues_snapshot_ref
    from premath.store.locks import artifact_lock  # writers only: readers start leaner

    with artifact_lock(path, lock_timeout_s):
        existing = load_session(path) if os.path.exists(path) else {}
        stamp = format_seconds_z(now)
        resolved_issues_path = rust_trim(issues_path)
        fields: dict[str, Any] = {
            "schema": SESSION_SCHEMA,
            "sessionKind": SESSION_KIND,
            "state": state,
            "startedAt": existing.get("startedAt", stamp),
            "updatedAt": stamp,
            "stoppedAt": stamp if state == "stopped" else None,
            "issuesPath": resolved_issues_path
            if recorded_issues_path is None
            else recorded_issues_path,
            "issuesSnapshotRef": issues_snapshot_ref(resolved_issues_path),
        }
        for name, given in (("issueId", issue_id), ("summary", summary), ("nextStep", next_step)):
            fields[name] = existing.get(name) if given is None else clean_optional(given)
        for name, refs in (
            ("instructionRefs", instruction_refs),
            ("witnessRefs", witness_refs),
            ("lineageRefs", lineage_refs),
        ):
            fields[name] = normalize_refs(refs) if refs else existing.get(name, [])
        fields["sessionId"] = (
            clean_optional(session_id)
            or existing.get("sessionId")
            or generate_session_id(now, fields["issueId"])
        )
        session = in_field_order(fields)
        save_artifact(
            path, session, write_prefix=f"failed to write harness session artifact {path}: "
        )
    return session


def bootstrap_session(path: str, ledger_path: str) -> dict[str, Any]:
    """The `premath.harness.bootstrap.v1` projection: how the next agent should pick up."""
    from premath.harness.feature_ledger import project_next_feature

    session = load_session(path)
    projection = project_next_feature(
        ledger_path, error_prefix=f"failed to project harness feature ledger {ledger_path}: "
    )
    return {
        "action": "harness-session.bootstrap",
        "bootstrapKind": BOOTSTRAP_KIND,
        "sessionRef": path,
        "sessionId": session["sessionId"],
        "mode": "resume" if session["state"] == "stopped" else "attach",
        "resumeIssueId": session.get("issueId"),
        "nextStep": session.get("nextStep"),
        "summary": session.get("summary"),
        "instructionRefs": session.get("instructionRefs", []),
        "witnessRefs": session.get("witnessRefs", []),
        "lineageRefs": session.get("lineageRefs", []),
        "issuesPath": session.get("issuesPath"),
        "issuesSnapshotRef": session.get("issuesSnapshotRef"),
        "featureLedgerRef": ledger_path,
        "nextFeatureId": projection["nextFeatureId"] if projection else None,
        "featureClosureComplete": projection["closureComplete"] if projection else None,
        "featureCount": projection["featureCount"] if projection else None,
        "startedAt": session["startedAt"],
        "updatedAt": session["updatedAt"],
        "stoppedAt": session.get("stoppedAt"),
    }
