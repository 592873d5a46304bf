"""`issue show` (ours) and the warnings for input stored as given (divergence D16-2, D16-3)."""

import pytest

DESCRIPTION = "Do it.\n\nAcceptance:\n- done\n\nVerification: `pytest -q`"


def test_show_prints_the_whole_issue(cli_run):
    cli_run("issue", "add", "Blocker")
    cli_run("issue", "add", "Work", "--description", DESCRIPTION, "--priority", "1")
    cli_run("issue", "update", "bd-2", "--notes", "tried X; Y next")
    cli_run("dep", "add", "bd-2", "bd-1")
    cli_run("issue", "claim", "bd-2", "--assignee", "w1")
    shown = cli_run("issue", "show", "bd-2", "--json")
    assert (shown.exit_code, shown.stderr) == (0, "")
    issue = shown.json["issue"]
    assert (shown.json["action"], shown.json["issuesPath"]) == (
        "issue.show",
        ".premath/issues.jsonl",
    )
    assert (issue["title"], issue["description"], issue["notes"]) == (
        "Work",
        DESCRIPTION,
        "tried X; Y next",
    )
    assert (issue["status"], issue["priority"], issue["assignee"]) == ("in_progress", 1, "w1")
    assert issue["dependencies"] == [
        {"dependsOnId": "bd-1", "type": "blocks", "status": "open", "title": "Blocker"}
    ]
    assert (issue["lease"]["owner"], issue["lease"]["state"]) == ("w1", "active")
    text = cli_run("issue", "show", "bd-2").stdout
    assert "  Issue: bd-2 [in_progress p1 task]" in text
    assert "  - depends on bd-1 (blocks, open)" in text
    assert text.rstrip().endswith("Notes:\ntried X; Y next")
    assert f"Description:\n{DESCRIPTION}\n" in text


def test_show_of_an_unknown_issue_is_not_found(cli_run):
    cli_run("issue", "add", "One")
    result = cli_run("issue", "show", "bd-9", "--json")
    assert (result.exit_code, result.json["error"]) == (
        1,
        {"code": "not_found", "message": "issue not found: bd-9"},
    )


def test_unknown_status_and_blank_title_are_stored_with_a_warning(cli_run):
    added = cli_run("issue", "add", "", "--description", DESCRIPTION, "--json")
    assert added.exit_code == 0
    assert added.stderr == "warning: the title is blank: stored as given; give the issue a title\n"
    updated = cli_run("issue", "update", "bd-1", "--status", "Closed", "--json")
    assert (updated.exit_code, updated.json["issue"]["status"]) == (0, "Closed")
    assert updated.stderr.startswith("warning: status 'Closed' is not one of open, in_progress,")
    assert cli_run("issue", "update", "bd-1", "--status", "closed").stderr == ""
    cli_run("issue", "update", "bd-1", "--status", "bogus")
    check = cli_run("issue", "check", "--json").json
    assert check["warningClasses"] == ["issue_graph.status.unknown", "issue_graph.title.blank"]
    assert check["result"] == "accepted"  # warnings, as the reference accepts both


MISSING_ACCEPTANCE = "issue_graph.acceptance.missing"
MISSING_VERIFICATION = "issue_graph.verification_command.missing"
BOTH = [MISSING_ACCEPTANCE, MISSING_VERIFICATION]


@pytest.mark.parametrize(
    ("description", "warned", "rejected"),
    [
        ("", BOTH, BOTH),
        ("Acceptance:\n- x", [MISSING_VERIFICATION], [MISSING_VERIFICATION]),
        # `issue check` accepts an inline command, but the loop finds none to run: said too
        ("Acceptance:\n- x\nRun `pytest -q` first", [MISSING_VERIFICATION], []),
        ("Acceptance:\n- x\nVerification: `pytest -q`", [], []),
    ],
)  # fmt: skip
def test_adding_an_issue_issue_check_would_reject_warns_d25_3(
    cli_run, workdir, description, warned, rejected
):
    """The issue is stored as given; stderr says what `issue check` (or the loop) will miss."""
    added = cli_run("issue", "add", "T", "--description", description, "--json")
    assert added.exit_code == 0
    assert [line.split(": ")[1] for line in added.stderr.splitlines()] == warned
    assert sorted(cli_run("issue", "check", "--json").json["failureClasses"]) == rejected
    discovered = cli_run("issue", "discover", "bd-1", "Found", "--description", description)
    assert [line.split(": ")[1] for line in discovered.stderr.splitlines()] == warned
    closed = cli_run("issue", "add", "Done", "--status", "closed")
    assert closed.stderr == ""  # not active: `issue check` does not look at it


def test_an_unrecognised_verification_line_is_named_at_add_with_how_to_wrap_it(cli_run, workdir):
    """Issue 35: the warning names the line the user wrote, not "add a line" they already did."""
    description = "Acceptance:\n- x\nVerification:\n- kill -0 $PPID\n- `make check`"
    added = cli_run("issue", "add", "T", "--description", description)
    assert added.stderr == (
        f"warning: {MISSING_VERIFICATION}: no verification command, so `premath issue check` "
        "will reject this issue and the loop would verify it with `mise run ci-check`; "
        "`kill -0 $PPID` under Verification: does not start with a command word premath "
        "recognises (mise run, python3, cargo, premath, sh, nix develop -c, uv run, pytest); "
        "wrap it: Verification: `sh -c 'kill -0 $PPID'`\n"
    )


def test_a_verification_line_the_loop_would_skip_beside_a_recognised_one_is_named(cli_run, workdir):
    description = "Acceptance:\n- x\nVerification commands:\n- `pytest -q`\n- make lint"
    added = cli_run("issue", "add", "T", "--description", description)
    assert added.stderr == (
        f"warning: {MISSING_VERIFICATION}: the loop would run only `pytest -q`; `make lint` "
        "under Verification: does not start with a command word premath recognises (mise run, "
        "python3, cargo, premath, sh, nix develop -c, uv run, pytest); wrap it: Verification: "
        "`sh -c 'make lint'`\n"
    )
    assert cli_run("issue", "check", "--json").json["result"] == "accepted"
