"""claim-next from the slim scan of a store in our bytes (or in them but for its times) equals
claim-next from the full load: same claimed row (so the same stdout document), same file bytes,
same refusal; in id order or not (another tool's store). The slim readers (`issue ready`,
`issue list`, `dep diagnostics`) give what the full load gives too."""

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from premath.errors import PremathError
from premath.issues.documents import issue_brief, lease_summary
from premath.issues.memory import claim_next, dep_diagnostics, list_issues, ready
from premath.store import issues_file, stored_scan
from premath.store.issues_file import encode_store
from premath.timefmt import epoch_nanos
from tests.support.times import foreign_times

NOW = datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=UTC)
IDS = st.text(alphabet="ab-129", min_size=1, max_size=4)
STAMPS = st.sampled_from(
    [
        "2026-02-22T00:00:00Z",
        "2026-03-01T10:00:00.123456Z",
        "2026-03-01T10:00:00.500Z",
        "2026-03-02T03:33:09.338421Z",
    ]
)
FOREIGN_STAMPS = STAMPS | foreign_times()
"""Go's and hand-written times too: the store is in our bytes but for its times."""
WORKERS = st.sampled_from(["w", "v"])


@st.composite
def stores(draw):
    """Stores in our bytes (or in them but for their times) with priority ties, open and
    closed blockers, dangling blockers, fresh and stale leases, foreign assignees."""
    stamps = draw(st.sampled_from([STAMPS, FOREIGN_STAMPS]))
    ids = draw(st.lists(IDS, unique=True, min_size=1, max_size=8))
    rows = {}
    for issue_id in ids:
        row: dict = {
            "id": issue_id,
            "title": draw(st.sampled_from(["t", 'é \n"x\\'])),
            "status": draw(st.sampled_from(["open", "closed", "in_progress", "blocked"])),
            "priority": draw(st.integers(0, 2)),
            "issue_type": "task",
        }
        if draw(st.booleans()):
            row["assignee"] = draw(WORKERS)
        if row["status"] != "closed" and draw(st.booleans()):
            lease = {
                "lease_id": draw(st.sampled_from(["l1", "l2"])),
                "owner": draw(WORKERS),
                "acquired_at": draw(stamps),
                "expires_at": draw(stamps),
            }
            if draw(st.booleans()):
                lease["renewed_at"] = draw(stamps)
            row["lease"] = lease
        row |= {"created_at": draw(stamps), "updated_at": draw(stamps)}
        if row["status"] == "closed":
            row["closed_at"] = draw(stamps)
        row["ephemeral"] = False
        targets = draw(st.lists(st.sampled_from([*ids, "gone"]), unique=True, max_size=2))
        kinds = st.sampled_from(["blocks", "related", "parent-child"])
        if targets:
            row["dependencies"] = [
                {"issue_id": issue_id, "depends_on_id": target, "type": draw(kinds)}
                for target in sorted(targets)
            ]
        rows[issue_id] = row
    store = encode_store(rows)
    order = draw(st.sampled_from(["sorted", "shuffled", "repeated"]))
    if order == "sorted":
        return store
    # Another tool's store: its lines in any order, an id perhaps twice (the last line wins).
    lines = store.splitlines(keepends=True)
    if order == "repeated":
        twice = dict(rows[draw(st.sampled_from(ids))])
        twice["title"] = "again"
        lines.insert(draw(st.integers(0, len(lines))), encode_store({twice["id"]: twice}))
    return b"".join(draw(st.permutations(lines)))


def _claim(
    folder: str, store: bytes, worker: str, lease_id: str | None, slim_from: int, chunk: int
):
    path = f"{folder}/issues-{slim_from}.jsonl"
    Path(path).write_bytes(store)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(issues_file, "SLIM_STORE_BYTES", slim_from)
        patch.setattr(stored_scan, "CHUNK_BYTES", chunk)
        patch.setattr(stored_scan, "_LINES_PER_WRITE", 2)  # writes cut between lines
        try:
            outcome = orjson.dumps(
                claim_next(path, worker, now=NOW, timeout_s=5, lease_id=lease_id)
            )
        except PremathError as exc:
            outcome = exc.message.encode()
    return outcome, Path(path).read_bytes()


@settings(max_examples=300, deadline=None)
@given(stores(), WORKERS, st.none() | st.just("mine"), st.sampled_from([1 << 20, 1, 300]))
def test_slim_claim_next_equals_the_full_load(store, worker, lease_id, chunk):
    """`chunk` sizes the reads: small ones cut the file into many runs of lines, some in our
    bytes (copied as they are), some not but for their times."""
    with tempfile.TemporaryDirectory() as folder:
        with open(f"{folder}/probe", "wb") as probe:
            probe.write(store)
        with open(f"{folder}/probe", "rb") as probe:
            assert stored_scan.scan_stored(probe.fileno()) is not None  # the slim path runs
        full = _claim(folder, store, worker, lease_id, slim_from=1 << 62, chunk=1 << 20)
        slim = _claim(folder, store, worker, lease_id, slim_from=0, chunk=chunk)
        assert slim == full


@pytest.mark.parametrize(
    "store",
    [
        b'{"id":"b","status":"open"}\n{"id":"a","status":"open"}\n',  # not in stored form
        b"",
    ],
)
def test_files_not_in_our_bytes_are_not_scanned(tmp_path, store):
    path = tmp_path / "issues.jsonl"
    path.write_bytes(store)
    with open(path, "rb") as file:
        assert stored_scan.scan_stored(file.fileno()) is None


def _read(folder: str, store: bytes, slim_from: int, read) -> object:
    path = f"{folder}/issues-{slim_from}.jsonl"
    Path(path).write_bytes(store)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(issues_file, "SLIM_STORE_BYTES", slim_from)
        try:
            return read(path)
        except PremathError as exc:
            return exc.message


READERS = [
    lambda path: ready(path, now=NOW),
    lambda path: list_issues(path, now=NOW),
    lambda path: list_issues(path, now=NOW, status="open"),
    lambda path: list_issues(path, now=NOW, assignee="w"),
    lambda path: dep_diagnostics(path, now=NOW, scope="active"),
    lambda path: dep_diagnostics(path, now=NOW, scope="full"),
]


@settings(max_examples=200, deadline=None)
@given(stores(), st.sampled_from(range(len(READERS))))
def test_slim_readers_equal_the_full_load(store, reader):
    read = READERS[reader]
    with tempfile.TemporaryDirectory() as folder:
        with open(f"{folder}/probe", "wb") as probe:
            probe.write(store)
        with open(f"{folder}/probe", "rb") as probe:
            assert stored_scan.slim_store(probe.fileno(), lambda row: row) is not None
        full = _read(folder, store, 1 << 62, read)
        slim = _read(folder, store, 0, read)
        if reader < 4:  # rows: the slim ones hold only what the document shows, in its order
            item = issue_brief if reader == 0 else lambda row: lease_summary(row, epoch_nanos(NOW))
            full = [item(row) for row in full]
            slim = [item(row) for row in slim]
        assert slim == full


@pytest.mark.parametrize("line", [b'{"foo":1}', b"[1]", b'{"id":"bd-0"}', b"7"])
@pytest.mark.parametrize("reader", range(len(READERS)))
def test_a_line_that_is_json_but_no_row_gets_the_full_loads_error(tmp_path, line, reader):
    """A big store's slim read decodes lines before the proof beside it answers: a line that
    is JSON but no row is left to the full load, which refuses it in the reference's words
    (it was an internal error)."""
    rows = {f"bd-{n}": {"id": f"bd-{n}", "title": "t", "status": "open", "priority": 2,
                        "issue_type": "task", "created_at": "2026-02-22T00:00:00Z",
                        "updated_at": "2026-02-22T00:00:00Z", "ephemeral": False}
            for n in range(1, 4)}  # fmt: skip
    store = encode_store(rows) + line + b"\n"
    full = _read(str(tmp_path), store, 1 << 62, READERS[reader])
    slim = _read(str(tmp_path), store, 0, READERS[reader])
    assert isinstance(full, str)
    assert isinstance(slim, str)
    assert "line 4: parse error" in full
    assert slim.partition(".jsonl")[2] == full.partition(".jsonl")[2]  # the file names differ


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"id": "bd-1", "title": 'a ,"status":"open" \\', "status": "closed"}, ("bd-1", "closed")),
        ({"id": "é-1", "title": "t", "status": "in_progress"}, ("é-1", "in_progress")),
        ({"id": 'b"d', "title": "t", "status": "open"}, None),  # an escape: decoded instead
        ({"id": "bd-2", "title": "t", "status": "op\\en"}, None),
    ],
)
def test_a_line_without_edges_gives_its_id_and_status_undecoded(row, expected):
    line = encode_store({row["id"]: row | {"priority": 1, "issue_type": "task"}})[:-1]
    assert stored_scan._id_and_status(line) == expected
