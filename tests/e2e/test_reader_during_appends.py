"""Readers racing an appender: a line still landing is the end of the file, never an error.

A buffered read can stop inside a line that an append is writing; the next read returns the
rest of it. Taking that rest for a new line made readers fail on a healthy file.
"""

import multiprocessing
import time
from datetime import UTC, datetime

from premath.record.kpi import load_kpi_rows
from premath.record.trajectory import append_step, query_trajectory
from premath.store.jsonl import iter_lines

FORK = multiprocessing.get_context("fork")
READS = 20
ROWS = 300


def _append_wide_rows(path: str, stop) -> None:
    n = 0
    while not stop.is_set():
        append_step(
            path, step_id=f"w.{n}", action="worker.loop", result_class="completed",
            witness_refs=["r" * (1000 + n % 7000)], finished_at="2026-02-22T00:00:00Z",
            now=datetime(2026, 3, 1, tzinfo=UTC), lock_timeout=30,
        )  # fmt: skip
        n += 1


def test_readers_never_fail_while_rows_land(tmp_path):
    path = str(tmp_path / "t.jsonl")
    stop = FORK.Event()
    writer = FORK.Process(target=_append_wide_rows, args=(path, stop))
    writer.start()
    try:
        # counts of reads and rows, not a time window: a loaded machine may give this process
        # or the writer little time
        deadline, reads, seen = time.monotonic() + 120, 0, 0  # a hang guard
        while reads < READS or seen < ROWS:
            assert time.monotonic() < deadline, f"{reads} reads ({READS} wanted), {seen} rows"
            if (tmp_path / "t.jsonl").exists():
                projection = query_trajectory(path, "latest", 1)
                seen = projection["totalCount"]
                assert all(line.text.startswith(b"{") for line in iter_lines(path))
                assert all(row.step_id.startswith("w.") for row in load_kpi_rows(path))
                reads += 1
    finally:
        stop.set()
        writer.join(30)
    assert writer.exitcode == 0
    assert query_trajectory(path, "latest", 1)["totalCount"] == sum(1 for _ in iter_lines(path))


ROW = (
    b'{"schema":1,"stepKind":"premath.harness.step.v1","stepId":"%s","action":"a",'
    b'"resultClass":"ok","finishedAt":"2026-02-22T00:00:00Z"}'
)


def _read_while_the_rest_lands(path, rest: bytes):
    """Lines of `path` as a buffered reader gives them, while the rest of its last line lands
    just after the reader found that line unterminated (the moment the race needs)."""
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                with open(path, "ab") as appender:
                    appender.write(rest)
            yield raw


def test_iter_lines_stops_at_the_line_still_landing(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(ROW % b"s1" + b"\n" + (ROW % b"s2")[:40])
    lines = iter_lines(path)
    assert next(lines).terminated
    assert not next(lines).terminated
    with open(path, "ab") as appender:
        appender.write((ROW % b"s2")[40:] + b"\n")
    assert list(lines) == []


def test_the_query_scan_stops_at_the_line_still_landing(tmp_path):
    from premath.record.trajectory_scan import _scan

    path = tmp_path / "t.jsonl"
    path.write_bytes(ROW % b"s1" + b"\n" + (ROW % b"s2")[:40])
    lines = _read_while_the_rest_lands(path, (ROW % b"s2")[40:] + b"\n")
    selection = _scan(str(path), lines, 1, 0, {"latest": 5}, path.stat().st_size)
    assert selection.total == 1
    assert query_trajectory(str(path), "latest", 5)["totalCount"] == 2
