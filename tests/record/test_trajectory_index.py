"""The query's side index (record/trajectory_index.py) answers exactly as a full scan does,
whatever happens to the file between queries: appends, torn tails, truncation, replacement."""

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from premath.errors import PremathError
from premath.record import trajectory_index, trajectory_scan
from premath.record.trajectory import query_trajectory
from premath.record.trajectory_index import index_path, query_selection
from premath.record.trajectory_scan import read_rows, select_rows
from tests.record.test_trajectory_scan import row

ROWS = st.builds(
    row, st.integers(0, 30), st.integers(0, 600), st.sampled_from(["ok", "timeout", "boom"])
)
LINES = st.lists(st.one_of(ROWS, st.sampled_from([b"", b"  "])), max_size=12)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), LINES),
        st.tuples(st.just("torn"), ROWS, st.integers(1, 60)),  # a row cut short
        st.tuples(st.just("unterminated"), ROWS),  # a whole row without its newline
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("replace"), LINES),  # a new file under the name (new inode)
        st.tuples(st.just("rewrite"), LINES),  # new bytes in the same inode
        st.tuples(st.just("garbage"), st.sampled_from([b"garbage\n", b'{"schema":2}\n'])),
    ),
    min_size=1,
    max_size=10,
)
QUERIES = st.tuples(st.sampled_from(["latest", "failed", "retry-needed"]), st.integers(0, 6))


def _full_scan(path: str, mode: str, limit: int) -> object:
    try:
        selection = select_rows(path, mode, limit)  # type: ignore[arg-type]
        rows = read_rows(path, selection.kept[mode])
    except PremathError as exc:
        return type(exc), exc.message
    torn = None if selection.torn_tail is None else selection.torn_tail.number
    return rows, selection.total, selection.failed, selection.retry_needed, torn


def _indexed(path: str, mode: str, limit: int) -> object:
    try:
        selection, rows = query_selection(path, mode, limit)  # type: ignore[arg-type]
    except PremathError as exc:
        return type(exc), exc.message
    torn = None if selection.torn_tail is None else selection.torn_tail.number
    return rows, selection.total, selection.failed, selection.retry_needed, torn


def _apply(path: Path, operation: tuple) -> None:
    kind, arg = operation[0], operation[1]
    data = path.read_bytes() if path.exists() else b""
    if kind == "append":
        with open(path, "ab") as handle:
            handle.write(b"".join(line + b"\n" for line in arg))
    elif kind == "torn":
        with open(path, "ab") as handle:
            handle.write(arg[: operation[2]])
    elif kind == "unterminated" or kind == "garbage":
        with open(path, "ab") as handle:
            handle.write(arg)
    elif kind == "truncate":
        os.truncate(path, int(len(data) * arg))
    elif kind == "replace":
        fresh = path.with_name("fresh")
        fresh.write_bytes(b"".join(line + b"\n" for line in arg))
        os.replace(fresh, path)
    elif kind == "rewrite":
        with open(path, "r+b") as handle:
            handle.truncate(0)
            handle.write(b"".join(line + b"\n" for line in arg))


@pytest.fixture
def tiny_files_indexed(monkeypatch):
    monkeypatch.setattr(trajectory_index, "INDEX_MIN_BYTES", 0)
    monkeypatch.setattr(trajectory_index, "DEFAULT_KEEP", 3)
    monkeypatch.setattr(trajectory_scan, "PARALLEL_MIN_BYTES", 1 << 40)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(start=LINES, operations=OPERATIONS, queries=st.lists(QUERIES, min_size=1, max_size=3))
def test_the_index_answers_as_a_full_scan(tiny_files_indexed, start, operations, queries):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        path.write_bytes(b"".join(line + b"\n" for line in start))
        for mode, limit in queries:
            assert _indexed(str(path), mode, limit) == _full_scan(str(path), mode, limit)
        for operation in operations:
            _apply(path, operation)
            for mode, limit in queries:
                assert _indexed(str(path), mode, limit) == _full_scan(str(path), mode, limit)


def test_a_repeated_query_reads_only_the_appended_bytes(tiny_files_indexed, tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(row(n, n) + b"\n" for n in range(50)))
    first = query_trajectory(str(path), "latest", 5)
    assert Path(index_path(str(path))).exists()
    scanned: list[int] = []
    real_scan = trajectory_scan._scan

    def counting_scan(path_, lines, first_number, first_offset, *rest):  # type: ignore[no-untyped-def]
        scanned.append(first_offset)
        return real_scan(path_, lines, first_number, first_offset, *rest)

    monkeypatch.setattr(trajectory_scan, "_scan", counting_scan)
    assert query_trajectory(str(path), "latest", 5) == first
    assert scanned == []  # unchanged: nothing read but the index and the five rows
    size = path.stat().st_size
    with open(path, "ab") as handle:
        handle.write(row(99, 3000, "timeout") + b"\n")
    again = query_trajectory(str(path), "latest", 5)
    assert scanned == [size]  # only the appended line
    assert again["totalCount"] == 51
    assert again["items"][0]["stepId"] == "s99"


def test_a_corrupt_or_foreign_index_is_rebuilt(tiny_files_indexed, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(row(n, n, "boom") + b"\n" for n in range(20)))
    expected = query_trajectory(str(path), "failed", 4)
    for garbage in (
        b"",
        b"{",
        b'{"schema": 1}',
        b"[]",
        Path(index_path(str(path))).read_bytes()[:-9],
    ):
        Path(index_path(str(path))).write_bytes(garbage)
        assert query_trajectory(str(path), "failed", 4) == expected
    # An index of another file with the same shape is refused by its identity.
    other = tmp_path / "u.jsonl"
    other.write_bytes(b"".join(row(n, 600 - n) + b"\n" for n in range(20)))
    query_trajectory(str(other), "failed", 4)
    os.replace(index_path(str(other)), index_path(str(path)))
    assert query_trajectory(str(path), "failed", 4) == expected


def test_small_files_get_no_index(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(row(1, 1) + b"\n")
    query_trajectory(str(path), "latest", 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_the_index_name_is_ignored_by_the_state_folder_gitignore():
    import fnmatch

    from premath.store.gitignore import GITIGNORE_BYTES

    name = os.path.basename(index_path(".premath/harness_trajectory.jsonl"))
    patterns = [p for p in GITIGNORE_BYTES.decode().splitlines() if p and not p.startswith("#")]
    assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
