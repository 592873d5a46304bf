"""Terminal escalation once retries are spent: discover a follow-up issue, mark blocked, or stop.

specs/retry-policy.md "Escalation" states the rules. Ours differs where it was wrong: the discovered
issue carries an `Acceptance:` section and a verification command, so `issue check` still accepts
the graph (D5-9, its B10), and the issue that failed is marked blocked next to it so no loop
claims it again until someone looks; escalating an escalation issue marks it blocked instead of
discovering another one (no runaway chains).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from premath.errors import InputInvalid
from premath.harness.refs import stable_hash
from premath.harness.retry import PolicyDecision, decide
from premath.issues.held import Discovery
from premath.models.retry_policy import RetryDecision, RetryPolicy
from premath.models.vocabulary import ESCALATION_NOTE_HEAD, ESCALATION_TITLE_PREFIX
from premath.store.files import read_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.harness.authority import IssueAuthority

ACTIVE_ISSUE_ENV_KEYS = ("PREMATH_ACTIVE_ISSUE_ID", "PREMATH_ISSUE_ID")
SESSION_PATH_ENV = "PREMATH_HARNESS_SESSION_PATH"
DEFAULT_SESSION_PATH = ".premath/harness_session.json"


class EscalationError(InputInvalid):
    """Escalation could not run; `failure_class` is the reference's `escalation_*` class."""

    def __init__(self, failure_class: str, reason: str) -> None:
        super().__init__(f"{failure_class}: {reason}")
        self.failure_class = failure_class


@dataclass(frozen=True, slots=True)
class EscalationResult:
    action: str
    outcome: str
    """`applied`, `stop`, or `skipped` (the gate refused any mutation)."""
    issue_id: str | None
    created_issue_id: str | None = None
    note_digest: str | None = None
    details: str = ""
    refs: tuple[str, ...] = field(default=())

    def to_document(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "outcome": self.outcome,
            "issueId": self.issue_id,
            "createdIssueId": self.created_issue_id,
            "noteDigest": self.note_digest,
            "details": self.details,
        }

    def ref(self) -> str:
        """`escalation://<action>/<outcome>/<issue>[/<created>]` for trajectory witness refs."""
        tail = f"/{self.created_issue_id}" if self.created_issue_id else ""
        return f"escalation://{self.action}/{self.outcome}/{self.issue_id or 'none'}{tail}"


def escalation_note(
    *, scope: str, action: str, policy: RetryPolicy, decision: RetryDecision, witness_ref: str
) -> str:
    """The reference's ten-line `[harness-escalation]` note."""
    classes = ", ".join(decision.failure_classes) or "(none)"
    return "\n".join(
        (
            ESCALATION_NOTE_HEAD,
            f"scope: {scope}",
            f"action: {action}",
            f"policyId: {policy.policy_id}",
            f"policyDigest: {policy.policy_digest}",
            f"ruleId: {decision.rule_id}",
            f"matchedFailureClass: {decision.matched_failure_class}",
            f"attempt: {decision.attempt}/{decision.max_attempts}",
            f"failureClasses: {classes}",
            f"witnessRef: {witness_ref}",
        )
    )


def note_digest(scope: str, note: str) -> str:
    return "note1_" + stable_hash({"scope": scope, "note": note})


def discovered_description(
    note: str, issue_id: str, matched: str, verify_command: str | None
) -> str:
    """The follow-up issue's description: the note, acceptance and verification commands."""
    commands = ["- `premath issue check`"]
    if verify_command and verify_command.strip():
        commands.append(f"- `{verify_command.strip()}`")
    return "\n".join(
        (
            note,
            "",
            "Acceptance:",
            f"- the cause of `{matched}` on {issue_id} is found and fixed",
            f"- {issue_id} is reopened (status open) so a worker can claim it again",
            "",
            "Verification commands:",
            *commands,
        )
    )


def resolve_active_issue(
    env: Mapping[str, str],
    session_path: str | None = None,
    issues_path: str | None = None,
    now: datetime | None = None,
) -> tuple[str, str]:
    """(issue id, source): env keys in order, the harness session file, then a ready frontier
    of exactly one issue (specs/retry-policy.md "Escalation")."""
    found = [(key, env[key].strip()) for key in ACTIVE_ISSUE_ENV_KEYS if env.get(key, "").strip()]
    if len({value for _, value in found}) > 1:
        listed = ", ".join(f"{key}={value}" for key, value in found)
        raise EscalationError(
            "escalation_issue_context_ambiguous", f"conflicting issue context: {listed}"
        )
    if found:
        key, value = found[0]
        return value, f"env:{key}"
    path = session_path or env.get(SESSION_PATH_ENV, "").strip() or DEFAULT_SESSION_PATH
    if os.path.exists(path):
        import orjson

        try:
            session = orjson.loads(read_bounded(path))
        except (OSError, InputInvalid) as exc:
            raise EscalationError("escalation_session_read_failed", f"{path}: {exc}") from exc
        except orjson.JSONDecodeError as exc:
            raise EscalationError("escalation_session_invalid", f"{path}: {exc}") from exc
        if (
            not isinstance(session, dict)
            or session.get("sessionKind") != "premath.harness.session.v1"
        ):
            raise EscalationError("escalation_session_invalid", f"{path}: not a harness session")
        issue_id = session.get("issueId")
        if isinstance(issue_id, str) and issue_id.strip():
            return issue_id.strip(), f"session:{path}"
    if issues_path is not None and now is not None and os.path.exists(issues_path):
        from premath.issues.memory import ready

        ready_ids = [row["id"] for row in ready(issues_path, now=now)]
        if len(ready_ids) == 1:
            return ready_ids[0], f"ready:{issues_path}"
        if len(ready_ids) > 1:
            raise EscalationError(
                "escalation_issue_context_ambiguous",
                f"ready frontier contains multiple issues: {', '.join(ready_ids)}",
            )
    keys = ", ".join(ACTIVE_ISSUE_ENV_KEYS)
    raise EscalationError(
        "escalation_issue_context_unbound",
        f"no active issue: set {keys}, or write a harness session with an issueId ({path})",
    )


def _current_row(issues_path: str, issue_id: str, now: datetime) -> dict[str, Any]:
    from premath.issues.memory import read_store

    row = read_store(issues_path, now).get(issue_id)
    if row is None:
        raise EscalationError("escalation_issue_not_found", f"issue not found: {issue_id}")
    return dict(row)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What an escalation writes: its action (an escalation issue is blocked, never discovered
    from again), the note, and the follow-up issue to discover."""

    action: str
    note: str
    discovery: Discovery | None


def _plan(
    title: str,
    issue_id: str,
    *,
    scope: str,
    policy: RetryPolicy,
    decision: RetryDecision,
    witness_ref: str,
    verify_command: str | None,
) -> _Plan:
    action = decision.escalation_action
    if action == "issue_discover" and title.startswith(ESCALATION_TITLE_PREFIX):
        action = "mark_blocked"
    note = escalation_note(
        scope=scope, action=action, policy=policy, decision=decision, witness_ref=witness_ref
    )
    if action != "issue_discover":
        return _Plan(action, note, None)
    matched = decision.matched_failure_class
    discovery = Discovery(
        title=f"{ESCALATION_TITLE_PREFIX} {scope} retry exhausted ({matched})",
        description=discovered_description(
            note, issue_id, decision.matched_failure_class, verify_command
        ),
    )
    return _Plan(action, note, discovery)


def _details(where: str, created: str | None) -> str:
    return f"issuesPath={where}" + (f"; createdIssue={created}" if created else "")


def escalate(
    *,
    issues_path: str,
    issue_id: str,
    scope: str,
    policy: RetryPolicy,
    decision: RetryDecision,
    witness_ref: str,
    now: datetime,
    timeout_s: float,
    verify_command: str | None = None,
) -> EscalationResult:
    """Apply the decision's escalation to `issue_id` as the reference's CI wrappers do (no
    lease holder: `harness-policy escalate`); a loop step escalates with `escalate_held`."""
    action = decision.escalation_action
    if action == "stop":
        return EscalationResult("stop", "stop", issue_id, details="terminal stop with no mutation")
    from premath.issues.held import merge_notes
    from premath.issues.memory import discover_issue, update_issue
    from premath.store.issues_file import require_store_file

    require_store_file(issues_path)
    row = _current_row(issues_path, issue_id, now)
    plan = _plan(
        row["title"],
        issue_id,
        scope=scope,
        policy=policy,
        decision=decision,
        witness_ref=witness_ref,
        verify_command=verify_command,
    )
    note, created = plan.note, None
    if plan.discovery is not None:
        created = discover_issue(
            issues_path,
            issue_id,
            plan.discovery.title,
            description=plan.discovery.description,
            now=now,
            timeout_s=timeout_s,
        )["id"]
        note = f"{note}\ndiscoveredIssue: {created}"
    merged = merge_notes(row.get("notes", ""), note)
    update_issue(
        issues_path, issue_id, status="blocked", notes=merged, now=now, timeout_s=timeout_s
    )
    digest = note_digest(scope, note)
    return EscalationResult(
        plan.action, "applied", issue_id, created, digest, _details(issues_path, created)
    )


def escalate_held(
    authority: IssueAuthority,
    *,
    issue_id: str,
    holder: tuple[str, str | None],
    scope: str,
    policy: RetryPolicy,
    decision: RetryDecision,
    witness_ref: str,
    now: datetime,
    verify_command: str | None = None,
) -> EscalationResult:
    """A loop step's escalation: the issue is blocked (and its follow-up discovered, in the
    same write) only while `holder` (worker id, lease id) still holds it."""
    issue = authority.issue(issue_id, now)
    if not issue:
        raise EscalationError("escalation_issue_not_found", f"issue not found: {issue_id}")
    plan = _plan(
        issue["title"],
        issue_id,
        scope=scope,
        policy=policy,
        decision=decision,
        witness_ref=witness_ref,
        verify_command=verify_command,
    )
    worker_id, lease_id = holder
    finished = authority.finish(
        issue_id,
        worker_id,
        lease_id,
        status="blocked",
        now=now,
        note=plan.note,
        discover=plan.discovery,
    )
    created = finished.created_issue_id
    note = plan.note if created is None else f"{plan.note}\ndiscoveredIssue: {created}"
    digest = note_digest(scope, note)
    if not finished.applied:
        return EscalationResult(plan.action, "skipped", issue_id, None, digest, finished.reason)
    details = _details(authority.location(), created)
    return EscalationResult(plan.action, "applied", issue_id, created, digest, details)


@dataclass(frozen=True, slots=True)
class PolicyEscalation:
    """`harness-policy escalate`: the decision, and the escalation once retries are spent."""

    decided: PolicyDecision
    escalation: EscalationResult | None
    issue_source: str | None
    """Where the issue id came from (`option:--issue-id`, `session:<path>`, `ready:<path>`)."""


def escalate_on_policy(
    policy_path: str | None,
    failure_classes: Sequence[str],
    attempt: int,
    *,
    issues_path: str,
    issue_id: str | None,
    scope: str,
    witness_ref: str,
    now: datetime,
    timeout_s: float,
) -> PolicyEscalation:
    """Decide; when retries are spent, escalate the given issue or the active one."""
    decided = decide(policy_path, failure_classes, attempt)
    decision = decided.decision
    if decision.retry:
        return PolicyEscalation(decided, None, None)
    source: str | None
    if issue_id:
        source = "option:--issue-id"
    elif decision.escalation_action == "stop":
        source = None
    else:
        issue_id, source = resolve_active_issue(os.environ, issues_path=issues_path, now=now)
    result = escalate(
        issues_path=issues_path,
        issue_id=issue_id or "",
        scope=scope,
        policy=decided.policy,
        decision=decision,
        witness_ref=witness_ref,
        now=now,
        timeout_s=timeout_s,
    )
    return PolicyEscalation(decided, result, source)
