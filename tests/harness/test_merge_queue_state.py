"""The merge queue's transient states on the issue (specs/remote-workers.md "Merge queue"):
each state the queue enters rides one renewal of the holder's lease into
`metadata.premathMergeQueue`; readers show it while that lease holds the issue, and the finish
removes it, its note then holding the verdict."""

from datetime import UTC, datetime

import orjson
import pytest

from premath.errors import InputInvalid
from premath.harness.authority import LocalAuthority
from premath.harness.merge_queue import Landing
from premath.models.merge_queue import (
    QUEUE_STATE_KEY,
    current_queue_record,
    parse_queue_state,
    queue_state_lines,
)
from tests.support.observation import issue, lease

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
VERIFYING = {
    "state": "verifying",
    "branch": "premath/bd-1",
    "integrationBranch": "premath/integration",
    "onto": "a" * 40,
    "step": "w1.bd-1.1",
}


def rows(path) -> dict[str, dict]:
    return {row["id"]: row for row in map(orjson.loads, path.read_bytes().splitlines())}


def test_a_renewal_records_the_state_and_the_finish_replaces_it_with_the_verdict(tmp_path):
    path = tmp_path / "issues.jsonl"
    path.write_bytes(orjson.dumps(issue("bd-1", "task")) + b"\n")
    memory = LocalAuthority(str(path), 5.0)
    claimed = memory.claim_next("w1", ttl_s=600, now=NOW)
    assert claimed is not None
    assert claimed.lease_id is not None
    memory.renew("bd-1", "w1", claimed.lease_id, ttl_s=600, now=NOW, queue_state=VERIFYING)
    row = rows(path)["bd-1"]
    assert row["metadata"][QUEUE_STATE_KEY] == {**VERIFYING, "leaseId": claimed.lease_id}
    shown = current_queue_record(row)
    assert shown is not None
    expected = ("verifying", "premath/bd-1", "a" * 40)
    assert (shown["state"], shown["branch"], shown["onto"]) == expected
    memory.renew("bd-1", "w1", claimed.lease_id, ttl_s=600, now=NOW)  # a heartbeat keeps it
    assert rows(path)["bd-1"]["metadata"][QUEUE_STATE_KEY]["state"] == "verifying"
    landed = Landing("premath/integration", "premath/bd-1", "c" * 40, "a" * 40)
    memory.finish(
        "bd-1", "w1", claimed.lease_id, status="closed", now=NOW, note=landed.note("w1", "s")
    )
    row = rows(path)["bd-1"]
    assert "metadata" not in row  # nothing else was there: the row is as it would have been
    shown = current_queue_record(row)
    assert shown is not None
    assert (shown["state"], shown["integrationCommit"]) == ("landed", "c" * 40)


def test_a_state_under_a_lease_no_longer_held_is_not_shown():
    held = lease("bd-1", "w2", "2026-03-01T11:00:00Z")
    record = {**VERIFYING, "leaseId": "lease1_bd-1_w1"}
    row = issue("bd-1", "t", "in_progress", lease=held, metadata={QUEUE_STATE_KEY: record})
    assert current_queue_record(row) is None
    row = issue("bd-1", "t", "open", metadata={QUEUE_STATE_KEY: record})
    assert current_queue_record(row) is None
    mine = {**record, "leaseId": held["lease_id"]}
    row = issue("bd-1", "t", "in_progress", lease=held, metadata={QUEUE_STATE_KEY: mine})
    assert current_queue_record(row)["state"] == "verifying"  # type: ignore[index]


def test_the_wire_lines_round_trip_and_anything_else_is_refused():
    assert parse_queue_state(queue_state_lines(VERIFYING)) == VERIFYING
    for lines in (
        ["state: landed"],  # a verdict is the finish's note, not a renewal's
        ["branch: premath/bd-1"],
        ["state: queued", "leaseId: forged"],
        ["state queued"],
        ["state: queued", "branch: " + "x" * 600],
    ):
        with pytest.raises(InputInvalid):
            parse_queue_state(lines)
