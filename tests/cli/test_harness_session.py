"""harness-session against the reference's worked examples (harness-cli.md §1.8), byte for byte."""

from datetime import UTC, datetime

import pytest

from premath.cli._root import AppContext
from premath.clock import FrozenClock
from tests.support.cli import invoke

ISSUES = (
    '{"id":"bd-a","title":"Issue A","status":"open","created_at":"2026-02-22T00:00:00Z",'
    '"updated_at":"2026-02-22T00:00:00Z"}\n'
    '{"id":"bd-b","title":"Issue B","status":"closed","created_at":"2026-02-22T00:00:00Z",'
    '"updated_at":"2026-02-22T00:00:00Z"}\n'
)
REF = "iss1_d1a09f4e7c6222a1ff157cf304cea1b0bc07d701c4971e222c5f6147f379fd44"


def at(hh: int, mm: int) -> AppContext:
    return AppContext(clock=FrozenClock(datetime(2026, 3, 1, hh, mm, tzinfo=UTC)), lock_timeout_s=2)


@pytest.fixture
def w(workdir):
    (workdir / "w").mkdir()
    (workdir / "w" / "issues.jsonl").write_text(ISSUES)
    return workdir / "w"


def hs_w1():
    return invoke(
        "harness-session",
        "write",
        "--path",
        "w/s.json",
        "--state",
        "active",
        "--issue-id",
        "BD-7/x",
        "--summary",
        "  start  ",
        "--witness-ref",
        "b",
        "--witness-ref",
        " a ",
        "--witness-ref",
        "b",
        "--witness-ref",
        "",
        "--issues",
        "w/none.jsonl",
        "--json",
        app=at(10, 0),
    )


def hs_w2():
    return invoke(
        "harness-session",
        "write",
        "--path",
        "w/s.json",
        "--next-step",
        " verify ",
        "--lineage-ref",
        "ctx://issue/bd-7/c1",
        "--issues",
        " w/issues.jsonl ",
        app=at(10, 5),
    )


def test_fresh_write_generates_id_and_normalises(w):
    out = hs_w1()
    assert (out.exit_code, out.stderr) == (0, "")
    assert (w / "s.json").read_text() == (
        '{\n  "schema": 1,\n  "sessionKind": "premath.harness.session.v1",\n'
        '  "sessionId": "hs1_20260301T100000Z_bd-7_x",\n  "state": "active",\n'
        '  "issueId": "BD-7/x",\n  "summary": "start",\n'
        '  "witnessRefs": [\n    "a",\n    "b"\n  ],\n'
        '  "startedAt": "2026-03-01T10:00:00Z",\n  "updatedAt": "2026-03-01T10:00:00Z",\n'
        '  "issuesPath": "w/none.jsonl"\n}\n'
    )
    assert out.stdout == (
        '{\n  "action": "harness-session.write",\n  "path": "w/s.json",\n  "session": {\n'
        '    "issueId": "BD-7/x",\n    "issuesPath": "w/none.jsonl",\n    "schema": 1,\n'
        '    "sessionId": "hs1_20260301T100000Z_bd-7_x",\n'
        '    "sessionKind": "premath.harness.session.v1",\n'
        '    "startedAt": "2026-03-01T10:00:00Z",\n    "state": "active",\n'
        '    "summary": "start",\n    "updatedAt": "2026-03-01T10:00:00Z",\n'
        '    "witnessRefs": [\n      "a",\n      "b"\n    ]\n  }\n}\n'
    )


def test_update_keeps_identity_and_adds_snapshot_ref(w):
    hs_w1()
    out = hs_w2()
    assert out.exit_code == 0
    assert out.stdout == (
        "premath harness-session write\n  Session ID: hs1_20260301T100000Z_bd-7_x\n"
        "  State: stopped\n  Issue: BD-7/x\n  Path: w/s.json\n"
    )
    assert (w / "s.json").read_text() == (
        '{\n  "schema": 1,\n  "sessionKind": "premath.harness.session.v1",\n'
        '  "sessionId": "hs1_20260301T100000Z_bd-7_x",\n  "state": "stopped",\n'
        '  "issueId": "BD-7/x",\n  "summary": "start",\n  "nextStep": "verify",\n'
        '  "witnessRefs": [\n    "a",\n    "b"\n  ],\n'
        '  "lineageRefs": [\n    "ctx://issue/bd-7/c1"\n  ],\n'
        '  "startedAt": "2026-03-01T10:00:00Z",\n  "updatedAt": "2026-03-01T10:05:00Z",\n'
        '  "stoppedAt": "2026-03-01T10:05:00Z",\n  "issuesPath": "w/issues.jsonl",\n'
        f'  "issuesSnapshotRef": "{REF}"\n}}\n'
    )
    read = invoke("harness-session", "read", "--path", "w/s.json")
    assert read.stdout == (
        "premath harness-session read\n  Session ID: hs1_20260301T100000Z_bd-7_x\n"
        "  State: stopped\n  Issue: BD-7/x\n  Next Step: verify\n  Path: w/s.json\n"
    )


def test_clearing_fields_keeps_id_and_drops_stopped_at(w):
    hs_w1()
    hs_w2()
    out = invoke(
        "harness-session",
        "write",
        "--path",
        "w/s.json",
        "--state",
        "active",
        "--issue-id",
        "",
        "--witness-ref",
        "",
        "--session-id",
        "  ",
        "--issues",
        "w/issues.jsonl",
        app=at(10, 10),
    )
    assert "Issue:" not in out.stdout
    session = invoke("harness-session", "read", "--path", "w/s.json", "--json").json["session"]
    assert session["sessionId"] == "hs1_20260301T100000Z_bd-7_x"
    assert "issueId" not in session
    assert "witnessRefs" not in session
    assert "stoppedAt" not in session
    assert (session["summary"], session["nextStep"], session["updatedAt"]) == (
        "start",
        "verify",
        "2026-03-01T10:10:00Z",
    )


def test_bootstrap_resume_without_ledger(w):
    hs_w1()
    hs_w2()
    out = invoke(
        "harness-session",
        "bootstrap",
        "--path",
        "w/s.json",
        "--feature-ledger",
        "w/missing-ledger.json",
        "--json",
    )
    assert out.exit_code == 0
    assert out.json == {
        "action": "harness-session.bootstrap",
        "bootstrapKind": "premath.harness.bootstrap.v1",
        "featureClosureComplete": None,
        "featureCount": None,
        "featureLedgerRef": "w/missing-ledger.json",
        "instructionRefs": [],
        "issuesPath": "w/issues.jsonl",
        "issuesSnapshotRef": REF,
        "lineageRefs": ["ctx://issue/bd-7/c1"],
        "mode": "resume",
        "nextFeatureId": None,
        "nextStep": "verify",
        "resumeIssueId": "BD-7/x",
        "sessionId": "hs1_20260301T100000Z_bd-7_x",
        "sessionRef": "w/s.json",
        "startedAt": "2026-03-01T10:00:00Z",
        "stoppedAt": "2026-03-01T10:05:00Z",
        "summary": "start",
        "updatedAt": "2026-03-01T10:05:00Z",
        "witnessRefs": ["a", "b"],
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "error: failed to parse harness session artifact w/bad.json: "),
        ("", "error: failed to parse harness session artifact w/bad.json: EOF while parsing"),
        (
            '{"schema":1,"sessionKind":"premath.harness.session.v1","sessionId":"s",'
            '"state":"paused","startedAt":"t","updatedAt":"t"}',
            "error: invalid harness session state paused (expected active|stopped)\n",
        ),
        (
            '{"schema":1.0,"sessionKind":"k","sessionId":"s","state":"active",'
            '"startedAt":"t","updatedAt":"t"}',
            "error: failed to parse harness session artifact w/bad.json: invalid type: "
            "floating point `1.0`, expected u32\n",
        ),
        (
            '{"schema":1,"sessionKind":"premath.harness.session.v1","sessionId":"s",'
            '"state":"active","startedAt":"t","updatedAt":"t","witnessRefs":null}',
            "error: failed to parse harness session artifact w/bad.json: invalid type: null, "
            "expected a sequence\n",
        ),
        (
            '{"schema":1,"sessionKind":"premath.harness.session.v1","state":"active",'
            '"startedAt":"t","updatedAt":"t"}',
            "error: failed to parse harness session artifact w/bad.json: missing field "
            "`sessionId`\n",
        ),
        (
            '{"schema":2,"sessionKind":"x","sessionId":"s","state":"active","startedAt":"t",'
            '"updatedAt":"t"}',
            "error: invalid harness session schema 2 (expected 1)\n",
        ),
        (
            '{"schema":1,"sessionKind":"premath.harness.session.v1","sessionId":" ",'
            '"state":"active","startedAt":"t","updatedAt":"t"}',
            "error: invalid harness session id (empty)\n",
        ),
        (b"\xff\xfe{}", "error: failed to parse harness session artifact w/bad.json: "),
        ('{"a":"\x00"}', "error: failed to parse harness session artifact w/bad.json: "),
    ],
)
def test_bad_session_files_are_refused_and_left_untouched(w, content, message):
    data = content if isinstance(content, bytes) else content.encode()
    (w / "bad.json").write_bytes(data)
    for args in (("read",), ("bootstrap",), ("write", "--state", "active")):
        out = invoke("harness-session", *args, "--path", "w/bad.json", "--json", app=at(10, 0))
        assert out.exit_code == 1
        assert out.stderr.startswith(message), out.stderr
        assert out.json["error"]["code"] == "artifact_invalid"
        assert out.json["error"]["message"] == out.stderr.removeprefix("error: ").rstrip("\n")
        assert (w / "bad.json").read_bytes() == data
    assert sorted(p.name for p in w.iterdir()) == ["bad.json", "issues.jsonl"]


def test_missing_session_and_directory(w):
    out = invoke("harness-session", "read", "--path", "w/missing.json")
    assert (out.exit_code, out.stdout) == (1, "")
    assert out.stderr == (
        "error: failed to read harness session artifact w/missing.json: "
        "No such file or directory (os error 2)\n"
    )
    (w / "dir.json").mkdir()
    out = invoke("harness-session", "write", "--path", "w/dir.json", "--json")
    assert out.exit_code == 1
    assert "Is a directory (os error 21)" in out.stderr
    assert sorted(p.name for p in w.iterdir()) == ["dir.json", "issues.jsonl"]


@pytest.mark.parametrize(
    "args",
    [
        ("--state", "paused"),
        ("--state", "Active"),
        ("--issue-id", "a", "--issue-id", "b"),
        ("--json", "--json"),
        ("--path", "a.json", "--path", "b.json"),
        ("--unknown",),
    ],
)
def test_usage_errors_exit_2_and_write_nothing(workdir, args):
    out = invoke("harness-session", "write", *args)
    assert (out.exit_code, out.stdout) == (2, "" if "--json" not in args else out.stdout)
    assert out.stderr
    assert list(workdir.iterdir()) == []


def test_usage_error_with_json_prints_error_object(workdir):
    out = invoke("harness-session", "write", "--state", "paused", "--json")
    assert out.exit_code == 2
    assert out.json["error"]["code"] == "usage_error"
    assert "paused" in out.json["error"]["message"]


def test_group_without_subcommand_is_usage_error(workdir):
    out = invoke("harness-session")
    assert out.exit_code == 2
    assert "read" in out.stderr
    assert out.stdout == ""
