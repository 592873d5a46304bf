"""`issue check --compactness`: redundant `blocks` edges, as the reference's CI wrapper finds."""

from premath.issues.compactness import compactness_findings


def row(issue_id, status="open", *blockers, kind="blocks"):
    edges = [{"issue_id": issue_id, "depends_on_id": b, "type": kind} for b in blockers]
    return {"id": issue_id, "status": status, "dependencies": edges}


def findings(*rows):
    return [f.to_document() for f in compactness_findings({r["id"]: r for r in rows})]


def test_an_edge_to_a_closed_issue_and_an_implied_edge_are_findings():
    assert findings(
        row("bd-1", "closed"),
        row("bd-2", "open", "bd-3"),
        row("bd-3", "in_progress", "bd-4"),
        row("bd-4"),
        row("bd-5", "open", "bd-1", "bd-2", "bd-4"),
    ) == [
        {
            "class": "issue_graph.compactness.closed_block_edge",
            "issueId": "bd-5",
            "dependsOnId": "bd-1",
        },
        {
            "class": "issue_graph.compactness.transitive_block_edge",
            "issueId": "bd-5",
            "dependsOnId": "bd-4",
            "witnessPath": ["bd-2", "bd-3", "bd-4"],
        },
    ]


def test_inactive_issues_and_other_edge_types_are_left_alone():
    assert findings(row("bd-1", "closed"), row("bd-2", "blocked", "bd-1")) == []
    assert findings(row("bd-1", "closed"), row("bd-2", "open", "bd-1", kind="related")) == []
    assert findings(row("bd-1"), row("bd-2", "open", "bd-1")) == []
