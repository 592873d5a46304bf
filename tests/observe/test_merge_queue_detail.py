"""The dashboard's issue detail carries the merge queue's verdict (specs/remote-workers.md
"Merge queue"), read back from the `[harness-merge-queue]` notes the queue writes."""

from datetime import UTC, datetime

from premath.harness.merge_queue import Landing
from premath.issues.held import merge_notes
from premath.models.merge_queue import latest_queue_record
from premath.observe.board import issue_board
from premath.observe.facts import issue_facts
from tests.support.observation import issue

NOW = (int(datetime(2026, 3, 1, tzinfo=UTC).timestamp()), 0)
CONFLICT = Landing(
    "premath/integration",
    "premath/bd-1",
    None,
    "a" * 40,
    "merge_conflict",
    "conflicts",
    conflict_paths=("shared.txt", "src/x.py"),
)
LANDED = Landing("premath/integration", "premath/bd-1+2", "c" * 40, "b" * 40)


def test_the_latest_verdict_wins_and_fields_come_back_as_written():
    notes = merge_notes("", "someone's note")
    notes = merge_notes(notes, "[harness-delivery]\nbranch: premath/bd-1")
    notes = merge_notes(notes, CONFLICT.note("w1", "w1.bd-1.1"))
    assert latest_queue_record(notes) == {
        "state": "failed",
        "integrationBranch": "premath/integration",
        "integrationCommit": None,
        "failureClass": "merge_conflict",
        "conflictPaths": ["shared.txt", "src/x.py"],
        "branch": "premath/bd-1",
        "onto": "a" * 40,
    }
    notes = merge_notes(notes, LANDED.note("w2", "w2.bd-1.1"))
    assert latest_queue_record(notes) == {
        "state": "landed",
        "integrationBranch": "premath/integration",
        "integrationCommit": "c" * 40,
        "failureClass": None,
        "conflictPaths": [],
        "branch": "premath/bd-1+2",
        "onto": "b" * 40,
    }


def test_no_queue_note_no_verdict():
    for notes in (
        None,
        3,
        "",
        "[harness-delivery]\nbranch: premath/bd-1",
        "mentions [harness-merge-queue] inline",
    ):
        assert latest_queue_record(notes) is None


def test_the_board_gives_each_issue_its_queue_state():
    rows = [
        issue("bd-1", "landed", "closed", notes=LANDED.note("w2", "s")),
        issue("bd-2", "refused", notes=CONFLICT.note("w1", "s")),
        issue("bd-3", "never queued"),
    ]
    board = issue_board([issue_facts(row["id"], row) for row in rows], NOW)
    assert board.issues["bd-1"]["mergeQueue"]["integrationCommit"] == "c" * 40
    assert board.issues["bd-2"]["mergeQueue"]["failureClass"] == "merge_conflict"
    assert board.issues["bd-3"]["mergeQueue"] is None
