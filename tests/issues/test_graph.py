"""Graph algorithms against brute-force versions of the reference's own definitions."""

from hypothesis import given
from hypothesis import strategies as st

from premath.issues.graph import find_any_cycle, find_path, in_scope
from premath.issues.leases import claim_candidates, claim_next_issue, natural_key

NODES = ["a", "b", "c", "d", "e", "a1", "a10", "a2"]
KINDS = ["blocks", "related", "parent-child"]
T0 = 1_772_359_200 * 1_000_000_000


@st.composite
def graphs(draw):
    issues = {}
    for node in draw(st.lists(st.sampled_from(NODES), min_size=1, max_size=8, unique=True)):
        edges = draw(
            st.lists(
                st.tuples(st.sampled_from(NODES), st.sampled_from(KINDS)), max_size=3, unique=True
            )
        )
        row = {
            "id": node,
            "title": node,
            "status": draw(st.sampled_from(["open", "closed", "in_progress", "blocked", " Open "])),
            "priority": draw(st.integers(0, 3)),
            "issue_type": "task",
            "created_at": "2026-02-22T00:00:00Z",
            "updated_at": "2026-02-22T00:00:00Z",
            "ephemeral": False,
        }
        if draw(st.booleans()):
            row["assignee"] = draw(st.sampled_from(["w", "x"]))
        if draw(st.booleans()):
            expiry = draw(st.sampled_from(["2000-01-01T00:00:00Z", "2099-01-01T00:00:00Z"]))
            owner = draw(st.sampled_from(["w", "x"]))
            row["lease"] = {
                "lease_id": "l",
                "owner": owner,
                "acquired_at": "2000-01-01T00:00:00Z",
                "expires_at": expiry,
            }
        if edges:
            row["dependencies"] = [
                {"issue_id": node, "depends_on_id": target, "type": kind} for target, kind in edges
            ]
        issues[node] = row
    return issues


def reference_first_cycle(issues, scope):
    """issue-memory-and-loops.md §A5 step by step, without pruning."""
    for issue_id in sorted(issues):
        row = issues[issue_id]
        if not in_scope(row, scope):
            continue
        edges = sorted(
            row.get("dependencies", []),
            key=lambda e: (e["depends_on_id"], e["type"], e.get("created_by", "")),
        )
        for edge in edges:
            target = issues.get(edge["depends_on_id"])
            if target is None or not in_scope(target, scope):
                continue
            path = find_path(issues, edge["depends_on_id"], issue_id, scope)
            if path is not None:
                return [issue_id, *path]
    return None


@given(graphs(), st.sampled_from(["active", "full"]))
def test_first_cycle_is_the_reference_one(issues, scope):
    assert find_any_cycle(issues, scope) == reference_first_cycle(issues, scope)


@given(graphs())
def test_claim_next_takes_the_best_candidate(issues):
    candidates = claim_candidates(issues, "w", T0)
    expected = min(
        candidates, key=lambda r: (r["priority"], natural_key(r["id"]), r["id"]), default=None
    )
    expected_id = None if expected is None else expected["id"]
    row = claim_next_issue(issues, "w", now_ns=T0, expiry_ns=T0 + 60 * 10**9)
    assert (None if row is None else row["id"]) == expected_id
    if row is not None:
        assert (row["status"], row["assignee"], row["lease"]["owner"]) == ("in_progress", "w", "w")


def test_natural_order():
    ids = ["bd-10", "bd-2", "bd-1", "a", "bd-02", "bd-1a", "bd-1b2", "bd-1b10"]
    assert sorted(ids, key=lambda i: (natural_key(i), i)) == [
        "a", "bd-1", "bd-1a", "bd-1b2", "bd-1b10", "bd-02", "bd-2", "bd-10",
    ]  # fmt: skip


def rule_candidates(issues, worker):
    """Claim-next's candidate rule written out (reference §A6, plus D3-1)."""
    found = set()
    for issue_id, row in issues.items():
        lease = row.get("lease")
        stale = lease is not None and lease["expires_at"].startswith("2000")
        if not (row["status"] == "open" or (row["status"] == "in_progress" and stale)):
            continue
        blocking = [e for e in row.get("dependencies", []) if e["type"] != "related"]
        if any(issues.get(e["depends_on_id"], {}).get("status") != "closed" for e in blocking):
            continue
        if lease is not None and not stale and lease["owner"] != worker:
            continue
        if lease is None and row.get("assignee", worker) != worker:
            continue
        found.add(issue_id)
    return found


@given(graphs())
def test_candidates_follow_the_rule(issues):
    assert {row["id"] for row in claim_candidates(issues, "w", T0)} == rule_candidates(issues, "w")
