"""The two tools remote workers need besides the reference's (D23-2), driven by the SDK's client
over stdio: `issue_show` (the issue whole, and its loop lease state) and `issue_lease_finish`
(the holder closes, blocks or gives back its issue, gated like every mutation)."""

import anyio

from tests.cli.test_issue import FUTURE, lease, row, seed, stored
from tests.mcp.client import call, session, witness

HELD = row(
    "bd-1",
    status="in_progress",
    assignee="w1",
    description="Do it.\n\nVerification:\n- `sh -c 'true'`",
    lease=lease("bd-1", "w1", FUTURE, "L1"),
)
FINISH = {"id": "bd-1", "assignee": "w1", "leaseId": "L1", "status": "closed"}


def run(workdir, *options, calls):
    results = []

    async def scenario():
        async with session(workdir, *options) as client:
            for name, arguments in calls:
                results.append(await call(client, name, arguments))

    anyio.run(scenario)
    return results


def test_issue_show_gives_the_issue_whole_with_its_loop_lease_state(workdir):
    seed(workdir, HELD, row("bd-2", status="closed"))
    shown, closed, missing = run(
        workdir,
        calls=[
            ("issue_show", {"id": "bd-1"}),
            ("issue_show", {"id": "bd-2"}),
            ("issue_show", {"id": "bd-9"}),
        ],
    )
    assert shown[0] is False
    assert shown[1]["leaseState"] == "active"
    assert shown[1]["issue"]["description"] == HELD["description"]
    assert shown[1]["issue"]["lease"]["leaseId"] == "L1"
    assert shown[1]["issue"]["lease"]["state"] == "active"
    assert closed[1]["leaseState"] == "released"
    assert missing == (True, "issue not found: bd-9")


def test_the_holder_closes_with_refs_and_a_note_and_show_lists_the_refs(workdir):
    seed(workdir, HELD)
    finished, shown = run(
        workdir,
        "--mutation-policy",
        "open",
        calls=[
            ("issue_lease_finish", {**FINISH, "notes": "delivered", "witnessRefs": ["git://b@c"]}),
            ("issue_show", {"id": "bd-1"}),
        ],
    )
    assert finished[0] is False, finished
    document = finished[1]
    assert (document["action"], document["status"], document["changed"]) == (
        "issue.lease_finish",
        "closed",
        True,
    )
    assert document["issue"]["status"] == "closed"
    assert document["writeWitness"]["action"] == "issue.lease_finish"
    assert shown[1]["issue"]["witnessRefs"] == ["git://b@c"]
    assert shown[1]["leaseState"] == "released"
    issue = stored(workdir)["bd-1"]
    assert issue["notes"] == "delivered"
    assert issue["metadata"]["premathWitnessRefs"] == ["git://b@c"]
    assert issue["metadata"]["premathWriteWitness"]["issueId"] == "bd-1"


def test_block_with_a_discovered_issue_witnesses_both_rows(workdir):
    seed(workdir, HELD)
    ((error, document),) = run(
        workdir,
        "--mutation-policy",
        "open",
        calls=[
            (
                "issue_lease_finish",
                {**FINISH, "status": "blocked", "notes": "why", "discoverTitle": "Next"},
            )
        ],
    )
    assert error is False, document
    assert document["createdIssueId"] == "bd-2"
    rows = stored(workdir)
    assert rows["bd-1"]["notes"] == "why\ndiscoveredIssue: bd-2"
    assert rows["bd-2"]["metadata"]["premathWriteWitness"]["action"] == "issue.lease_finish"
    assert rows["bd-1"]["metadata"]["premathWriteWitness"]["issueId"] == "bd-1"


def test_refusals_leave_the_store_as_it_was(workdir):
    before = seed(workdir, HELD)
    outcomes = run(
        workdir,
        "--mutation-policy",
        "open",
        calls=[
            ("issue_lease_finish", {**FINISH, "assignee": "w2"}),
            ("issue_lease_finish", {**FINISH, "leaseId": "L2"}),
            ("issue_lease_finish", {**FINISH, "status": "done"}),
            ("issue_lease_finish", {**FINISH, "witnessRefs": "git://x"}),
            ("issue_lease_finish", {**FINISH, "witnessRefs": [1]}),
            ("issue_lease_finish", {**FINISH, "discoverTitle": "x"}),
            ("issue_lease_finish", {"id": "bd-1", "assignee": "w1", "status": "closed"}),
        ],
    )
    assert outcomes == [
        (
            True,
            "[failureClass=lease_owner_mismatch] cannot finish bd-1 for w2: lease is held by w1",
        ),
        (
            True,
            "[failureClass=lease_id_mismatch] cannot finish bd-1 for w1: lease id changed to L1 "
            "(reclaimed)",
        ),
        (True, "unknown variant `done`, expected `closed` or `blocked` or `open`"),
        (True, 'invalid type: string "git://x", expected a sequence'),
        (True, "invalid type: integer `1`, expected a string"),
        (True, "a follow-up issue is discovered only when the issue is blocked"),
        (True, "missing field `leaseId`"),
    ]
    assert (workdir / ".premath/issues.jsonl").read_bytes() == before


def test_the_gate_needs_a_witness_that_claims_the_finish_for_this_issue(workdir):
    before = seed(workdir, HELD, row("bd-2"))
    renew_only = "capabilities.change_morphisms.issue_lease_renew"
    witness(
        workdir,
        "renew-only",
        capabilityClaims=["capabilities.change_morphisms", renew_only],
    )
    witness(workdir, "other-issue", scope={"kind": "issue", "target": "bd-2"})
    witness(workdir, "fleet")
    outcomes = run(
        workdir,
        calls=[
            ("issue_lease_finish", FINISH),
            ("issue_lease_finish", {**FINISH, "instructionId": "renew-only"}),
            ("issue_lease_finish", {**FINISH, "instructionId": "other-issue"}),
        ],
    )
    assert outcomes[0] == (
        True,
        "mutation policy `instruction-linked` requires `instruction_id` on mutation tools",
    )
    assert outcomes[1][1].startswith(
        "instruction `renew-only` missing required action capability claim "
        "`capabilities.change_morphisms.issue_lease_finish`"
    )
    assert outcomes[2][1].startswith("[failureClass=witness.scope_mismatch]")
    assert (workdir / ".premath/issues.jsonl").read_bytes() == before
    ((error, document),) = run(
        workdir, calls=[("issue_lease_finish", {**FINISH, "instructionId": "fleet"})]
    )
    assert error is False, document
    assert document["instruction"]["instructionId"] == "fleet"
    assert stored(workdir)["bd-1"]["status"] == "closed"
