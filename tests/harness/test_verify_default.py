"""Without `--verify-cmd` the loop runs the issue's own verification commands (D16-1)."""

import shutil

import pytest

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
    assert verify_command(own.commands, {"description": "Acceptance:\n- x"}) == "mise run ci-check"
    both = "Verification commands:\n- `sh -c a`\n- `sh -c b`"
    assert verify_command(own.commands, {"description": both}) == "sh -c a && sh -c b"
    given = worker_config(tmp_path, verify_cmd="make test")
    assert verify_command(given.commands, {"description": both}) == "make test"


def _path_with_only_sh(tmp_path, monkeypatch) -> None:
    """A PATH with a shell and nothing else: no mise, as on a new user's machine."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    monkeypatch.setenv("PATH", str(folder))


def test_without_mise_the_fallback_says_what_to_do_and_is_not_retried(
    cli_run, workdir, monkeypatch
):
    """D25-5: `mise run ci-check` where mise is missing: said before the first attempt, one
    attempt (a missing program is not transient), no escalation issue, the lease given back."""
    _issue(workdir, "bd-1", "Acceptance:\n- x")  # no Verification command: the mise fallback
    _path_with_only_sh(workdir, monkeypatch)
    result = cli_run("harness", "step", "--worker-id", "me", "--work-cmd", "true", "--json")
    assert result.exit_code == 1
    advice = "mise is not installed: add a Verification command to the issue or pass --verify-cmd"
    lines = result.stderr.splitlines()
    assert lines[:2] == ["[worker:me] claimed bd-1 (lease lease1_bd-1_me)", f"[worker:me] {advice}"]
    assert "failureClasses=command_not_found" in lines[2]
    step = result.json
    assert (step["attempts"], step["failureClasses"]) == (1, ["command_not_found"])
    assert step["nextStep"] == advice
    assert step["escalation"]["action"] == "stop"  # the policy's default rule: no retry
    rows = issue_rows(workdir)
    assert list(rows) == ["bd-1"]  # no escalation issue filed
    assert (rows["bd-1"]["status"], "lease" in rows["bd-1"]) == ("open", False)


@pytest.mark.parametrize(
    ("options", "advice"),
    [
        (("--verify-cmd", "no-such-tool -q"), "no-such-tool is not installed: fix --verify-cmd"),
        (("--work-cmd", "A=1 ./no-such.sh"), "./no-such.sh is not installed: fix --work-cmd"),
    ],
)
def test_a_missing_program_is_named_before_the_first_attempt(cli_run, workdir, options, advice):
    _issue(workdir, "bd-1", "Acceptance:\n- x\nVerification: `sh -c true`")
    result = cli_run("harness", "step", "--worker-id", "me", *options, "--json")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1] == f"[worker:me] {advice}"  # after the claim line
    assert (result.json["attempts"], result.json["failureClasses"]) == (1, ["command_not_found"])


def test_a_program_that_cannot_be_executed_is_not_retried(cli_run, workdir):
    (workdir / "tool.sh").write_text("#!/bin/sh\ntrue\n")  # not executable: sh exits 126
    _issue(workdir, "bd-1", "Acceptance:\n- x\nVerification: `sh -c true`")
    result = cli_run("harness", "step", "--worker-id", "me", "--work-cmd", "./tool.sh", "--json")
    assert (result.json["attempts"], result.json["failureClasses"]) == (
        1,
        ["command_not_executable"],
    )
    assert "not installed or not executable" in result.json["nextStep"]


UNRECOGNISED = (
    "bd-1: `kill -0 $PPID` under Verification: does not start with a command word premath "
    "recognises (mise run, python3, cargo, premath, sh, nix develop -c, uv run, pytest); wrap "
    "it: Verification: `sh -c 'kill -0 $PPID'`, or pass --verify-cmd; until then the loop "
    "verifies it with `mise run ci-check`"
)


def test_an_unrecognised_verification_line_is_named_with_the_words_and_the_wrap(
    cli_run, workdir, monkeypatch
):
    """Issue 35: `Verification: kill -0 $PPID` is no command the loop recognises; the step says
    which line, the words that are recognised and how to wrap it, and the wrap then works."""
    _issue(workdir, "bd-1", "Acceptance:\n- x\nVerification: kill -0 $PPID")
    _path_with_only_sh(workdir, monkeypatch)
    result = cli_run("harness", "step", "--worker-id", "me", "--work-cmd", "true", "--json")
    assert result.exit_code == 1
    advice = f"mise is not installed: {UNRECOGNISED}"
    assert result.stderr.splitlines()[1] == f"[worker:me] {advice}"
    assert result.json["nextStep"] == advice
    wrapped = "Acceptance:\n- x\nVerification: `sh -c 'kill -0 $PPID'`"
    assert cli_run("issue", "update", "bd-1", "--description", wrapped).exit_code == 0
    again = cli_run("harness", "step", "--worker-id", "me", "--work-cmd", "true", "--json")
    assert (again.exit_code, again.json["outcome"]) == (0, "completed")
    assert again.json["attempts"] == 1


def test_with_mise_installed_the_unrecognised_line_is_still_named(cli_run, workdir, monkeypatch):
    _issue(workdir, "bd-1", "Acceptance:\n- x\nVerification: kill -0 $PPID")
    _path_with_only_sh(workdir, monkeypatch)
    mise = workdir / "bin" / "mise"
    mise.write_text("#!/bin/sh\necho 'no task ci-check' >&2\nexit 1\n")
    mise.chmod(0o755)
    result = cli_run("harness", "step", "--worker-id", "me", "--work-cmd", "true", "--json")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1] == f"[worker:me] {UNRECOGNISED}"
    assert result.json["nextStep"].startswith(f"{UNRECOGNISED}; ")


def test_a_skipped_line_beside_a_recognised_command_is_named_and_the_rest_runs(cli_run, workdir):
    _issue(workdir, "bd-1", "Acceptance:\n- x\nVerification commands:\n- `sh -c true`\n- make lint")
    result = cli_run("harness", "step", "--worker-id", "me", "--work-cmd", "true", "--json")
    assert result.stderr.splitlines()[1] == (
        "[worker:me] bd-1: `make lint` under Verification: does not start with a command word "
        "premath recognises (mise run, python3, cargo, premath, sh, nix develop -c, uv run, "
        "pytest); wrap it: Verification: `sh -c 'make lint'`, or pass --verify-cmd; until then "
        "the loop runs only `sh -c true`"
    )
    assert (result.exit_code, result.json["outcome"]) == (0, "completed")
