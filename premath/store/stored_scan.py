"""A store in our bytes, or in them but for its times, read line by line into the few fields a
choice needs.

A one-row edit chosen from the whole store (claim-next) need not hold 100k decoded rows beside
the file: each line is decoded just long enough to keep the fields the choice reads, the file
itself is never whole in memory, and the rewrite streams the file around the one re-encoded
line. The scan proves what `_parse_split` proves before it keeps a file's rows (every line a
row in stored form, byte for byte as our writers write it, but perhaps for the fraction digits
of its times as Go and hand-written stores hold them, ids strictly ascending, a `\\n` after the
last), so the result is the one the full load gives: the rewrite puts those times in stored
form (`stored_times_text`), as the full load's rewrite does. Anything else answers None and
the caller takes the full load.
"""

import os
from array import array
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from premath.models.issue_row import (
    TEXT_STORED,
    TEXT_UNKNOWN,
    IssueRow,
    store_row_times,
    stored_times_text,
    text_form,
)

CHUNK_BYTES = 1 << 20
SLIM_FIELDS = ("id", "status", "priority", "assignee", "lease", "dependencies")
"""What the claim rules read of a row that may be claimed (open or in_progress)."""
_CLAIMABLE_STATUSES = frozenset({"open", "in_progress"})

IssueMap = dict[str, IssueRow]


class StoredScan(NamedTuple):
    issues: IssueMap
    """Slim rows by id, in file order: open and in_progress rows keep `SLIM_FIELDS` (lease
    times as the file holds them: the claim rules read any form), every other row is one
    shared `{"status": ...}` per status (all a blocker check reads)."""
    starts: "array[int]"
    """Byte offset of each line, and the file size last."""
    identity: tuple[int, int, int]
    """(inode, size, mtime ns) of the file scanned."""
    runs: list[tuple[int, int, bool]]
    """The file as read, in runs of whole lines: (start, end, whether its times need
    `stored_times_text`)."""


def _lines(fd: int, start: int = 0, end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Runs of whole lines (offset, bytes ending in `\\n`) from `start` to `end` (the end of
    the file when None); a last unterminated piece too."""
    offset = start
    pending = b""
    while end is None or offset + len(pending) < end:
        size = CHUNK_BYTES if end is None else min(CHUNK_BYTES, end - offset - len(pending))
        block = os.pread(fd, size, offset + len(pending))
        if not block:
            break
        data = pending + block
        cut = data.rfind(b"\n") + 1
        if cut:
            yield offset, data[:cut]
            offset += cut
        pending = data[cut:]
    if pending:
        yield offset, pending


def scan_stored(fd: int) -> StoredScan | None:
    """The slim store of the open file `fd`, or None when it is not provably in our bytes (but
    perhaps for its times)."""
    before = os.fstat(fd)
    issues: IssueMap = {}
    starts: array[int] = array("q")
    runs: list[tuple[int, int, bool]] = []
    shared: dict[str, IssueRow] = {}
    previous = ""
    loads = orjson.loads
    for offset, run in _lines(fd):
        form = text_form(run) if run.endswith(b"\n") else TEXT_UNKNOWN
        if form == TEXT_UNKNOWN:
            return None
        retimed = form != TEXT_STORED
        runs.append((offset, offset + len(run), retimed))
        position = offset
        for line in run.split(b"\n")[:-1]:
            try:
                row: dict[str, Any] = loads(line)
            except orjson.JSONDecodeError:
                return None
            issue_id = row["id"]
            if issue_id <= previous and starts:
                return None
            previous = issue_id
            starts.append(position)
            position += len(line) + 1
            status = row["status"]
            if status in _CLAIMABLE_STATUSES:
                issues[issue_id] = {key: row[key] for key in SLIM_FIELDS if key in row}  # type: ignore[assignment]
            else:
                issues[issue_id] = shared.setdefault(status, {"status": status})  # type: ignore[typeddict-item]
    after = os.fstat(fd)
    identity = (after.st_ino, after.st_size, after.st_mtime_ns)
    if identity != (before.st_ino, before.st_size, before.st_mtime_ns) or not starts:
        return None
    starts.append(after.st_size)
    return StoredScan(issues, starts, identity, runs)


def _line_span(scan: StoredScan, issue_id: str) -> tuple[int, int]:
    position = list(scan.issues).index(issue_id)
    return scan.starts[position], scan.starts[position + 1]


def stored_row(fd: int, scan: StoredScan, issue_id: str) -> IssueRow:
    """The full row of `issue_id`, decoded from its line, its times in stored form."""
    start, end = _line_span(scan, issue_id)
    row: IssueRow = orjson.loads(os.pread(fd, end - start, start))
    if any(retimed for run_start, run_end, retimed in scan.runs if run_start <= start < run_end):
        store_row_times([row])
    return row


def rewrite_line(path: str, fd: int, scan: StoredScan, issue_id: str, line: bytes) -> None:
    """Replace the store atomically: the file's lines, times in stored form, with the line of
    `issue_id` swapped for `line`, streamed from `fd` (a run of lines at a time)."""
    from premath.store.atomic import write_atomic_chunks

    start, end = _line_span(scan, issue_id)

    def chunks() -> Iterator[bytes]:
        for run_start, run_end, retimed in scan.runs:
            if run_start <= start < run_end:
                yield from _copied(fd, run_start, start, retimed)
                yield line
                yield from _copied(fd, end, run_end, retimed)
            else:
                yield from _copied(fd, run_start, run_end, retimed)

    write_atomic_chunks(path, chunks())


def _copied(fd: int, start: int, end: int, retimed: bool) -> Iterator[bytes]:
    """The file's whole lines from `start` to `end`, times in stored form when `retimed`."""
    copied = start
    for _, run in _lines(fd, start, end):
        if not run.endswith(b"\n"):
            break
        copied += len(run)
        yield stored_times_text(run) if retimed else run
    if copied != end:
        raise OSError("issues file changed while it was rewritten")
