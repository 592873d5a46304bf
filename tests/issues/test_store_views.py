"""The views a group-committing writer keeps (`leases.ClaimQueue`, `leases.LeasedIds`) agree
with the pass over every row they replace: through random claims, releases, closes, reopens,
dependency changes and time moving on, claim-next picks the same issue and the lease
projection is the same, whether the store is a plain map or the authority's kept one."""

import copy
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from premath.issues import leases
from premath.issues.lifecycle import set_status
from premath.store.group_commit import GroupCommits
from premath.store.issues_file import ViewedIssues, encode_store
from premath.timefmt import NANOS_PER_SECOND, epoch_nanos, format_autosi_z
from tests.conftest import T0

START_NS = epoch_nanos(T0)
STAMP = format_autosi_z(START_NS)

rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(["open", "in_progress", "closed", "blocked"]),
        st.integers(0, 2),
        st.sampled_from([None, "a", "b"]),  # lease owner
        st.integers(-50, 50),  # lease expiry, seconds from the start
        st.lists(st.integers(0, 9), max_size=2),  # blocks edges to other rows
    ),
    min_size=1,
    max_size=10,
)
ops_strategy = st.lists(
    st.tuples(
        st.sampled_from(["claim", "claim", "release", "close", "reopen", "unblock", "wait"]),
        st.integers(0, 9),
        st.sampled_from(["a", "b", "c"]),
    ),
    max_size=14,
)


def build(specs) -> dict:
    issues = {}
    for n, (status, priority, owner, expiry_s, targets) in enumerate(specs):
        issue_id = f"bd-{n}"
        row = {"id": issue_id, "title": issue_id, "status": status, "priority": priority,
               "issue_type": "task", "created_at": STAMP, "updated_at": STAMP}  # fmt: skip
        edges = [
            {"issue_id": issue_id, "depends_on_id": f"bd-{t}", "type": "blocks"}
            for t in sorted(set(targets))
            if t != n and t < len(specs)
        ]
        if edges:
            row["dependencies"] = edges
        if owner is not None and status in ("open", "in_progress"):
            row["assignee"] = owner
            expires = format_autosi_z(START_NS + expiry_s * NANOS_PER_SECOND)
            row["lease"] = {"lease_id": f"l-{n}", "owner": owner, "acquired_at": STAMP,
                            "expires_at": expires}  # fmt: skip
        issues[issue_id] = row
    return issues


def step(issues, op, target, who, now_ns):
    """Apply one operation; (what claim-next chose, the projection's ids, the changed ids)."""
    issue_id = f"bd-{target}"
    row = issues.get(issue_id)
    now_text = format_autosi_z(now_ns)
    changed: tuple[str, ...] = ()
    chosen = None
    if op == "claim":
        picked = leases.claim_next_issue(
            issues, who, now_ns=now_ns, expiry_ns=now_ns + 30 * NANOS_PER_SECOND
        )
        chosen = None if picked is None else picked["id"]
        changed = () if picked is None else (picked["id"],)
    elif row is not None and op == "release" and "lease" in row:
        del row["lease"]
        row.pop("assignee", None)
        if row["status"] == "in_progress":
            set_status(row, "open", now_text)
        changed = (issue_id,)
    elif row is not None and op in ("close", "reopen"):
        set_status(row, "closed" if op == "close" else "open", now_text)
        changed = (issue_id,)
    elif row is not None and op == "unblock" and "dependencies" in row:
        del row["dependencies"]
        changed = (issue_id,)
    if changed and isinstance(issues, ViewedIssues):
        issues.touched(changed[0])  # as the transport does before its projection
    projection = leases.lease_projection(issues, now_ns)
    seen = (chosen, projection.stale_issue_ids, projection.contended_issue_ids,
            [r["id"] for r in projection.leased])  # fmt: skip
    return seen, changed


@settings(max_examples=60, deadline=None)
@given(rows_strategy, ops_strategy)
# A blocker closing frees the issue it blocked (the queue cannot follow: it is rebuilt).
@example([("open", 0, None, 0, [1]), ("open", 2, None, 0, [])],
         [("claim", 0, "a"), ("close", 1, "a"), ("claim", 0, "b")])  # fmt: skip
# An active lease going stale makes its issue a candidate (D3-1) once its time has come.
@example([("in_progress", 0, "a", 10, []), ("closed", 0, None, 0, [])],
         [("claim", 0, "b"), ("wait", 0, "b"), ("claim", 0, "b")])  # fmt: skip
def test_kept_views_choose_and_project_as_a_pass_over_every_row(specs, ops):
    plain = build(specs)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "issues.jsonl")
        Path(path).write_bytes(encode_store(copy.deepcopy(plain)))
        commits = GroupCommits()
        now_ns = START_NS
        for op, target, who in ops:
            if op == "wait":
                now_ns += 20 * NANOS_PER_SECOND
                continue
            expected, _ = step(plain, op, target, who, now_ns)

            def mutate(issues, op=op, target=target, who=who, now_ns=now_ns):
                return step(issues, op, target, who, now_ns)

            assert commits.mutate(path, mutate, now=T0, timeout_s=5) == expected


def test_a_lease_action_s_projection_sees_its_own_change(tmp_path):
    """The transport's projection is read inside the mutation, before the writer tells the
    views: the changed row must reach them first (`ViewedIssues.touched`)."""
    from premath.transport.dispatch import dispatch

    specs = [("open", 0, None, 0, []), ("in_progress", 2, "a", -60, [])]
    path = str(tmp_path / "issues.jsonl")
    Path(path).write_bytes(encode_store(build(specs)))
    commits = GroupCommits()

    def run(action: str, **payload: str) -> dict:
        return dispatch(action, {**payload, "issuesPath": path}, now=T0, timeout_s=5, warm=commits)

    claimed = run("issue.claim_next", assignee="w")
    assert (claimed["issue"]["id"], claimed["leaseProjection"]["staleIssueIds"]) == (
        "bd-0",
        ["bd-1"],
    )
    released = run("issue.lease_release", id="bd-1")
    assert released["result"] == "accepted"
    assert released["leaseProjection"]["staleIssueIds"] == []
