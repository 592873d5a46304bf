"""A store already in our bytes, read line by line into the few fields a choice needs.

A one-row edit chosen from the whole store (claim-next) need not hold 100k decoded rows beside
the file: each line is decoded just long enough to keep the fields the choice reads, the file
itself is never whole in memory, and the rewrite streams the untouched byte ranges around the
one re-encoded line. The scan proves what `_parse_split` proves before it keeps a file's lines
(every line a row in stored form, byte for byte as our writers write it, ids strictly
ascending, a `\\n` after the last), so the result is the one the full load gives; anything
else answers None and the caller takes the full load.
"""

import os
from array import array
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from premath.models.issue_row import IssueRow, text_is_stored
from premath.store.atomic import write_atomic_chunks

CHUNK_BYTES = 1 << 20
SLIM_FIELDS = ("id", "status", "priority", "assignee", "lease", "dependencies")
"""What the claim rules read of a row that may be claimed (open or in_progress)."""
_CLAIMABLE_STATUSES = frozenset({"open", "in_progress"})

IssueMap = dict[str, IssueRow]


class StoredScan(NamedTuple):
    issues: IssueMap
    """Slim rows by id, in file order: open and in_progress rows keep `SLIM_FIELDS`, every
    other row is one shared `{"status": ...}` per status (all a blocker check reads)."""
    starts: "array[int]"
    """Byte offset of each line, and the file size last."""
    identity: tuple[int, int, int]
    """(inode, size, mtime ns) of the file scanned."""


def _lines(fd: int) -> Iterator[tuple[int, bytes]]:
    """Runs of whole lines (offset, bytes ending in `\\n`); a last unterminated piece too."""
    offset = 0
    pending = b""
    while True:
        block = os.read(fd, CHUNK_BYTES)
        if not block:
            break
        data = pending + block
        end = data.rfind(b"\n") + 1
        if end:
            yield offset, data[:end]
            offset += end
        pending = data[end:]
    if pending:
        yield offset, pending


def scan_stored(fd: int) -> StoredScan | None:
    """The slim store of the open file `fd`, or None when it is not provably in our bytes."""
    before = os.fstat(fd)
    issues: IssueMap = {}
    starts: array[int] = array("q")
    shared: dict[str, IssueRow] = {}
    previous = ""
    loads = orjson.loads
    for offset, run in _lines(fd):
        if not run.endswith(b"\n") or not text_is_stored(run):
            return None
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
    return StoredScan(issues, starts, identity)


def _line_span(scan: StoredScan, issue_id: str) -> tuple[int, int]:
    position = list(scan.issues).index(issue_id)
    return scan.starts[position], scan.starts[position + 1]


def stored_row(fd: int, scan: StoredScan, issue_id: str) -> IssueRow:
    """The full row of `issue_id`, decoded from its line."""
    start, end = _line_span(scan, issue_id)
    row: IssueRow = orjson.loads(os.pread(fd, end - start, start))
    return row


def rewrite_line(path: str, fd: int, scan: StoredScan, issue_id: str, line: bytes) -> None:
    """Replace the store atomically: the file's bytes with the line of `issue_id` swapped for
    `line`, streamed from `fd` (a chunk at a time)."""
    start, end = _line_span(scan, issue_id)

    def chunks() -> Iterator[bytes]:
        yield from _copied(fd, 0, start)
        yield line
        yield from _copied(fd, end, scan.starts[-1])

    write_atomic_chunks(path, chunks())


def _copied(fd: int, start: int, end: int) -> Iterator[bytes]:
    while start < end:
        block = os.pread(fd, min(CHUNK_BYTES, end - start), start)
        if not block:
            raise OSError("issues file shrank while it was rewritten")
        yield block
        start += len(block)
