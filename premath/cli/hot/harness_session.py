"""`harness-session read|write|bootstrap`: bodies and text (declared in `cli/harness_session`)."""

from __future__ import annotations

from premath.cli._reply import AppContext, Reply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _lines(title: str, rows: list[tuple[str, Any]]) -> str:
    return "\n".join([title, *(f"  {label}: {value}" for label, value in rows)])


def session_text(action: str, document: dict[str, Any], extra: tuple[str, ...] = ()) -> str:
    session = document["session"]
    rows: list[tuple[str, Any]] = [
        ("Session ID", session["sessionId"]),
        ("State", session["state"]),
    ]
    if "issueId" in session:
        rows.append(("Issue", session["issueId"]))
    if "nextStep" in extra and "nextStep" in session:
        rows.append(("Next Step", session["nextStep"]))
    rows.append(("Path", document["path"]))
    return _lines(f"premath harness-session {action}", rows)


def bootstrap_text(document: dict[str, Any]) -> str:
    rows: list[tuple[str, Any]] = [
        ("Session Ref", document["sessionRef"]),
        ("Mode", document["mode"]),
    ]
    for label, key in (
        ("Resume Issue", "resumeIssueId"),
        ("Next Step", "nextStep"),
        ("Next Feature", "nextFeatureId"),
    ):
        if document[key] is not None:
            rows.append((label, document[key]))
    return _lines("premath harness-session bootstrap", rows)


def harness_session_read(path: str) -> Reply:
    """Show the session handoff, where the last agent stopped.

    \b
    premath harness-session read --json
    """
    from premath.harness.session import read_session_document

    return Reply(
        read_session_document(path), text=lambda d: session_text("read", d, extra=("nextStep",))
    )


def harness_session_write(
    app: AppContext,
    path: str,
    session_id: str | None,
    state: str,
    issue_id: str | None,
    summary: str | None,
    next_step: str | None,
    instruction_ref: tuple[str, ...],
    witness_ref: tuple[str, ...],
    lineage_ref: tuple[str, ...],
    issues: str,
) -> Reply:
    """Create or update the session handoff. Its sessionId and startedAt are kept on update.

    \b
    premath harness-session write --state active --issue-id bd-7 \\
        --summary "start" --json
    """
    from premath.harness.session import write_session

    session = write_session(
        path,
        now=app.clock.now(),
        lock_timeout_s=app.lock_timeout(),
        state=state,
        session_id=session_id,
        issue_id=issue_id,
        summary=summary,
        next_step=next_step,
        instruction_refs=instruction_ref,
        witness_refs=witness_ref,
        lineage_refs=lineage_ref,
        issues_path=issues,
    )
    document = {"action": "harness-session.write", "path": path, "session": session}
    return Reply(document, text=lambda d: session_text("write", d))


def harness_session_bootstrap(path: str, feature_ledger: str) -> Reply:
    """Show how the next agent should pick up the work. Resume or attach, with the next issue
    and feature.

    \b
    premath harness-session bootstrap --json
    """
    from premath.harness.session import bootstrap_session

    return Reply(bootstrap_session(path, feature_ledger), text=bootstrap_text)
