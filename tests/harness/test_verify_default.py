"""Without `--verify-cmd` the loop runs the issue's own verification commands (D16-1)."""

from premath.clock import SystemClock
from premath.harness.step import run_step, verify_command
from premath.issues.check import verification_commands
from premath.issues.memory import add_issue
from tests.harness.loop_support import issue_rows, worker_config

CLOCK = SystemClock()


def _issue(root, issue_id, description):
    add_issue(
        str(root / ".premath" / "issues.jsonl"),
        issue_id,
        issue_id=issue_id,
        description=description,
        now=CLOCK.now(),
        timeout_s=5,
    )


def test_the_commands_are_those_issue_check_finds_in_the_verification_section():
    assert verification_commands("Acceptance:\n- x\nVerification: `pytest -q`") == ["pytest -q"]
    assert verification_commands(
        "Acceptance:\n- x\n\nVerification commands:\n- `mise run test`\n- python3 -m x\n"
        "- make y\n\nNotes: `pytest`"
    ) == ["mise run test", "python3 -m x"]
    assert verification_commands("Run `pytest -q` some day.") == []


def test_the_issue_s_own_command_decides(tmp_path):
    _issue(tmp_path, "bd-1", "Acceptance:\n- x\nVerification: `sh -c 'test -f made.txt'`")
    cfg = worker_config(tmp_path, verify_cmd=None, work_cmd="true")
    failed = run_step(cfg, 1, CLOCK)
    assert failed is not None
    assert failed.outcome == "failed"
    assert failed.attempts[0].runs[1].command == "sh -c 'test -f made.txt'"
    _issue(tmp_path, "bd-2", "Acceptance:\n- x\nVerification: `sh -c 'test -f made.txt'`")
    cfg = worker_config(tmp_path, verify_cmd=None, work_cmd="touch made.txt")
    closed = run_step(cfg, 2, CLOCK)
    assert closed is not None
    assert (closed.claim.issue_id, closed.outcome) == ("bd-2", "completed")
    assert issue_rows(tmp_path)["bd-2"]["status"] == "closed"


def test_an_issue_without_commands_falls_back_to_mise_ci_check(tmp_path):
    # Resolution only: running `mise run ci-check` here would run this suite again.
    own = worker_config(tmp_path, verify_cmd=None)
    assert verify_command(own, {"description": "Acceptance:\n- x"}) == "mise run ci-check"
    both = "Verification commands:\n- `sh -c a`\n- `sh -c b`"
    assert verify_command(own, {"description": both}) == "sh -c a && sh -c b"
    given = worker_config(tmp_path, verify_cmd="make test")
    assert verify_command(given, {"description": both}) == "make test"
