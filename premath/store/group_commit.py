"""Group commit of the issues store for a long-running writer (the MCP authority).

Mutations of one store that arrive while a write is in flight queue up; the next writer takes
the whole queue as one group: it holds `<issues>.lock` (the reference's protocol, unchanged),
revalidates its warm store against the file (`WarmStores.take`: another process's write is
seen), applies the mutations in arrival order to the store in memory, and makes them durable
with one rewrite and one fsync (specs/issue-memory.md "Group commit"). Only then does any
caller of the group hear its outcome, so no reply runs ahead of the disk; a crash before the
rename loses only unanswered mutations.

Each mutation is its own unit: one that raises fails alone, the store put back to what the
mutations before it made (`_Group.undo`). Rows a mutation changed are replaced in the map by
copies before the next one runs, so what a caller was handed (its changed row, its witness
hook's rows) is never touched again while it renders its reply. The rewrite streams the file
from the rows' lines: unchanged rows keep the bytes they were read with, changed rows are
encoded once, and the file is never whole in memory beside the store.

Files a mutation appends to on the side (the authority's lease-grant journal) need not be
fsynced row by row: `sync_before_write` notes them while a group applies, and each is fsynced
once before the group's rewrite, so what the issues file says landed is on disk beside it.

Trade-offs: a refused mutation costs a check of every row against its line (a mutation may
have changed rows before it raised, and none says which); refusals are raised before any
change in practice, but the check is what proves it. A group holds the lock for its whole
apply and write, so a reference writer waits at most one group.
"""

from __future__ import annotations

import bisect
import copy
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from premath.errors import IoFailure, LockBusy
from premath.store.issues_file import (
    Changes,
    IssueMap,
    LoadedStore,
    ViewedIssues,
    WarmStores,
    encode_row,
    load_for_write,
    lock_path,
    store_lock,
)
from premath.store.json_codec import loads
from premath.store.jsonl import sync_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.models.issue_row import IssueRow

T = TypeVar("T")

Mutation = Callable[[IssueMap], tuple[Any, Changes]]

_applying = threading.local()
"""`files`: the set of files to fsync before the rewrite of the group this thread applies."""


def sync_before_write(path: str) -> bool:
    """True when this thread is applying a group: `path` (appended to without its fsync) is
    then fsynced once before the group's rewrite. False elsewhere: the caller syncs itself."""
    files: set[str] | None = getattr(_applying, "files", None)
    if files is None:
        return False
    files.add(path)
    return True


_CHUNK_LINES = 4096
"""Lines joined per write: the file streams out a few hundred kB at a time."""


@dataclass(eq=False)
class _Pending:
    """One caller's mutation and, once its group is durable (or failed), its outcome."""

    mutate: Mutation
    now: datetime
    timeout_s: float
    done: bool = False
    value: Any = None
    error: BaseException | None = None


@dataclass(eq=False)
class _Queue:
    """The mutations of one store path waiting for the write in flight to end."""

    turn: threading.Condition = field(default_factory=threading.Condition)
    waiting: list[_Pending] = field(default_factory=list)
    writing: bool = False


class GroupCommits(WarmStores):
    """Warm stores whose mutations commit in groups (one rewrite, one fsync per group)."""

    def __init__(self) -> None:
        super().__init__()
        self._queues: dict[str, _Queue] = {}
        self._queues_guard = threading.Lock()

    def _queue(self, path: str) -> _Queue:
        with self._queues_guard:
            return self._queues.setdefault(path, _Queue())

    def mutate(
        self,
        path: str,
        mutate: Callable[[IssueMap], tuple[T, Changes]],
        *,
        now: datetime,
        timeout_s: float,
    ) -> T:
        """`mutate_store`'s contract, grouped: the value once the group holding this mutation
        is on disk, or this mutation's own error. A mutation still queued when `timeout_s`
        runs out is withdrawn (never applied) and refused as the lock would refuse it."""
        queue = self._queue(path)
        pending = _Pending(mutate, now, timeout_s)
        group = self._wait_turn(queue, pending, path)
        if group is not None:
            try:
                self._commit(path, group, pending.timeout_s)
            finally:
                with queue.turn:
                    queue.writing = False
                    queue.turn.notify_all()
        if pending.error is not None:
            raise pending.error
        value: T = pending.value
        return value

    def _wait_turn(self, queue: _Queue, pending: _Pending, path: str) -> list[_Pending] | None:
        """Queue `pending`; the group to write when this caller leads the next write, None when
        another writer completed it."""
        deadline = time.monotonic() + pending.timeout_s
        with queue.turn:
            queue.waiting.append(pending)
            while queue.writing and not pending.done:
                if pending not in queue.waiting:
                    queue.turn.wait()  # in the group being written: its outcome comes
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    queue.waiting.remove(pending)
                    raise LockBusy(
                        f"issue-memory lock busy: {lock_path(path)} (a call of this server "
                        "holds it)"
                    )
                queue.turn.wait(left)
            if pending.done:
                return None
            group, queue.waiting = queue.waiting, []
            queue.writing = True
            return group

    def _commit(self, path: str, group: list[_Pending], timeout_s: float) -> None:
        """Apply `group` under the store lock and write it once; every member gets its outcome."""
        try:
            with store_lock(path, timeout_s):
                loaded = self.take(path)
                if loaded is None:
                    loaded = load_for_write(path, group[0].now)
                applied = _Group(loaded)
                _applying.files = set()
                try:
                    for pending in group:
                        applied.run(pending)
                finally:
                    side_files, _applying.files = _applying.files, None
                for side_file in sorted(side_files):
                    try:
                        sync_file(side_file)
                    except OSError as exc:
                        raise IoFailure(
                            f"failed to sync {side_file}: {exc.strerror or exc}"
                        ) from None
                if applied.changed:
                    try:
                        applied.write(path)
                    except OSError as exc:
                        raise IoFailure(
                            f"failed to write issues file {path}: {exc.strerror or exc}"
                        ) from None
                    self.keep(path, applied.saved())
                elif os.path.exists(path):
                    self.keep(path, applied.saved())
        except BaseException as exc:
            for pending in group:
                if pending.error is None:
                    pending.error = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            for pending in group:
                pending.done = True


class _Group:
    """A store being changed by one group: its rows by id in id order, the line of each row
    as the group found it, and the lines of the rows the group's mutations changed."""

    def __init__(self, loaded: LoadedStore) -> None:
        issues = loaded.issues
        self.in_file = loaded.stored_lines is not None  # else the lines are encoded here
        if loaded.stored_lines is not None:
            self.ids = list(issues)  # in line order: `LoadedStore`'s invariant
            self.lines = loaded.stored_lines
        else:
            self.ids = sorted(issues)
            if list(issues) != self.ids:
                issues = {issue_id: issues[issue_id] for issue_id in self.ids}
            self.lines = [encode_row(issues[issue_id])[:-1] for issue_id in self.ids]
        if not isinstance(issues, ViewedIssues):
            issues = ViewedIssues(issues)  # the store is new to us: no views yet
        # else: the kept store, unchanged since we kept it (`take`): its views still hold
        self.issues: ViewedIssues = issues
        self.changed_lines: dict[str, bytes] = {}

    @property
    def changed(self) -> bool:
        return bool(self.changed_lines)

    def run(self, pending: _Pending) -> None:
        """Apply one mutation: its value and changed rows kept, or its error and no change."""
        issues = self.issues
        count = len(issues)
        try:
            pending.value, changes = pending.mutate(issues)
        except Exception as exc:  # noqa: BLE001 - any refusal fails this mutation alone
            pending.error = exc
            issues.views.clear()  # a view built midway saw rows the undo puts back
            self.undo(count)
            return
        if changes is True:
            issues.views.clear()
            changed: Iterator[str] = iter(list(issues))
        else:
            changed = itertools.chain(changes or (), self._added(count))
        for issue_id in changed:
            row = issues[issue_id]
            line = encode_row(row)[:-1]
            before = self.changed_lines.get(issue_id, self._line(issue_id))
            if before != line:
                self.changed_lines[issue_id] = line
                self._follow(issue_id, before, row)
            issues[issue_id] = copy.deepcopy(row)  # the caller keeps the row it was handed

    def _follow(self, issue_id: str, before: bytes | None, row: IssueRow) -> None:
        """Tell the map's views of one row's change; drop those that cannot follow it."""
        views = self.issues.views
        if not views:
            return
        old = None if before is None else loads(before)
        for name, view in list(views.items()):
            if not view.follow(issue_id, old, row, self.issues):
                del views[name]

    def _added(self, count: int) -> list[str]:
        """Ids of rows added since the map held `count` (dicts keep insertion order)."""
        return list(itertools.islice(reversed(self.issues), len(self.issues) - count))

    def _line(self, issue_id: str) -> bytes | None:
        position = bisect.bisect_left(self.ids, issue_id)
        if position < len(self.ids) and self.ids[position] == issue_id:
            return self.lines[position]
        return None

    def undo(self, count: int) -> None:
        """Put the store back as the mutations before the failed one left it: rows it added
        go, rows it changed are decoded again from their last line."""
        issues = self.issues
        for issue_id in self._added(count):
            del issues[issue_id]
        for issue_id, row in issues.items():
            line = self.changed_lines.get(issue_id) or self._line(issue_id)
            if line is not None and encode_row(row)[:-1] != line:
                issues[issue_id] = loads(line)

    def _final(self) -> tuple[list[str], list[bytes]]:
        """Ids and lines of the store after the group, in id order."""
        ids, lines = self.ids, list(self.lines)
        added: list[tuple[str, bytes]] = []
        for issue_id, line in self.changed_lines.items():
            position = bisect.bisect_left(ids, issue_id)
            if position < len(ids) and ids[position] == issue_id:
                lines[position] = line
            else:
                added.append((issue_id, line))
        if added:
            # Two sorted runs: the sort merges them in one pass.
            pairs = sorted(itertools.chain(zip(ids, lines, strict=True), sorted(added)))
            ids = [issue_id for issue_id, _ in pairs]
            lines = [line for _, line in pairs]
        return ids, lines

    def write(self, path: str) -> None:
        from premath.store.atomic import write_atomic_chunks

        self.ids, self.lines = self._final()
        self.changed_lines = {}
        write_atomic_chunks(path, _chunks(self.lines))
        self.in_file = True

    def saved(self) -> LoadedStore:
        """The store as written, its rows in line order (what `WarmStores` keeps)."""
        issues = self.issues
        if list(issues) != self.ids:
            issues = ViewedIssues({issue_id: issues[issue_id] for issue_id in self.ids})
        return LoadedStore(issues, self.lines if self.in_file else None)


def _chunks(lines: list[bytes]) -> Iterator[bytes]:
    for start in range(0, len(lines), _CHUNK_LINES):
        yield b"\n".join(lines[start : start + _CHUNK_LINES]) + b"\n"
