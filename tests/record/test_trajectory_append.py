"""append_step, the library call the harness loop and the experiment runner log steps with."""

from datetime import UTC, datetime

import pytest

from premath.errors import InputInvalid, InvalidUsage, IoFailure, LockBusy
from premath.record.trajectory import append_step
from tests.support.markers import REFERENCE_MARKER, marker_of

NOW = datetime(2026, 3, 1, 10, 0, 59, 999999, tzinfo=UTC)


def test_append_step_returns_the_row_it_wrote(tmp_path):
    path = tmp_path / "deep" / "t.jsonl"
    row = append_step(
        path,
        step_id=" w1.bd-7.3 ",
        action="run.check",
        result_class="completed",
        issue_id="bd-7",
        witness_refs=["b", "a", "a", " "],
        started_at="2026-03-01T10:00:00+01:00",
        now=NOW,
        lock_timeout=1,
    )
    assert row == {
        "schema": 1,
        "stepKind": "premath.harness.step.v1",
        "stepId": "w1.bd-7.3",
        "issueId": "bd-7",
        "action": "run.check",
        "resultClass": "completed",
        "witnessRefs": ["a", "b"],
        "startedAt": "2026-03-01T10:00:00+01:00",
        "finishedAt": "2026-03-01T10:00:59Z",  # now, fraction truncated
    }
    assert path.read_bytes() == (
        b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"w1.bd-7.3","issueId":"bd-7",'
        b'"action":"run.check","resultClass":"completed","witnessRefs":["a","b"],'
        b'"startedAt":"2026-03-01T10:00:00+01:00","finishedAt":"2026-03-01T10:00:59Z"}\n'
    )


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"finished_at": " "}, InputInvalid, "finishedAt must be non-empty"),
        ({"step_id": "\u3000"}, InputInvalid, "stepId must be non-empty"),
        (
            {"action": "a\udcff"},
            InvalidUsage,
            "invalid UTF-8 was detected in one or more arguments",
        ),
        ({"lineage_refs": ["\ud800"]}, InvalidUsage, "invalid UTF-8"),
    ],
)
def test_rejected_steps_create_nothing(tmp_path, fields, error, message):
    arguments = {"step_id": "s", "action": "a", "result_class": "ok", **fields}
    with pytest.raises(error) as raised:
        append_step(tmp_path / "out" / "t.jsonl", now=NOW, lock_timeout=1, **arguments)
    assert message in raised.value.message
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_path_is_an_io_failure_and_releases_the_lock(tmp_path):
    (tmp_path / "t.jsonl").mkdir()
    with pytest.raises(IoFailure) as raised:
        append_step(
            str(tmp_path / "t.jsonl"), step_id="s", action="a", result_class="ok", now=NOW,
            lock_timeout=1,
        )  # fmt: skip
    assert raised.value.message == (
        f"failed to append harness trajectory row at {tmp_path / 't.jsonl'}: "
        "failed to read/write trajectory: Is a directory (os error 21)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_a_breaker_left_by_a_dead_process_is_broken_too(tmp_path):
    """A stale lock whose breaker's owner died: both markers are provably dead (locks.py)."""
    (tmp_path / "t.jsonl.lock").write_text(marker_of(999999999))
    (tmp_path / "t.jsonl.lock.break").write_text(marker_of(999999998))
    append_step(
        tmp_path / "t.jsonl", step_id="s", action="a", result_class="ok", now=NOW,
        lock_timeout=2,
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_a_breaker_that_cannot_be_judged_makes_appends_wait_not_spin(tmp_path):
    """A breaker in the reference's format may belong to a live writer elsewhere: wait, refuse."""
    (tmp_path / "t.jsonl.lock").write_text(marker_of(999999999))
    (tmp_path / "t.jsonl.lock.break").write_text(REFERENCE_MARKER.format(pid=999999999))
    with pytest.raises(LockBusy):
        append_step(
            tmp_path / "t.jsonl", step_id="s", action="a", result_class="ok", now=NOW,
            lock_timeout=0.2,
        )  # fmt: skip
    assert not (tmp_path / "t.jsonl").exists()
