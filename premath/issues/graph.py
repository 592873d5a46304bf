"""Dependency graph: ready and blocked sets, paths, cycles, edge views (specs/issue-memory.md)."""

from __future__ import annotations

import functools
import operator
from collections import deque
from collections.abc import Callable, Iterable

from premath.lean import NamedTuple
from premath.models.issue_row import BLOCKING_TYPES
from premath.store.issues_file import IssueMap
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import DependencyRow, IssueRow
    from premath.models.vocabulary import EdgeView, GraphScope

# type -> role in each view (specs/issue-memory.md "Edge views")
_ROLES: dict[str, dict[str, str]] = {
    "blocks": {"execution": "blocking", "gtd": "next-action", "groupoid": "constraint"},
    "parent-child": {"execution": "blocking", "gtd": "project-structure", "groupoid": "generator"},
    "conditional-blocks": {"execution": "blocking", "gtd": "next-action", "groupoid": "constraint"},
    "waits-for": {"execution": "blocking", "gtd": "next-action", "groupoid": "constraint"},
    "related": {"execution": "informational", "gtd": "reference", "groupoid": "provenance"},
    "relates-to": {"execution": "informational", "gtd": "reference", "groupoid": "provenance"},
    "discovered-from": {
        "execution": "informational",
        "gtd": "captured-work",
        "groupoid": "provenance",
    },
    "replies-to": {"execution": "informational", "gtd": "captured-work", "groupoid": "provenance"},
    "duplicates": {"execution": "informational", "gtd": "dedupe", "groupoid": "equivalence"},
    "supersedes": {"execution": "informational", "gtd": "dedupe", "groupoid": "equivalence"},
}

_NO_EDGES: list[DependencyRow] = []


class Blocker(NamedTuple):
    """A blocking edge whose target is not closed; `target` None: the target is missing."""

    edge: DependencyRow
    target: IssueRow | None


class BlockedIssue(NamedTuple):
    row: IssueRow
    manual: bool
    """The status is `blocked` (set by hand or by an escalation)."""
    blockers: list[Blocker]


class Integrity(NamedTuple):
    """The first dependency cycle, or None."""

    cycle_path: list[str] | None

    @property
    def has_cycle(self) -> bool:
        return self.cycle_path is not None


def foreign_edges(issues: IssueMap) -> dict[str, list[DependencyRow]]:
    """Edges stored in a row other than the one their `issue_id` names, by that issue
    (specs/issue-memory.md "Graph rules").

    The reference's `issue ready` indexes edges by their own `issue_id`; nearly always that is
    the owning row, and the rare hand-edited exception is moved to the issue it names.
    """
    found: dict[str, list[DependencyRow]] = {}
    for issue_id, row in issues.items():
        dependencies = row.get("dependencies")
        if dependencies is None:
            continue
        for edge in dependencies:
            if edge["issue_id"] != issue_id:
                found.setdefault(edge["issue_id"], []).append(edge)
    return found


def edges_of(
    issue_id: str, row: IssueRow | None, foreign: dict[str, list[DependencyRow]]
) -> list[DependencyRow]:
    own = (
        []
        if row is None
        else [e for e in row.get("dependencies", _NO_EDGES) if e["issue_id"] == issue_id]
    )
    return own + foreign.get(issue_id, _NO_EDGES) if foreign else own


def is_unblocked(edges: Iterable[DependencyRow], issues: IssueMap) -> bool:
    """Every blocking edge points at an existing issue whose status is exactly `closed`."""
    for edge in edges:
        if edge["type"] in BLOCKING_TYPES:
            target = issues.get(edge["depends_on_id"])
            if target is None or target["status"] != "closed":
                return False
    return True


def ready_issues(
    issues: IssueMap, order: Callable[[IssueRow], Any] = operator.itemgetter("id")
) -> list[IssueRow]:
    """`issue ready`: status exactly `open` and unblocked, sorted by `order` (the reference's:
    id in byte order; our faces pass claim-next's order, D25-1)."""
    foreign = foreign_edges(issues)
    ready = [
        row
        for issue_id, row in issues.items()
        if row["status"] == "open"
        and is_unblocked(
            edges_of(issue_id, row, foreign) if foreign else row.get("dependencies", _NO_EDGES),
            issues,
        )
    ]
    ready.sort(key=order)
    return ready


def blocked_issues(issues: IssueMap) -> list[BlockedIssue]:
    """`issue blocked`: not closed, and manually blocked or with an open blocking edge; by id.

    Unlike `ready`, the reference walks each row's own edges here.
    """
    items = []
    for issue_id in sorted(issues):
        row = issues[issue_id]
        if row["status"] == "closed":
            continue
        blockers = []
        for edge in row.get("dependencies", _NO_EDGES):
            if edge["type"] not in BLOCKING_TYPES:
                continue
            target = issues.get(edge["depends_on_id"])
            if target is not None and target["status"] == "closed":
                continue
            blockers.append(Blocker(edge, target))
        manual = row["status"] == "blocked"
        if blockers or manual:
            items.append(BlockedIssue(row, manual, blockers))
    return items


def in_scope(row: IssueRow, scope: GraphScope) -> bool:
    """`active`: status open or in_progress after trim and lowercase; `full`: every issue."""
    return scope == "full" or _active_status(row["status"])


@functools.cache
def _active_status(status: str) -> bool:
    """A store holds a handful of distinct statuses: each is trimmed and lowered once."""
    return rust_trim(status).lower() in ("open", "in_progress")


def _neighbours(row: IssueRow) -> list[str]:
    return sorted({edge["depends_on_id"] for edge in row.get("dependencies", _NO_EDGES)})


def find_path(issues: IssueMap, start: str, target: str, scope: GraphScope) -> list[str] | None:
    """BFS over edges of every type, neighbours sorted: the reference's deterministic path."""
    start_row, target_row = issues.get(start), issues.get(target)
    if start_row is None or target_row is None:
        return None
    if not in_scope(start_row, scope) or not in_scope(target_row, scope):
        return None
    if start == target:
        return [start]
    parents: dict[str, str] = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for neighbour in _neighbours(issues[node]):
            if neighbour in parents:
                continue
            row = issues.get(neighbour)
            if row is None or not in_scope(row, scope):
                continue
            parents[neighbour] = node
            if neighbour == target:
                path = [neighbour]
                while path[-1] != start:
                    path.append(parents[path[-1]])
                return path[::-1]
            queue.append(neighbour)
    return None


def _cyclic_components(issues: IssueMap, scope: GraphScope) -> dict[str, int]:
    """Strongly connected component index of each in-scope node that has edges (Tarjan,
    iterative). A node without edges is a component of its own that no cycle passes through:
    it is neither a root nor walked into, which leaves every other component as it is."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    component: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0

    def successors(node: str) -> list[str]:
        found = []
        for edge in issues[node].get("dependencies", _NO_EDGES):
            target = issues.get(edge["depends_on_id"])
            if target is not None and "dependencies" in target and in_scope(target, scope):
                found.append(edge["depends_on_id"])
        return found

    for root, row in issues.items():
        if root in index or "dependencies" not in row or not in_scope(row, scope):
            continue
        work = [(root, iter(successors(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors(child))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = index[node]
                    if member == node:
                        break
    return component


def find_any_cycle(issues: IssueMap, scope: GraphScope) -> list[str] | None:
    """The reference's first cycle: issues in id order, edges sorted, `[issue] + path back`.

    A path from an edge's target back to its issue exists exactly when both sit in one strongly
    connected component, so components prune the search to the edges that can close a cycle;
    the path itself is the reference's BFS path.
    """
    component = _cyclic_components(issues, scope)
    for issue_id in sorted(issues):
        row = issues[issue_id]
        if issue_id not in component or "dependencies" not in row:
            continue
        edges = sorted(
            row["dependencies"],
            key=lambda edge: (edge["depends_on_id"], edge["type"], edge.get("created_by", "")),
        )
        for edge in edges:
            target = edge["depends_on_id"]
            if component.get(target) != component[issue_id]:
                continue
            path = find_path(issues, target, issue_id, scope)
            if path is not None:
                return [issue_id, *path]
    return None


def integrity(issues: IssueMap, scope: GraphScope) -> Integrity:
    return Integrity(find_any_cycle(issues, scope))


def edge_role(edge_type: str, view: EdgeView) -> str:
    """The edge type's role in one view (`blocking`, `next-action`, `constraint`, ...)."""
    return _ROLES[edge_type][view]


def sorted_edges(issues: IssueMap) -> list[DependencyRow]:
    """Every edge, sorted by (issue_id, depends_on_id, type, created_by): `dep project`'s order."""
    edges = [edge for row in issues.values() for edge in row.get("dependencies", _NO_EDGES)]
    edges.sort(
        key=lambda edge: (
            edge["issue_id"],
            edge["depends_on_id"],
            edge["type"],
            edge.get("created_by", ""),
        )
    )
    return edges
