"""Escalation: the note and its digest, issue-context resolution, discover and mark_blocked."""

import orjson
import pytest

from premath.clock import SystemClock
from premath.harness.escalation import (
    EscalationError,
    escalate,
    escalation_note,
    note_digest,
    resolve_active_issue,
)
from premath.harness.retry import load_retry_policy, resolve_retry_decision
from premath.issues.held import merge_notes
from premath.issues.memory import check
from tests.harness.loop_support import issue_rows, make_issues

POLICY = load_retry_policy()
NOW = SystemClock().now()


def test_note_and_digest_match_the_reference_example():
    decision = resolve_retry_decision(POLICY, ["pipeline_missing_witness"], 2)
    note = escalation_note(
        scope="required",
        action=decision.escalation_action,
        policy=POLICY,
        decision=decision,
        witness_ref="artifacts/ciwitness/latest-required.json",
    )
    assert note.splitlines()[0] == "[harness-escalation]"
    assert "attempt: 2/2" in note
    assert note_digest("required", note) == (
        "note1_8b772f152c6ca5efe024f23a6dd31c02a89610df27fb0c0628fa94be5e5d191b"
    )


@pytest.mark.parametrize(
    ("existing", "note", "merged"),
    [("", "n", "n"), (" seed ", "n", "seed\n\nn"), ("seed\n\nn", "n", "seed\n\nn")],
)
def test_merge_notes_is_idempotent(existing, note, merged):
    assert merge_notes(existing, note) == merged


def test_issue_context_from_env_keys_in_order(tmp_path):
    assert resolve_active_issue({"PREMATH_ISSUE_ID": " bd-2 "}, str(tmp_path / "s.json")) == (
        "bd-2",
        "env:PREMATH_ISSUE_ID",
    )
    both = {"PREMATH_ACTIVE_ISSUE_ID": "bd-1", "PREMATH_ISSUE_ID": "bd-1"}
    assert resolve_active_issue(both)[1] == "env:PREMATH_ACTIVE_ISSUE_ID"
    with pytest.raises(EscalationError, match="escalation_issue_context_ambiguous"):
        resolve_active_issue({"PREMATH_ACTIVE_ISSUE_ID": "bd-1", "PREMATH_ISSUE_ID": "bd-2"})


def test_issue_context_from_the_session_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_bytes(orjson.dumps({"sessionKind": "premath.harness.session.v1", "issueId": "bd-9"}))
    assert resolve_active_issue({}, str(path)) == ("bd-9", f"session:{path}")
    path.write_text("{bad json")
    with pytest.raises(EscalationError, match="escalation_session_invalid"):
        resolve_active_issue({}, str(path))
    with pytest.raises(EscalationError, match="escalation_issue_context_unbound"):
        resolve_active_issue({}, str(tmp_path / "none.json"))


def test_discover_without_holder_blocks_and_keeps_the_graph_checkable(tmp_path):
    issues = make_issues(tmp_path, ["bd-1"])
    decision = resolve_retry_decision(POLICY, ["gate_timeout"], 3)
    result = escalate(
        issues_path=issues,
        issue_id="bd-1",
        scope="required",
        policy=POLICY,
        decision=decision,
        witness_ref="w.json",
        now=NOW,
        timeout_s=5,
        verify_command="mise run ci-check",
    )
    assert (result.action, result.outcome, result.created_issue_id) == (
        "issue_discover",
        "applied",
        "bd-2",
    )
    rows = issue_rows(tmp_path)
    assert rows["bd-1"]["status"] == "blocked"
    assert "discoveredIssue: bd-2" in rows["bd-1"]["notes"]
    assert "`mise run ci-check`" in rows["bd-2"]["description"]
    assert check(issues, now=NOW, note_warn_threshold=2000).accepted


def test_stop_mutates_nothing(tmp_path):
    issues = make_issues(tmp_path, ["bd-1"])
    before = (tmp_path / ".premath/issues.jsonl").read_bytes()
    result = escalate(
        issues_path=issues,
        issue_id="bd-1",
        scope="required",
        policy=POLICY,
        decision=resolve_retry_decision(POLICY, ["unknown_x"], 1),
        witness_ref="w.json",
        now=NOW,
        timeout_s=5,
    )
    assert (result.action, result.outcome) == ("stop", "stop")
    assert (tmp_path / ".premath/issues.jsonl").read_bytes() == before


def test_unknown_issue_is_an_escalation_error(tmp_path):
    issues = make_issues(tmp_path, ["bd-1"])
    with pytest.raises(EscalationError, match="escalation_issue_not_found"):
        escalate(
            issues_path=issues,
            issue_id="bd-404",
            scope="required",
            policy=POLICY,
            decision=resolve_retry_decision(POLICY, ["check_failed"], 1),
            witness_ref="w.json",
            now=NOW,
            timeout_s=5,
        )


def test_ready_frontier_of_one_is_the_context_and_of_many_is_ambiguous(tmp_path):
    issues = make_issues(tmp_path, ["bd-1"])
    assert resolve_active_issue({}, str(tmp_path / "none.json"), issues, NOW) == (
        "bd-1",
        f"ready:{issues}",
    )
    make_issues(tmp_path, ["bd-2"])
    with pytest.raises(
        EscalationError, match="ready frontier contains multiple issues: bd-1, bd-2"
    ):
        resolve_active_issue({}, str(tmp_path / "none.json"), issues, NOW)


def test_cli_escalate_marks_the_env_issue_blocked(cli_run, workdir, monkeypatch):
    make_issues(workdir, ["bd-1", "bd-2"])
    monkeypatch.setenv("PREMATH_ISSUE_ID", "bd-2")
    retry = cli_run("harness-policy", "escalate", "--failure-class", "gate_timeout", "--json")
    assert (retry.exit_code, retry.json["escalation"]) == (0, None)
    result = cli_run("harness-policy", "escalate", "--failure-class", "check_failed", "--json")
    assert result.exit_code == 0
    assert result.json["issueSource"] == "env:PREMATH_ISSUE_ID"
    assert result.json["escalation"]["action"] == "mark_blocked"
    assert issue_rows(workdir)["bd-2"]["status"] == "blocked"


def test_cli_escalate_without_context_fails_closed(cli_run, workdir, monkeypatch):
    make_issues(workdir, ["bd-1", "bd-2"])
    monkeypatch.delenv("PREMATH_ISSUE_ID", raising=False)
    monkeypatch.delenv("PREMATH_ACTIVE_ISSUE_ID", raising=False)
    result = cli_run("harness-policy", "escalate", "--failure-class", "check_failed", "--json")
    assert result.exit_code == 1
    assert "escalation_issue_context_ambiguous" in result.json["error"]["message"]
