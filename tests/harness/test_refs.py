"""Lineage, lease-handoff and policy refs against the reference's worked examples (§B5, §6)."""

from datetime import UTC, datetime

import orjson
import pytest

from premath.errors import PremathError
from premath.harness.handoff import (
    classify_failed_handoff,
    read_lease_snapshot,
    success_handoff,
)
from premath.harness.refs import lease_ref, lineage_refs, policy_ref, step_id, witness_ref
from premath.issues.leases import loop_lease_state
from premath.timefmt import epoch_nanos

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)


def test_lineage_refs_match_the_reference_and_are_sorted():
    refs = lineage_refs(
        "bd-7",
        "worker.1",
        repo_root="/repo",
        issues_path="/repo/.premath/issues.jsonl",
        worktree="/repo-w1",
        mutation_mode="human-override",
        active_epoch="2026-02",
        support_until="2026-06",
    )
    assert refs == [
        "cover://worker-loop/bd-7/7d431d914e46c0f34c6c40bb8e85db9566b53361d89a9664cb56ce7fe59ff431",
        "ctx://issue/bd-7/463ad1c2ac31f5dec4bcba59190eaebc6cf6090b4e1531fcb56e08979a49a290",
        "refinement://worker-loop/bd-7/worker.1/acb1c08d5366a1aab42771d5c9fb87bca132c6628dccecd6afcf799f03787201",
    ]


def test_lease_refs_match_the_reference():
    active = lease_ref(
        issue_id="bd-4",
        worker_id="alice",
        lease_id="lease1_bd-4_alice",
        lease_owner="alice",
        lease_state="active",
        lease_action="issue_lease_renew",
        status="in_progress",
        assignee="alice",
    )
    assert active == (
        "lease://handoff/bd-4/active/02f1f982ab0bdc00840090bd6e80a89703a199a30944f2d5b8fd1cbcb727ea62"
    )
    released = lease_ref(
        issue_id="bd-7",
        worker_id="worker.1",
        lease_id="lease1_bd-7_worker_1",
        lease_owner="worker.1",
        lease_state="released",
        lease_action="release_closed",
        status="closed",
        assignee="worker.1",
    )
    assert released == (
        "lease://handoff/bd-7/released/c75786ecb25bd3c9628890666906d816469b5ff14732fd25443df9769871e7ab"
    )


def test_policy_ref_matches_the_reference():
    ref = policy_ref(
        mode="human-override",
        reason="ok",
        active_epoch="2026-02",
        support_until="2026-06",
        worker_id="worker.1",
        issue_id="bd-7",
        step_index=1,
    )
    assert ref == (
        "policy://worker-lane/human-override/"
        "c488f62a8a123629fe599880be529c1f5c552fac55ded9a2056cfff8ebdeb7a0"
    )


def test_witness_ref_and_step_id():
    assert witness_ref("worker://loop/", "worker.1", "bd-7", "completed") == (
        "worker://loop/worker.1/bd-7/completed"
    )
    assert step_id("worker.1", "bd-7", 3) == "worker.1.bd-7.3"


def _row(status="in_progress", assignee="alice", owner="alice", expires="2099-01-01T00:00:00Z"):
    row = {"id": "bd-4", "title": "t", "status": status, "assignee": assignee}
    if owner is not None:
        row["lease"] = {
            "lease_id": "lease1_bd-4_alice",
            "owner": owner,
            "acquired_at": "2026-01-01T00:00:00Z",
            "expires_at": expires,
        }
    return row


@pytest.mark.parametrize(
    ("row", "state"),
    [
        (None, "missing_issue"),
        (_row(), "active"),
        (_row(expires="2000-01-01T00:00:00Z"), "stale"),
        (_row(expires="2026-03-01T10:00:00Z"), "stale"),
        (_row(expires="2026-03-01T10:00:00.000000001Z"), "active"),
        (_row(owner="bob"), "contended"),
        (_row(status="open"), "contended"),
        (_row(owner=None), "unleased"),
        (_row(status="open", owner=None), "unleased"),
        (_row(status="closed", owner=None), "released"),
        (_row(status="closed"), "closed_with_lease"),
    ],
)
def test_lease_states(row, state):
    assert loop_lease_state(row, epoch_nanos(NOW)) == state


@pytest.mark.parametrize(
    ("state_row", "action", "result_class"),
    [
        (_row(), "issue_lease_renew", "retry_needed_lease_active"),
        (
            _row(expires="2000-01-01T00:00:00Z"),
            "issue_claim_next_reclaim",
            "retry_needed_lease_stale",
        ),
        (_row(owner="bob"), "issue_lease_release", "retry_needed_lease_contended"),
        (_row(status="closed", owner=None), "claim_next", "failed_issue_closed"),
        (_row(owner=None), "reconcile", "failed_lease_missing"),
        (None, "stop", "failed_issue_missing"),
        (_row(status="closed"), "stop", "failed_lease_invariant"),
    ],
)
def test_failed_handoff_table(tmp_path, state_row, action, result_class):
    issues = tmp_path / "issues.jsonl"
    issues.write_bytes(orjson.dumps(state_row) + b"\n" if state_row else b"")
    snapshot = read_lease_snapshot(str(issues), "bd-4", NOW)
    handoff = classify_failed_handoff(snapshot, "alice", "lease1_bd-4_alice")
    assert (handoff.lease_action, handoff.result_class) == (action, result_class)
    assert handoff.lease_ref.startswith(f"lease://handoff/bd-4/{snapshot.lease_state}/")


def test_active_handoff_names_the_renew_call(tmp_path):
    issues = tmp_path / "issues.jsonl"
    issues.write_bytes(orjson.dumps(_row()) + b"\n")
    handoff = classify_failed_handoff(read_lease_snapshot(str(issues), "bd-4", NOW), "alice", None)
    assert "issue.lease_renew" in handoff.next_step
    assert handoff.lease_ref == (
        "lease://handoff/bd-4/active/02f1f982ab0bdc00840090bd6e80a89703a199a30944f2d5b8fd1cbcb727ea62"
    )


def test_snapshot_reads_the_store_as_issue_memory_does(tmp_path):
    """One reader: the last row of an id wins, and a bad line is an error naming its line."""
    issues = tmp_path / "issues.jsonl"
    issues.write_bytes(
        orjson.dumps(_row()) + b"\n" + orjson.dumps(_row(status="closed", owner=None)) + b"\n"
    )
    snapshot = read_lease_snapshot(str(issues), "bd-4", NOW)
    assert (snapshot.lease_state, snapshot.status) == ("released", "closed")
    issues.write_bytes(orjson.dumps(_row()) + b"\nnot json\n" + orjson.dumps(_row()) + b"\n")
    with pytest.raises(PremathError, match="line 2"):
        read_lease_snapshot(str(issues), "bd-4", NOW)
    issues.write_bytes(orjson.dumps(_row(expires="tomorrow")) + b"\n")
    with pytest.raises(PremathError, match="line 1"):
        read_lease_snapshot(str(issues), "bd-4", NOW)


def test_success_handoff_requires_closed_and_released(tmp_path):
    issues = tmp_path / "issues.jsonl"
    issues.write_bytes(orjson.dumps(_row(status="closed", owner=None)) + b"\n")
    done = success_handoff(
        read_lease_snapshot(str(issues), "bd-4", NOW), "alice", "lease1_bd-4_alice"
    )
    assert done is not None
    assert (done.result_class, done.lease_action) == ("completed", "release_closed")
    issues.write_bytes(orjson.dumps(_row(status="closed")) + b"\n")
    assert success_handoff(read_lease_snapshot(str(issues), "bd-4", NOW), "alice", None) is None


def test_snapshot_of_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(Exception, match="issues file not found"):
        read_lease_snapshot(str(tmp_path / "none.jsonl"), "bd-4", NOW)
