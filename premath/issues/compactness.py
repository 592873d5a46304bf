"""Issue-graph compactness over `blocks` edges: what the reference's CI wrapper
(`tools/ci/check_issue_graph.py`, issue-memory-and-loops.md §A8) adds to `issue check`.

For each active (open or in_progress) issue: a direct `blocks` edge to a closed issue is
`issue_graph.compactness.closed_block_edge` (it blocks nothing any more); a direct edge to an
open target that another direct target already reaches through `blocks` edges is
`issue_graph.compactness.transitive_block_edge`, with the path that implies it (at most one
finding per target). Findings are sorted by class, issue, target, path.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from premath.store.issues_file import IssueMap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ACTIVE_STATUSES = frozenset({"open", "in_progress"})
CLOSED_EDGE = "issue_graph.compactness.closed_block_edge"
TRANSITIVE_EDGE = "issue_graph.compactness.transitive_block_edge"


class CompactnessFinding(NamedTuple):
    finding_class: str
    issue_id: str
    depends_on_id: str
    witness_path: tuple[str, ...] = ()

    def to_document(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "class": self.finding_class,
            "issueId": self.issue_id,
            "dependsOnId": self.depends_on_id,
        }
        if self.witness_path:
            document["witnessPath"] = list(self.witness_path)
        return document


def _status(issues: IssueMap, issue_id: str) -> str:
    row = issues.get(issue_id)
    return row["status"].strip().lower() if row is not None else ""


def _blocks_adjacency(issues: IssueMap) -> dict[str, set[str]]:
    adjacency: dict[str, set[str]] = {}
    for issue_id, row in issues.items():
        for edge in row.get("dependencies") or []:
            if edge["type"].strip().lower() != "blocks":
                continue
            source = edge["issue_id"].strip() or issue_id
            target = edge["depends_on_id"].strip()
            if target:
                adjacency.setdefault(source, set()).add(target)
    return adjacency


def _path(adjacency: dict[str, set[str]], start: str, target: str) -> list[str] | None:
    """The shortest path, neighbours taken in sorted order (breadth first)."""
    queue: deque[list[str]] = deque([[start]])
    visited = {start}
    while queue:
        path = queue.popleft()
        for step in sorted(adjacency.get(path[-1], set())):
            if step == target:
                return [*path, step]
            if step not in visited:
                visited.add(step)
                queue.append([*path, step])
    return None


def compactness_findings(issues: IssueMap) -> list[CompactnessFinding]:
    adjacency = _blocks_adjacency(issues)
    findings: list[CompactnessFinding] = []
    for issue_id in sorted(issues):
        if _status(issues, issue_id) not in ACTIVE_STATUSES:
            continue
        targets = sorted(adjacency.get(issue_id, set()))
        closed = {target for target in targets if _status(issues, target) == "closed"}
        findings += [CompactnessFinding(CLOSED_EDGE, issue_id, t) for t in targets if t in closed]
        for target in targets:
            if target in closed:
                continue
            for start in targets:
                path = _path(adjacency, start, target) if start != target else None
                if path is not None:
                    findings.append(
                        CompactnessFinding(TRANSITIVE_EDGE, issue_id, target, tuple(path))
                    )
                    break
    return sorted(findings, key=lambda f: (*f[:3], " -> ".join(f.witness_path)))


def compactness_lines(findings: list[CompactnessFinding]) -> list[str]:
    """The text the reference's wrapper prints, with premath's own remediation."""
    if not findings:
        return []
    lines = [f"[issue-graph] FAIL (compactness drift: {len(findings)} finding(s))"]
    for finding in findings:
        edge = f"{finding.issue_id} -> {finding.depends_on_id}"
        if finding.witness_path:
            edge += f", witness={' -> '.join(finding.witness_path)}"
        lines.append(f"  - {finding.finding_class} ({edge})")
    lines.append(
        "  remediation: premath dep remove <issue> <depends-on> --type blocks, for each edge "
        "listed (the graph already implies it, or it blocks nothing)"
    )
    return lines
