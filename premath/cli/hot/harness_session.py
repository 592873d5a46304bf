"""`harness-session read|write|bootstrap`: declarations, bodies and text.

`cli/harness_session.py` builds their click commands from these declarations."""

from __future__ import annotations

from premath.cli._declaration import CHOICE, JSON, command, option, path_param, project_path
from premath.cli._reply import AppContext, Reply
from premath.models.vocabulary import DEFAULT_ISSUES_PATH, SESSION_STATES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SESSION_PATH = ".premath/harness_session.json"
LEDGER_PATH = ".premath/harness_feature_ledger.json"
SESSION = path_param(SESSION_PATH, "Harness-session artifact path", "--session-path")


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


@command("harness-session read", SESSION, JSON, hot=True)
def harness_session_read(path: str) -> Reply:
    """Show the session handoff, where the last agent stopped.

    \b
    premath harness-session read --json
    """
    from premath.harness.session import read_session_document

    return Reply(
        read_session_document(path), text=lambda d: session_text("read", d, extra=("nextStep",))
    )


@command(
    "harness-session write",
    SESSION,
    option("--session-id", help="Explicit session id override"),
    option(
        "--state",
        kind=CHOICE,
        choices=SESSION_STATES,
        default="stopped",
        show_default=True,
        help="Session state",
    ),
    option("--issue-id", help="Current or resumed issue id"),
    option("--summary", help="Compact handoff summary"),
    option("--next-step", help="Next-step recommendation for bootstrap"),
    option("--instruction-ref", multiple=True, help="Instruction witness references"),
    option("--witness-ref", multiple=True, help="Gate/CI witness references"),
    option("--lineage-ref", multiple=True, help="Site lineage references (ctx/cover/refinement)"),
    project_path(
        "--issues",
        "--issues-path",
        "issues",
        default=DEFAULT_ISSUES_PATH,
        help_text="Issues JSONL path; the session records a digest of it",
    ),
    JSON,
    app=True,
    hot=True,
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


@command(
    "harness-session bootstrap",
    SESSION,
    project_path(
        "--feature-ledger",
        default=LEDGER_PATH,
        help_text="Feature ledger the next step is read from",
    ),
    JSON,
    hot=True,
)
def harness_session_bootstrap(path: str, feature_ledger: str) -> Reply:
    """Show how the next agent should pick up the work. Resume or attach, with the next issue
    and feature.

    \b
    premath harness-session bootstrap --json
    """
    from premath.harness.session import bootstrap_session

    return Reply(bootstrap_session(path, feature_ledger), text=bootstrap_text)
