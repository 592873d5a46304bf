"""The query's pass in two processes gives exactly what one pass gives: rows, counts, errors."""

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from premath.errors import PremathError
from premath.record import trajectory_scan
from premath.record.trajectory_scan import select_rows
from tests.support.threads import wait_alone_in_process


def row(step: int, second: int, result_class: str = "ok") -> bytes:
    return (
        b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"s%d","action":"a",'
        b'"resultClass":"%s","finishedAt":"2026-02-22T00:%02d:%02dZ"}'
        % (step, result_class.encode(), second // 60 % 60, second % 60)
    )


LINES = st.lists(
    st.one_of(
        st.builds(
            row,
            st.integers(0, 99),
            st.integers(0, 3599),
            st.sampled_from(["ok", "timeout", "boom"]),
        ),
        st.sampled_from([b"", b"  ", b"garbage", b'{"schema":2}', b"\xff"]),
    ),
    min_size=1,
    max_size=40,
)


def outcome(path: str, mode: str, limit: int) -> object:
    try:
        selection = select_rows(path, mode, limit)  # type: ignore[arg-type]
    except PremathError as exc:
        return type(exc), exc.message
    torn = None if selection.torn_tail is None else selection.torn_tail.number
    return selection.kept, selection.total, selection.failed, selection.retry_needed, torn


@pytest.fixture
def forks(monkeypatch):
    """Force the two-process pass on any file and count the forks this process makes (the scan
    forks only while this process runs its main thread alone: wait for any other to end)."""
    wait_alone_in_process()
    calls = []
    real_fork = os.fork

    def counting_fork() -> int:
        calls.append(1)
        return real_fork()

    monkeypatch.setattr(trajectory_scan.os, "fork", counting_fork)
    return calls


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    LINES,
    st.booleans(),
    st.sampled_from(["latest", "failed", "retry-needed"]),
    st.integers(0, 5),
)
def test_two_processes_agree_with_one_pass(forks, monkeypatch, lines, terminated, mode, limit):
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "t.jsonl")
        Path(path).write_bytes(b"\n".join(lines) + (b"\n" if terminated else b""))
        monkeypatch.setattr(trajectory_scan, "PARALLEL_MIN_BYTES", 1 << 40)
        one_pass = outcome(path, mode, limit)
        monkeypatch.setattr(trajectory_scan, "PARALLEL_MIN_BYTES", 0)
        before = len(forks)
        two_processes = outcome(path, mode, limit)
        assert two_processes == one_pass
        splits = trajectory_scan._halves(path, Path(path).stat().st_size) is not None
        assert len(forks) == before + splits  # the file was split whenever it could be


def test_an_error_in_the_second_half_names_its_line_in_the_file(forks, monkeypatch, tmp_path):
    monkeypatch.setattr(trajectory_scan, "PARALLEL_MIN_BYTES", 0)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join([row(n, n) for n in range(50)] + [b'{"schema":2}', row(9, 9)]))
    with pytest.raises(PremathError) as raised:
        select_rows(str(path), "latest", 3)
    assert raised.value.message.endswith(
        "failed to parse trajectory row: missing field `stepKind` (path=" + f"{path}, line=51)"
    )
    assert forks == [1]


def test_a_child_that_dies_is_replaced_by_a_scan_here(forks, monkeypatch, tmp_path):
    monkeypatch.setattr(trajectory_scan, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(trajectory_scan, "_second_half_payload", lambda *args: os._exit(3))
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(row(n, n, "timeout" if n % 2 else "ok") for n in range(100)))
    selection = select_rows(str(path), "failed", 2)
    assert (selection.total, selection.failed, selection.retry_needed) == (100, 50, 50)
    assert [candidate[1] for candidate in selection.kept["failed"]] == ["s99", "s97"]
    assert forks == [1]
