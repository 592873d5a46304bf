"""Replay parity (`premath scheme-eval --replay EFFECTS`): the same program on the same starting
stores gives the same effects; a drift is reported call by call (exit 1); a recording that is
truncated or from another program is refused before anything runs."""

import json
import shutil

import pytest

from tests.harness.loop_support import make_issues
from tests.instruction.host_support import (
    ALL_CLAIMS,
    CHANGE,
    accepted_instruction,
    evidence,
    host_repo,
    program,
)

READS = [
    {"callId": "ready", "action": "issue.ready"},
    {"callId": "show", "action": "issue.show"},
    {"callId": "deps", "action": "dep.diagnostics", "args": {"graphScope": "full"}},
]


@pytest.fixture
def repo(workdir):
    host_repo(workdir)
    make_issues(workdir, ["bd-1", "bd-2"])
    return workdir


def record(cli_run, *extra):
    result = cli_run(
        "scheme-eval", "--program", "prog.json", "--issue-id", "bd-1", *extra, "--json"
    )
    assert "effects" in result.json, result.stderr
    return result


def replay(cli_run, effects="run.json", *extra):
    args = ("--program", "prog.json", "--issue-id", "bd-1", "--replay", effects, *extra)
    return cli_run("scheme-eval", *args, "--json")


def save(workdir, result, name="run.json"):
    (workdir / name).write_text(result.stdout)


def test_a_read_only_program_replays_with_parity(cli_run, repo):
    program(repo, *READS)
    save(repo, record(cli_run))
    again = replay(cli_run)
    assert again.exit_code == 0, again.json
    assert again.json["replay"] == {
        "effectsPath": "run.json",
        "result": "parity",
        "recordedCallCount": 3,
        "replayedCallCount": 3,
        "differences": [],
    }


def mutating(repo):
    ref = accepted_instruction(repo, "20260301T000000Z-work", ALL_CLAIMS)
    calls = [
        {"callId": "note", "action": "issue.update", "args": {"notes": "seen"}},
        {"callId": "feature", "action": "harness.feature.write", "args": {"status": "in_progress"}},
        {"callId": "claim", "action": "issue.claim", "args": {"id": "bd-2", "assignee": "w"}},
        {
            "callId": "row",
            "action": "harness.trajectory.append",
            "args": {"action": "a", "resultClass": "ok"},
        },
    ]
    program(repo, *calls, **evidence(ref, f"{CHANGE}.all"))


def test_a_mutating_program_replays_with_parity_from_the_same_starting_stores(cli_run, repo):
    mutating(repo)
    start = repo / "start"
    shutil.copytree(repo / ".premath", start)
    first = record(cli_run)
    assert first.json["result"] == "accepted", first.json
    save(repo, first)
    shutil.rmtree(repo / ".premath")
    shutil.copytree(start, repo / ".premath")
    again = replay(cli_run)
    assert (again.exit_code, again.json["replay"]["result"]) == (0, "parity"), again.json["replay"]


def test_a_drift_is_reported_call_by_call_and_exits_1(cli_run, repo):
    mutating(repo)
    start = repo / "start"
    shutil.copytree(repo / ".premath", start)
    save(repo, record(cli_run))
    shutil.rmtree(repo / ".premath")
    shutil.copytree(start, repo / ".premath")
    cli_run("issue", "update", "bd-2", "--title", "Renamed")  # the starting store differs
    again = replay(cli_run)
    assert again.exit_code == 1
    (difference, *_rest) = again.json["replay"]["differences"]
    assert difference["callId"] == "claim"
    assert difference["field"] == "payload/issue/title"
    assert (difference["recorded"], difference["replayed"]) == ("task bd-2", "Renamed")


def test_changed_arguments_drift_on_the_args_digest(cli_run, repo):
    program(repo, *READS)
    save(repo, record(cli_run))
    edited = [*READS[:2], {**READS[2], "args": {"graphScope": "active"}}]
    program(repo, *edited)
    again = replay(cli_run)
    assert again.exit_code == 1
    fields = [d["field"] for d in again.json["replay"]["differences"]]
    assert fields[0] == "argsDigest"
    assert "payload/graphScope" in fields


def test_text_mode_lists_each_difference(cli_run, repo):
    program(repo, *READS)
    save(repo, record(cli_run))
    cli_run("issue", "update", "bd-1", "--title", "Renamed")
    text = cli_run(
        "scheme-eval", "--program", "prog.json", "--issue-id", "bd-1", "--replay", "run.json"
    )
    assert text.exit_code == 1
    assert "  Replay: drift (2 differences)" in text.stdout  # ready and show list the title
    assert "call 2 show (issue.show) payload/issue/title: recorded 'task bd-1', replayed" in (
        text.stdout
    )


@pytest.mark.parametrize(
    ("recording", "failure_class"),
    [
        (lambda doc: doc["effects"].pop(), "scheme_eval.replay_invalid"),
        (lambda doc: doc["effects"][0].pop("payload"), "scheme_eval.replay_invalid"),
        (
            lambda doc: doc["effects"][1].update(callId="other"),
            "scheme_eval.replay_program_mismatch",
        ),
        (
            lambda doc: doc["effects"][1].update(action="issue.list"),
            "scheme_eval.replay_program_mismatch",
        ),
        (
            lambda doc: doc.update(effects=[*doc["effects"]] * 2, executedCallCount=6),
            "scheme_eval.replay_program_mismatch",
        ),
    ],
)
def test_a_truncated_or_foreign_recording_is_refused_before_any_call(
    cli_run, repo, recording, failure_class
):
    program(repo, *READS)
    document = record(cli_run).json
    recording(document)
    (repo / "run.json").write_text(json.dumps(document))
    rows_before = (repo / ".premath" / "harness_trajectory.jsonl").read_bytes()
    again = replay(cli_run)
    assert (again.exit_code, set(again.json)) == (1, {"error"})
    assert failure_class in again.stderr
    assert (repo / ".premath" / "harness_trajectory.jsonl").read_bytes() == rows_before


def test_a_cut_recording_file_is_refused(cli_run, repo):
    program(repo, *READS)
    text = record(cli_run).stdout
    (repo / "run.json").write_text(text[: len(text) // 2])
    again = replay(cli_run)
    assert again.exit_code == 1
    assert "failed to parse replay effects JSON at run.json" in again.stderr
    assert "(scheme_eval.replay_invalid)" in again.stderr
