"""What only a lease holder may do to its issue (premath/issues/held.py): close, block or give
it back, with a note, witness refs and a discovered follow-up in one write; anyone else is
refused with the reference's lease failure class and the store is left as it was."""

from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from premath.errors import InputInvalid
from premath.issues.held import (
    WITNESS_REFS_KEY,
    Discovery,
    check_finish,
    finish_held,
    finish_in,
)
from tests.cli.test_issue import FUTURE, PAST, lease, row, seed, stored

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
HELD = row("bd-1", status="in_progress", assignee="w1", lease=lease("bd-1", "w1", FUTURE, "L1"))


def finish(workdir, status="closed", who="w1", lease_id="L1", **extra):
    return finish_held(
        str(workdir / ".premath/issues.jsonl"),
        "bd-1",
        who,
        lease_id,
        status=status,
        now=NOW,
        timeout_s=5,
        **extra,
    )


def test_close_releases_the_lease_keeps_the_assignee_and_records_refs(workdir):
    seed(workdir, HELD, row("bd-2"))
    done = finish(workdir, note="[harness-delivery]\ncommit: abc", witness_refs=["git://x@1", "a"])
    assert (done.applied, done.reason, done.created_issue_id) == (True, "", None)
    issue = stored(workdir)["bd-1"]
    assert (issue["status"], issue["assignee"], "lease" in issue) == ("closed", "w1", False)
    assert issue["closed_at"] == issue["updated_at"] == "2026-03-01T10:00:00Z"
    assert issue["notes"] == "[harness-delivery]\ncommit: abc"
    assert issue["metadata"] == {WITNESS_REFS_KEY: ["a", "git://x@1"]}
    assert stored(workdir)["bd-2"] == row("bd-2")


def test_give_back_reopens_without_assignee_and_block_merges_notes_once(workdir):
    seed(workdir, {**HELD, "notes": "earlier"})
    assert finish(workdir, status="open", note="push refused").applied
    issue = stored(workdir)["bd-1"]
    assert (issue["status"], "assignee" in issue, "lease" in issue) == ("open", False, False)
    assert issue["notes"] == "earlier\n\npush refused"
    seed(workdir, {**HELD, "notes": "earlier\n\nsame note"})
    assert finish(workdir, status="blocked", note="same note").applied
    assert stored(workdir)["bd-1"]["notes"] == "earlier\n\nsame note"


def test_block_discovers_the_follow_up_in_the_same_write(workdir):
    seed(workdir, HELD)
    done = finish(workdir, status="blocked", note="why", discover=Discovery("Follow up", "desc"))
    assert (done.applied, done.created_issue_id) == (True, "bd-2")
    rows = stored(workdir)
    assert rows["bd-1"]["notes"] == "why\ndiscoveredIssue: bd-2"
    assert rows["bd-2"]["dependencies"] == [
        {"issue_id": "bd-2", "depends_on_id": "bd-1", "type": "discovered-from"}
    ]
    assert (rows["bd-2"]["title"], rows["bd-2"]["description"]) == ("Follow up", "desc")
    assert (rows["bd-2"]["status"], rows["bd-1"]["status"]) == ("open", "blocked")


@pytest.mark.parametrize(
    ("issue", "who", "lease_id", "reason", "failure_class"),
    [
        (None, "w1", "L1", "issue is missing from issue memory", "lease_not_found"),
        ({**HELD, "status": "closed"}, "w1", "L1", "issue is already closed", "lease_issue_closed"),
        (
            row("bd-1"),
            "w1",
            "L1",
            "issue has no lease (released or never claimed)",
            "lease_missing",
        ),
        (HELD, "w2", "L1", "lease is held by w1", "lease_owner_mismatch"),
        (HELD, "w1", "L9", "lease id changed to L1 (reclaimed)", "lease_id_mismatch"),
    ],
)
def test_anyone_but_the_holder_is_refused_and_nothing_changes(
    workdir, issue, who, lease_id, reason, failure_class
):
    before = seed(workdir, *([issue] if issue else [row("bd-9")]))
    done = finish(workdir, who=who, lease_id=lease_id, discover=None)
    assert (done.applied, done.reason, done.failure_class) == (False, reason, failure_class)
    assert (workdir / ".premath/issues.jsonl").read_bytes() == before


def test_a_stale_lease_nobody_reclaimed_is_still_the_holders(workdir):
    seed(
        workdir,
        row("bd-1", status="in_progress", assignee="w1", lease=lease("bd-1", "w1", PAST, "L1")),
    )
    assert finish(workdir).applied


def test_bad_finishes_are_refused_before_the_store_is_touched():
    with pytest.raises(InputInvalid, match="finish status must be one of closed, blocked, open"):
        check_finish("done", None)
    with pytest.raises(InputInvalid, match="discovered only when the issue is blocked"):
        check_finish("closed", Discovery("x", ""))
    with pytest.raises(InputInvalid, match="title is blank"):
        check_finish("blocked", Discovery("  ", ""))


@given(
    owner=st.sampled_from(["w1", "w2"]),
    lease_id=st.sampled_from(["L1", "L2", None]),
    status=st.sampled_from(["open", "in_progress", "blocked", "closed"]),
    holder=st.sampled_from(["w1", "w2"]),
    asked=st.sampled_from(["L1", "L2", None]),
    target=st.sampled_from(["closed", "blocked", "open"]),
)
def test_a_finish_applies_exactly_when_the_caller_holds_the_lease(
    owner, lease_id, status, holder, asked, target
):
    current = row("bd-1", status=status, assignee=owner)
    if lease_id is not None:
        current["lease"] = lease("bd-1", owner, FUTURE, lease_id)
    issues = {"bd-1": orjson.loads(orjson.dumps(current))}
    done, changed = finish_in(issues, "bd-1", holder, asked, status=target, now_text="t")
    holds = (
        lease_id is not None
        and status != "closed"
        and owner == holder
        and (asked is None or asked == lease_id)
    )
    assert done.applied is holds
    assert (changed != []) is holds
    if holds:
        assert issues["bd-1"]["status"] == target
        assert "lease" not in issues["bd-1"]
    else:
        assert issues["bd-1"] == current
