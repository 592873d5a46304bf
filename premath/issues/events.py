"""The issue event log: migrate a store into `issue.event.v1` rows, replay rows into a store.

Reference agent-surface §5.2-§5.3 and issue-memory §A9. Replay streams the log (one line in
memory, the store and the still-unresolved edges besides), so a log of any length replays in
memory bounded by the store it builds. Replay rules: upserts are last-wins and must match the
envelope's `issue_id`; an edge applies once both ends exist, else it waits and is retried after
the last event; a repeated (target, type) edge is ignored. Errors keep the reference's
precedence: a malformed line anywhere wins over a replay error, since the reference reads the
whole log before replaying it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from premath.errors import ArtifactInvalid, Conflict, IoFailure, NotFound
from premath.issues.lifecycle import put_field
from premath.issues.snapshot import snapshot_ref_of
from premath.models.issue_event import (
    ADD_DEPENDENCY,
    EVENT_SCHEMA,
    IssueEvent,
    dependency_event,
    upsert_event,
)
from premath.models.issue_row import FIELD_ORDER, dependency_sort_key
from premath.store.atomic import sweep_orphan_temps
from premath.store.documents import os_error_text
from premath.store.events_file import (
    EventLogInvalid,
    ReplayCacheEntry,
    StreamDigest,
    event_line,
    make_parent_folder,
    read_events,
    read_replay_cache,
    replay_cache_path,
    write_event_log,
    write_replay_cache,
)
from premath.store.issues_file import (
    IssueMap,
    canonical_line,
    load_issues,
    lock_path,
    write_issues,
)
from premath.store.locks import hold_marker
from premath.timefmt import epoch_nanos, format_autosi_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import DependencyRow


@dataclass(frozen=True)
class Difference:
    """Where two stores first differ, in id order: an issue on one side only, or a field."""

    issue_id: str
    in_existing: bool
    in_replay: bool
    field: str | None

    def describe(self, existing: str, replayed: str) -> str:
        if not self.in_replay:
            return f"issue {self.issue_id} is in {existing} but not in the replay of {replayed}"
        if not self.in_existing:
            return f"issue {self.issue_id} is in the replay of {replayed} but not in {existing}"
        return f"issue {self.issue_id} differs in `{self.field}`"


def first_difference(existing: IssueMap, replayed: IssueMap) -> Difference | None:
    """None when the stores are equivalent (equal canonical lines), else the first difference."""
    for issue_id in sorted(existing.keys() | replayed.keys()):
        left, right = existing.get(issue_id), replayed.get(issue_id)
        if left is None or right is None:
            return Difference(issue_id, left is not None, right is not None, None)
        if canonical_line(left) == canonical_line(right):
            continue
        for field in FIELD_ORDER:
            left_value: Any = left.get(field)
            right_value: Any = right.get(field)
            if field == "dependencies":
                left_value = sorted(left_value or [], key=dependency_sort_key)
                right_value = sorted(right_value or [], key=dependency_sort_key)
            if left_value != right_value:
                return Difference(issue_id, True, True, field)
        return Difference(issue_id, True, True, "metadata")  # equal values, different bytes
    return None


# --- replay ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """A streamed pass over a log: its size and ref, and the store it builds (or why not)."""

    event_count: int
    stream_ref: str
    issues: IssueMap
    error: str | None


def _apply_edge(issues: IssueMap, event: IssueEvent) -> bool:
    source, target, kind = event["issue_id"], event["depends_on_id"], event["type"]
    row = issues.get(source)
    if row is None or target not in issues:
        return False
    edges = row.get("dependencies")
    if edges is None:
        edges = []
        put_field(row, "dependencies", edges)
    elif any(edge["depends_on_id"] == target and edge["type"] == kind for edge in edges):
        return True
    edge: DependencyRow = {"issue_id": source, "depends_on_id": target, "type": kind}
    created_by = event.get("created_by", "")
    if created_by:
        edge["created_by"] = created_by
    edges.append(edge)
    return True


def replay_log(path: str, now: datetime) -> Replay:
    """Read, hash and replay the log at `path` in one streaming pass.

    Raises EventLogInvalid for a malformed line; a replay error is returned, not raised, so
    callers report it only where the reference would have replayed.
    """
    now_text = format_autosi_z(epoch_nanos(now))
    digest = StreamDigest()
    issues: IssueMap = {}
    pending: list[IssueEvent] = []
    error: str | None = None
    for event in read_events(path, now_text):
        digest.add(event_line(event))
        if error is not None:
            continue
        if event["schema"] != EVENT_SCHEMA:
            error = f"unsupported event schema: {event['schema']}"
        elif event["action"] == ADD_DEPENDENCY:
            if not _apply_edge(issues, event):
                pending.append(event)
        else:
            row = event["issue"]
            if row["id"] != event["issue_id"]:
                error = (
                    f"replay issue-id mismatch for event {event['event_id']}: "
                    f"envelope={event['issue_id']}, payload={row['id']}"
                )
            else:
                issues[row["id"]] = row
    progress = True
    while error is None and progress and pending:
        waiting = [event for event in pending if not _apply_edge(issues, event)]
        progress = len(waiting) < len(pending)
        pending = waiting
    if error is None and pending:
        event = pending[0]
        error = (
            f"replay unresolved dependency for event {event['event_id']}: "
            f"{event['issue_id']} -> {event['depends_on_id']}"
        )
    return Replay(digest.count, digest.ref(), issues, error)


# --- migrate -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Migration:
    issues_path: str
    events_path: str
    issue_count: int
    event_count: int


def _migration_stream(issues: IssueMap, counter: list[int]) -> Iterator[bytes]:
    """Per issue in id order: its upsert (no edges), then its edges in canonical order."""
    for issue_id in sorted(issues):
        row = issues[issue_id]
        counter[0] += 1
        yield event_line(upsert_event(row))
        for edge in sorted(row.get("dependencies", ()), key=dependency_sort_key):
            counter[0] += 1
            yield event_line(
                dependency_event(
                    row, edge["depends_on_id"], edge["type"], edge.get("created_by", "")
                )
            )


def migrate_events(issues_path: str, events_path: str, *, now: datetime) -> Migration:
    """`issue migrate-events`: write the store as an event log and prove it replays to an
    equivalent store (else `migration replay mismatch`, naming the first difference).

    The new log is replayed before it takes the events path, so a refused log never replaces
    the old one (the reference writes it first, then checks; divergence D3-8).
    """
    issues = load_issues(issues_path, now, tolerate_torn_tail=False)
    make_parent_folder(events_path, "events")
    counter = [0]

    def verify(written: str) -> None:
        try:
            replay = replay_log(written, now)
        except EventLogInvalid as exc:
            raise ArtifactInvalid(f"failed to replay {events_path}: {exc}") from None
        if replay.error is not None:
            raise ArtifactInvalid(f"failed to replay {events_path}: {replay.error}")
        difference = first_difference(issues, replay.issues)
        if difference is not None:
            raise Conflict(
                f"migration replay mismatch between {issues_path} and {events_path}: "
                + difference.describe(issues_path, events_path)
                + f"; {events_path} was left as it was"
            )

    try:
        write_event_log(events_path, _migration_stream(issues, counter), verify)
    except OSError as exc:
        raise IoFailure(
            f"failed to save {events_path}: line 0: I/O error: {events_path}: {os_error_text(exc)}"
        ) from None
    return Migration(issues_path, events_path, len(issues), counter[0])


# --- replay-events -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayReport:
    events_path: str
    issues_path: str
    cache_path: str
    cache_hit: bool
    event_count: int
    issue_count: int
    stream_ref: str
    snapshot_ref: str
    equivalent_to_existing: bool | None
    """None when there was no issues file to compare with."""
    difference: Difference | None
    """Where the existing store differed from the replay (it was then rewritten)."""


def _replayed(events_path: str, now: datetime) -> Replay:
    if not os.path.exists(events_path):
        raise NotFound(f"events file not found: {events_path}")
    try:
        return replay_log(events_path, now)
    except EventLogInvalid as exc:
        raise ArtifactInvalid(f"failed to load {events_path}: {exc}") from None
    except OSError as exc:
        raise IoFailure(
            f"failed to load {events_path}: line 0: I/O error: {events_path}: {os_error_text(exc)}"
        ) from None


def replay_events(
    events_path: str,
    issues_path: str,
    cache: str | None,
    *,
    now: datetime,
    timeout_s: float,
) -> ReplayReport:
    """`issue replay-events`: rebuild or verify the store from the log, with the reference's
    cache (`issue.replay.cache.v1`, keyed by the literal path strings and both refs).

    The store is rewritten only when it differs from the replay, under the store lock (the
    reference takes none); the cache is written after the store, on every miss.
    """
    replay = _replayed(events_path, now)
    cache_path = replay_cache_path(issues_path, cache)
    if replay.error is not None and not os.path.exists(issues_path):
        raise ArtifactInvalid(f"failed to replay {events_path}: {replay.error}")
    replayed_ref = snapshot_ref_of(replay.issues)
    with hold_marker(
        lock_path(issues_path),
        timeout_s=timeout_s,
        busy_message=f"issue-memory lock busy: {lock_path(issues_path)}",
    ):
        equivalent: bool | None = None
        difference: Difference | None = None
        if os.path.exists(issues_path):
            existing = load_issues(issues_path, now, tolerate_torn_tail=False)
            existing_ref = snapshot_ref_of(existing)
            entry = read_replay_cache(cache_path)
            if entry is not None and entry[:4] == (
                events_path,
                issues_path,
                replay.stream_ref,
                existing_ref,
            ):
                return ReplayReport(
                    events_path, issues_path, cache_path, True, replay.event_count,
                    len(existing), replay.stream_ref, existing_ref, True, None,
                )  # fmt: skip
            if replay.error is not None:
                raise ArtifactInvalid(f"failed to replay {events_path}: {replay.error}")
            difference = first_difference(existing, replay.issues)
            equivalent = difference is None
        if equivalent is not True:
            write_issues(issues_path, replay.issues)
        sweep_orphan_temps(Path(issues_path))
    write_replay_cache(
        cache_path,
        ReplayCacheEntry(
            events_path, issues_path, replay.stream_ref, replayed_ref,
            replay.event_count, len(replay.issues),
        ),
    )  # fmt: skip
    return ReplayReport(
        events_path, issues_path, cache_path, False, replay.event_count, len(replay.issues),
        replay.stream_ref, replayed_ref, equivalent, difference,
    )  # fmt: skip
