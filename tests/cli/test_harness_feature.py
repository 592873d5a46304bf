"""harness-feature against the reference's worked examples (harness-cli.md §2.8), byte for byte."""

from datetime import UTC, datetime

import pytest

from premath.cli._root import AppContext
from premath.clock import FrozenClock
from tests.support.cli import invoke

BAD = (
    '{"schema":1,"ledgerKind":"premath.harness.feature_ledger.v1","updatedAt":"2026-03-01T00:00:00Z",'
    '"features":[{"featureId":"x","status":"in_progress","updatedAt":"t"},{"featureId":" x ",'
    '"status":"done","updatedAt":""},{"featureId":"y","status":"in_progress","updatedAt":"t",'
    '"instructionRefs":["ok"," "]},{"featureId":"z","status":"completed","updatedAt":"t"},'
    '{"featureId":"","status":"pending","updatedAt":"t"}]}'
)
ALL_CLASSES = (
    "harness_feature_ledger.completed_missing_verification_ref, "
    "harness_feature_ledger.feature.updated_at.empty, harness_feature_ledger.feature_id.duplicate, "
    "harness_feature_ledger.feature_id.empty, harness_feature_ledger.in_progress.non_contractible, "
    "harness_feature_ledger.instruction_ref.empty, harness_feature_ledger.status.invalid"
)


def at(hh: int, mm: int) -> AppContext:
    return AppContext(clock=FrozenClock(datetime(2026, 3, 1, hh, mm, tzinfo=UTC)), lock_timeout_s=2)


def f_w1():
    return invoke(
        "harness-feature",
        "write",
        "--path",
        "w/l.json",
        "--feature-id",
        " feat.b ",
        "--status",
        "pending",
        "--session-ref",
        " ",
        "--summary",
        "later",
        "--json",
        app=at(11, 0),
    )


def f_w2():
    return invoke(
        "harness-feature",
        "write",
        "--path",
        "w/l.json",
        "--feature-id",
        "feat.a",
        "--status",
        "in_progress",
        "--issue-id",
        "bd-7",
        "--instruction-ref",
        "i2",
        "--instruction-ref",
        "i1",
        "--session-ref",
        ".premath/harness_session.json",
        app=at(11, 5),
    )


def test_new_ledger_and_sorted_insert(workdir):
    out = f_w1()
    assert out.exit_code == 0
    assert out.json["featureId"] == "feat.b"
    assert (workdir / "w/l.json").read_text() == (
        '{\n  "schema": 1,\n  "ledgerKind": "premath.harness.feature_ledger.v1",\n'
        '  "updatedAt": "2026-03-01T11:00:00Z",\n  "features": [\n    {\n'
        '      "featureId": "feat.b",\n      "status": "pending",\n      "summary": "later",\n'
        '      "updatedAt": "2026-03-01T11:00:00Z"\n    }\n  ]\n}\n'
    )
    out = f_w2()
    assert out.stdout == "premath harness-feature write\n  Feature: feat.a\n  Path: w/l.json\n"
    assert (workdir / "w/l.json").read_text() == (
        '{\n  "schema": 1,\n  "ledgerKind": "premath.harness.feature_ledger.v1",\n'
        '  "sessionRef": ".premath/harness_session.json",\n'
        '  "updatedAt": "2026-03-01T11:05:00Z",\n  "features": [\n    {\n'
        '      "featureId": "feat.a",\n      "status": "in_progress",\n      "issueId": "bd-7",\n'
        '      "instructionRefs": [\n        "i1",\n        "i2"\n      ],\n'
        '      "updatedAt": "2026-03-01T11:05:00Z"\n    },\n    {\n'
        '      "featureId": "feat.b",\n      "status": "pending",\n      "summary": "later",\n'
        '      "updatedAt": "2026-03-01T11:00:00Z"\n    }\n  ]\n}\n'
    )
    read = invoke("harness-feature", "read", "--path", "w/l.json")
    assert read.stdout == (
        "premath harness-feature read\n  Path: w/l.json\n  Features: 2\n"
        "  Session Ref: .premath/harness_session.json\n"
    )


def test_update_clears_summary_but_not_refs(workdir):
    f_w1()
    f_w2()
    invoke(
        "harness-feature",
        "write",
        "--path",
        "w/l.json",
        "--feature-id",
        "feat.b",
        "--status",
        "blocked",
        "--summary",
        "",
        "--verification-ref",
        "",
        app=at(11, 10),
    )
    ledger = invoke("harness-feature", "read", "--path", "w/l.json", "--json").json["ledger"]
    assert ledger["updatedAt"] == "2026-03-01T11:10:00Z"
    assert ledger["features"][1] == {
        "featureId": "feat.b",
        "status": "blocked",
        "updatedAt": "2026-03-01T11:10:00Z",
    }


def test_check_and_next(workdir):
    f_w1()
    f_w2()
    out = invoke("harness-feature", "check", "--path", "w/l.json")
    assert (out.exit_code, out.stdout) == (
        0,
        "[harness-feature] OK (features=2, closureComplete=false, nextFeature=feat.a)\n",
    )
    out = invoke("harness-feature", "check", "--path", "w/l.json", "--require-closure")
    assert (out.exit_code, out.stdout) == (
        1,
        "[harness-feature] FAIL (features=2, closureComplete=false, nextFeature=feat.a)\n"
        "  - harness_feature_ledger.closure_incomplete (require-closure set but ledger is not "
        "closed)\n",
    )
    out = invoke("harness-feature", "next", "--path", "w/l.json", "--json")
    assert out.json == {
        "action": "harness-feature.next",
        "closureComplete": False,
        "exists": True,
        "featureCount": 2,
        "nextFeatureId": "feat.a",
        "path": "w/l.json",
    }
    out = invoke("harness-feature", "next", "--path", "w/none.json")
    assert out.stdout == (
        "premath harness-feature next\n  Path: w/none.json\n  Next Feature: none (ledger missing)\n"
    )


def test_check_reports_every_rule_in_order(workdir):
    (workdir / "bad.json").write_text(BAD)
    out = invoke("harness-feature", "check", "--path", "bad.json", "--json")
    assert out.exit_code == 1
    assert [
        (e["class"].removeprefix("harness_feature_ledger."), e.get("featureId"))
        for e in out.json["errors"]
    ] == [
        ("feature_id.duplicate", "x"),
        ("feature.updated_at.empty", "x"),
        ("status.invalid", "x"),
        ("instruction_ref.empty", "y"),
        ("completed_missing_verification_ref", "z"),
        ("feature_id.empty", None),
        ("in_progress.non_contractible", None),
    ]
    assert out.json["summary"] == {
        "blockedCount": 0,
        "closureComplete": False,
        "completedCount": 1,
        "featureCount": 5,
        "inProgressCount": 2,
        "pendingCount": 0,
    }
    assert out.json["nextFeatureId"] == "x"
    nxt = invoke("harness-feature", "next", "--path", "bad.json")
    assert nxt.exit_code == 1
    assert nxt.stderr == (
        f"error: failed to compute next feature from bad.json: ledger rejected: {ALL_CLASSES}\n"
    )


def test_write_refuses_a_ledger_check_would_reject(workdir):
    """Divergence D2-11: the reference writes it, and `next`/`bootstrap` then fail."""
    f_w1()
    f_w2()
    before = (workdir / "w/l.json").read_bytes()
    for args in (
        ("--feature-id", "feat.b", "--status", "in_progress"),
        ("--feature-id", "feat.c", "--status", "completed"),
    ):
        out = invoke("harness-feature", "write", "--path", "w/l.json", *args, "--json")
        assert out.exit_code == 1
        assert out.json["error"]["code"] == "input_invalid"
        assert "would be rejected by `harness-feature check`" in out.stderr
        assert (workdir / "w/l.json").read_bytes() == before
    assert sorted(p.name for p in (workdir / "w").iterdir()) == ["l.json"]


def test_write_fixes_an_invalid_existing_row(workdir):
    """An existing bad ledger is not a dead end: a write that repairs it is accepted."""
    (workdir / "l.json").write_text(
        '{"schema":1,"ledgerKind":"premath.harness.feature_ledger.v1","updatedAt":"t",'
        '"features":[{"featureId":"a","status":"done","updatedAt":"t","extra":1}]}'
    )
    out = invoke(
        "harness-feature",
        "write",
        "--path",
        "l.json",
        "--feature-id",
        "a",
        "--status",
        "pending",
        "--json",
        app=at(12, 0),
    )
    assert out.exit_code == 0
    assert out.json["ledger"]["features"] == [
        {"featureId": "a", "status": "pending", "updatedAt": "2026-03-01T12:00:00Z"}
    ]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{", "unable to parse x.json: "),
        (
            '{"schema":2,"ledgerKind":"premath.harness.feature_ledger.v1","updatedAt":"t"}',
            "invalid schema 2 (expected 1)",
        ),
        (
            '{"schema":1,"ledgerKind":"k","updatedAt":"t"}',
            "invalid ledger kind k (expected premath.harness.feature_ledger.v1)",
        ),
        (
            '{"schema":1,"ledgerKind":"premath.harness.feature_ledger.v1"}',
            "unable to parse x.json: missing field `updatedAt`",
        ),
        (
            '{"schema":1,"ledgerKind":"premath.harness.feature_ledger.v1","updatedAt":"t",'
            '"updatedAt":"u"}',
            "unable to parse x.json: duplicate field `updatedAt`",
        ),
    ],
)
def test_bad_ledgers_are_refused_untouched_even_with_a_blank_id(workdir, content, fragment):
    (workdir / "x.json").write_text(content)
    for feature_id in ("a", " "):
        out = invoke(
            "harness-feature",
            "write",
            "--path",
            "x.json",
            "--feature-id",
            feature_id,
            "--status",
            "pending",
        )
        assert out.exit_code == 1
        assert out.stderr.startswith("error: failed to read harness feature ledger x.json: ")
        assert fragment in out.stderr
        assert (workdir / "x.json").read_text() == content
    assert sorted(p.name for p in workdir.iterdir()) == ["x.json"]


def test_blank_feature_id_creates_nothing(workdir):
    out = invoke(
        "harness-feature",
        "write",
        "--path",
        "new/l.json",
        "--feature-id",
        " ",
        "--status",
        "pending",
        "--json",
    )
    assert out.exit_code == 1
    assert out.stderr == "error: feature-id must be non-empty\n"
    assert list(workdir.iterdir()) == []


def test_missing_status_is_a_usage_error(workdir):
    out = invoke("harness-feature", "write", "--feature-id", "a")
    assert (out.exit_code, out.stdout) == (2, "")
    assert list(workdir.iterdir()) == []
