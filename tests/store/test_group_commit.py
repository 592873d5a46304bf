"""Group commit (premath/store/group_commit.py), in one process with real threads: mutations
queued behind a write share the next one, in arrival order; a refused one fails alone; a
queued one that runs out of time is withdrawn; another writer's bytes are seen."""

import threading
import time
from pathlib import Path

import orjson
import pytest

from premath.errors import Conflict, IoFailure, LockBusy
from premath.store import atomic
from premath.store.group_commit import GroupCommits
from premath.store.issues_file import encode_store, mutate_store
from tests.conftest import T0
from tests.support.stores import write_open_store


@pytest.fixture
def store(tmp_path):
    return str(write_open_store(tmp_path, 5))


@pytest.fixture
def writes(monkeypatch):
    """Every rewrite of a store: the number of durable writes."""
    made: list[str] = []
    original = atomic.write_atomic_chunks

    def counted(path, chunks, before_replace=None):
        made.append(str(path))
        original(path, chunks, before_replace)

    monkeypatch.setattr(atomic, "write_atomic_chunks", counted)
    return made


def rows(path: str) -> dict[str, dict]:
    data = Path(path).read_bytes()
    found = {row["id"]: row for row in map(orjson.loads, data.splitlines())}
    assert encode_store(found) == data  # the file is canonical after every group
    return found


def note(issue_id: str, text: str, *, then_fail: bool = False):
    """A mutation appending `text` to the issue's notes (and raising after, when asked)."""

    def mutate(issues):
        row = issues[issue_id]
        row["notes"] = row.get("notes", "") + text
        if then_fail:
            raise Conflict(f"refused after changing {issue_id}")
        return row, (issue_id,)

    return mutate


def add(issue_id: str, *, then_fail: bool = False):
    def mutate(issues):
        issues[issue_id] = {**issues["bd-1"], "id": issue_id, "title": f"new {issue_id}"}
        if then_fail:
            raise Conflict(f"refused after adding {issue_id}")
        return issues[issue_id], (issue_id,)

    return mutate


class Blocked:
    """A first mutation that holds its group open until released, so others queue behind it."""

    def __init__(self, commits: GroupCommits, path: str) -> None:
        self.commits, self.path = commits, path
        self.entered, self.release = threading.Event(), threading.Event()
        self.outcomes: dict[str, object] = {}
        self.threads: list[threading.Thread] = []

    def mutate(self, issues):
        self.entered.set()
        assert self.release.wait(30)
        return note("bd-1", "0,")(issues)

    def submit(self, name: str, mutate, timeout_s: float = 30.0, *, queued: bool = True) -> None:
        """Start `mutate` on a thread and wait until it is queued (or done) when `queued`."""
        queue = self.commits._queue(self.path)
        with queue.turn:
            before = len(queue.waiting)

        def run() -> None:
            try:
                self.outcomes[name] = self.commits.mutate(
                    self.path, mutate, now=T0, timeout_s=timeout_s
                )
            except Exception as exc:  # noqa: BLE001 - the outcome under test
                self.outcomes[name] = exc

        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)
        if not queued:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with queue.turn:
                if len(queue.waiting) > before or name in self.outcomes:
                    return
            time.sleep(0.005)
        raise AssertionError(f"{name} never queued")

    def start(self) -> None:
        self.submit("first", self.mutate, queued=False)
        assert self.entered.wait(30)

    def finish(self) -> None:
        self.release.set()
        for thread in self.threads:
            thread.join(30)


def test_mutations_queued_behind_a_write_share_one_rewrite_in_arrival_order(store, writes):
    commits = GroupCommits()
    blocked = Blocked(commits, store)
    blocked.start()
    for n in range(1, 9):
        blocked.submit(f"m{n}", note("bd-1", f"{n},"))
    blocked.finish()
    assert writes == [store, store]  # the blocked group, then one for all eight behind it
    assert rows(store)["bd-1"]["notes"] == "0,1,2,3,4,5,6,7,8,"
    # Each caller got its own row as its mutation left it, not as the group ended.
    assert [blocked.outcomes[f"m{n}"]["notes"] for n in (1, 8)] == ["0,1,", "0,1,2,3,4,5,6,7,8,"]


def test_a_refused_mutation_fails_alone_and_leaves_no_trace(store, writes):
    commits = GroupCommits()
    blocked = Blocked(commits, store)
    blocked.start()
    blocked.submit("before", note("bd-2", "a"))
    blocked.submit("changes-then-fails", note("bd-2", "b", then_fail=True))
    blocked.submit("adds-then-fails", add("bd-9", then_fail=True))
    blocked.submit("add", add("bd-8"))
    blocked.submit("after", note("bd-2", "c"))
    blocked.finish()
    assert isinstance(blocked.outcomes["changes-then-fails"], Conflict)
    assert isinstance(blocked.outcomes["adds-then-fails"], Conflict)
    found = rows(store)
    assert found["bd-2"]["notes"] == "ac"
    assert sorted(found) == ["bd-1", "bd-2", "bd-3", "bd-4", "bd-5", "bd-8"]
    assert len(writes) == 2
    # The kept store is the file: a further group starts from what was written.
    commits.mutate(store, note("bd-2", "d"), now=T0, timeout_s=5)
    assert rows(store)["bd-2"]["notes"] == "acd"


def test_a_queued_mutation_out_of_time_is_withdrawn_never_applied(store, writes):
    commits = GroupCommits()
    blocked = Blocked(commits, store)
    blocked.start()
    blocked.submit("late", note("bd-3", "never"), timeout_s=0.2)
    deadline = time.monotonic() + 30
    while "late" not in blocked.outcomes and time.monotonic() < deadline:
        time.sleep(0.01)
    blocked.finish()
    late = blocked.outcomes["late"]
    assert isinstance(late, LockBusy)
    assert "a call of this server holds it" in late.message
    assert "notes" not in rows(store)["bd-3"]
    assert writes == [store]


def test_another_writer_between_groups_is_seen_by_the_next(store):
    commits = GroupCommits()
    commits.mutate(store, note("bd-1", "ours,"), now=T0, timeout_s=5)
    # Another process's write, under the lock, with no warm store (as the CLI writes).
    mutate_store(store, note("bd-1", "theirs,"), now=T0, timeout_s=5)
    mutate_store(store, add("bd-7"), now=T0, timeout_s=5)
    commits.mutate(store, note("bd-1", "ours again,"), now=T0, timeout_s=5)
    found = rows(store)
    assert found["bd-1"]["notes"] == "ours,theirs,ours again,"
    assert "bd-7" in found


def test_a_failed_write_fails_the_whole_group_and_keeps_nothing(store, monkeypatch):
    commits = GroupCommits()
    commits.mutate(store, note("bd-1", "kept,"), now=T0, timeout_s=5)
    before = Path(store).read_bytes()

    def full_disk(path, chunks, before_replace=None):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(atomic, "write_atomic_chunks", full_disk)
        with pytest.raises(IoFailure, match="No space left on device"):
            commits.mutate(store, note("bd-1", "lost,"), now=T0, timeout_s=5)
    assert Path(store).read_bytes() == before
    commits.mutate(store, note("bd-1", "next,"), now=T0, timeout_s=5)
    assert rows(store)["bd-1"]["notes"] == "kept,next,"


def test_unchanged_rows_keep_their_bytes_and_the_file_streams(tmp_path, writes):
    path = str(write_open_store(tmp_path, 10_000))
    commits = GroupCommits()
    commits.mutate(path, note("bd-5000", "x"), now=T0, timeout_s=5)
    commits.mutate(path, add("bd-0"), now=T0, timeout_s=5)
    found = rows(path)
    assert found["bd-5000"]["notes"] == "x"
    assert "bd-0" in found
    assert len(writes) == 2


def test_files_appended_beside_a_group_are_synced_once_before_its_rewrite(
    store, tmp_path, monkeypatch
):
    """The lease-grant journal's rule: a row appended while a group applies is durable before
    the issues file that says its claim landed; one fsync per group, not one per row."""
    from premath.store import group_commit
    from premath.store.jsonl import append_line

    events: list[str] = []
    monkeypatch.setattr(group_commit, "sync_file", lambda path: events.append(f"sync {path}"))
    original = atomic.write_atomic_chunks

    def counted(path, chunks, before_replace=None):
        events.append(f"write {path}")
        original(path, chunks, before_replace)

    monkeypatch.setattr(atomic, "write_atomic_chunks", counted)
    journal = str(tmp_path / "grants.jsonl")

    def journaled(text: str):
        def mutate(issues):
            assert group_commit.sync_before_write(journal)
            append_line(journal, f'"{text}"\n'.encode(), timeout_s=5, sync=False)
            return note("bd-2", text)(issues)

        return mutate

    assert group_commit.sync_before_write(journal) is False  # outside a group: sync yourself
    commits = GroupCommits()
    blocked = Blocked(commits, store)
    blocked.start()
    for n in range(1, 6):
        blocked.submit(f"m{n}", journaled(f"{n},"))
    blocked.finish()
    assert events == [f"write {store}", f"sync {journal}", f"write {store}"]
    assert Path(journal).read_text().splitlines() == ['"1,"', '"2,"', '"3,"', '"4,"', '"5,"']
    assert rows(store)["bd-2"]["notes"] == "1,2,3,4,5,"
