"""`premath harness-policy show|decide|classify|escalate`: the retry policy and its decisions."""

from __future__ import annotations

import click

from premath.cli._options import IntRange, json_option, project_path_option
from premath.cli._root import AppContext, Reply, StrictGroup, pass_app
from premath.models.vocabulary import DEFAULT_ISSUES_PATH

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

attempt_option = click.option(
    "--attempt",
    type=IntRange(min=1),
    default=1,
    show_default=True,
    help="Which attempt failed (1 is the first)",
)
policy_option = click.option(
    "--policy",
    "policy_path",
    default=None,
    help="Retry policy path [default: policies/control/harness-retry-policy-v1.json, "
    "else the policy shipped with premath]",
)


def _show_text(document: dict[str, object]) -> str:
    rules = document["rules"]
    assert isinstance(rules, list)
    lines = [
        "premath harness-policy show",
        f"  Policy: {document['policyId']} ({document['policyPath']})",
        f"  Digest: {document['policyDigest']}",
    ]
    for rule in [*rules, document["defaultRule"]]:
        assert isinstance(rule, dict)
        lines.append(
            f"  - {rule['ruleId']}: maxAttempts={rule['maxAttempts']} "
            f"backoff={rule['backoffClass']} escalation={rule['escalationAction']}"
        )
    return "\n".join(lines)


def _decision_text(document: dict[str, object]) -> str:
    decision = document["decision"]
    assert isinstance(decision, dict)
    verdict = "retry" if decision["retry"] else f"escalate ({decision['escalationAction']})"
    return "\n".join(
        (
            "premath harness-policy decide",
            f"  Matched: {decision['matchedFailureClass']} -> rule {decision['ruleId']}",
            f"  Attempt: {decision['attempt']}/{decision['maxAttempts']}",
            f"  Decision: {verdict}, backoff {decision['backoffClass']} "
            f"({document['backoffSeconds']}s)",
        )
    )


@click.group("harness-policy", cls=StrictGroup)
def harness_policy() -> None:
    """Inspect the retry policy and what it decides.

    Rules, decisions and failure classification; see specs/retry-policy.md.
    """


@harness_policy.command("show")
@policy_option
@json_option
def harness_policy_show(policy_path: str | None) -> Reply:
    """Show the retry policy after checking its shape and digest.

    \b
    premath harness-policy show --json
    """
    from premath.harness.retry import load_retry_policy

    document = {"action": "harness-policy.show", **load_retry_policy(policy_path).to_document()}
    return Reply(document, text=_show_text)


@harness_policy.command("decide")
@policy_option
@click.option(
    "--failure-class", "failure_classes", multiple=True, help="Failure class, in order (repeatable)"
)
@attempt_option
@json_option
def harness_policy_decide(
    policy_path: str | None, failure_classes: tuple[str, ...], attempt: int
) -> Reply:
    """Decide retry or escalation for failure classes at an attempt.

    \b
    premath harness-policy decide --failure-class gate_timeout --attempt 2 --json
    """
    from premath.harness.retry import decide
    from premath.harness.retry_documents import decision_document

    decided = decide(policy_path, failure_classes, attempt)
    return Reply(decision_document(decided), text=_decision_text)


@harness_policy.command("classify")
@policy_option
@click.option("--stdout-file", type=click.Path(dir_okay=False), help="A command's captured stdout")
@click.option("--stderr-file", type=click.Path(dir_okay=False), help="A command's captured stderr")
@click.option("--witness", "witness_path", help="A gate witness JSON file")
@attempt_option
@json_option
def harness_policy_classify(
    policy_path: str | None,
    stdout_file: str | None,
    stderr_file: str | None,
    witness_path: str | None,
    attempt: int,
) -> Reply:
    """Classify a failed command's output, then decide as `decide` does. A witness file is
    classified too, when given.

    \b
    premath harness-policy classify --witness witness.json --json
    """
    from premath.harness.retry import classify_files, decide
    from premath.harness.retry_documents import classify_document

    classification = classify_files(stdout_file, stderr_file, witness_path)
    decided = decide(policy_path, classification.failure_classes, attempt)
    return Reply(classify_document(classification, decided), text=_decision_text)


def _escalate_text(document: dict[str, Any]) -> str:
    escalation = document["escalation"]
    decision = document["decision"]
    if escalation is None:
        return f"retry {decision['attempt']}/{decision['maxAttempts']} (rule={decision['ruleId']})"
    return (
        f"escalation action={escalation['action']} outcome={escalation['outcome']} "
        f"issue={escalation['issueId']}"
        + (f" created={escalation['createdIssueId']}" if escalation["createdIssueId"] else "")
    )


@harness_policy.command("escalate")
@policy_option
@click.option("--failure-class", "failure_classes", multiple=True, help="Failure class, in order")
@attempt_option
@click.option(
    "--issue-id",
    help="Issue to escalate [default: PREMATH_ACTIVE_ISSUE_ID, PREMATH_ISSUE_ID, the harness "
    "session's issue, else the only ready issue]",
)
@project_path_option(
    "--issues",
    "--issues-path",
    "issues_path",
    default=DEFAULT_ISSUES_PATH,
    help_text="Issues JSONL the escalation writes to",
)
@click.option("--scope", default="required", show_default=True, help="Escalation scope label")
@click.option("--witness-ref", default="", help="Witness the failure came from")
@json_option
@pass_app
def harness_policy_escalate(app: AppContext, /, **options: Any) -> Reply:
    """Decide, and once retries are spent, apply the escalation. The issue is released, blocked,
    or a follow-up issue is filed.

    \b
    premath harness-policy escalate --failure-class check_failed --attempt 3 \\
        --json
    """
    from premath.harness.escalation import escalate_on_policy
    from premath.harness.retry_documents import escalate_document

    result = escalate_on_policy(
        options["policy_path"],
        options["failure_classes"],
        options["attempt"],
        issues_path=options["issues_path"],
        issue_id=options["issue_id"],
        scope=options["scope"],
        witness_ref=options["witness_ref"],
        now=app.clock.now(),
        timeout_s=app.lock_timeout(),
    )
    return Reply(escalate_document(result), text=_escalate_text)
