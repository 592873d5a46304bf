"""A store in our bytes, or in them but for its times, read line by line into the few fields a
choice needs.

A one-row edit chosen from the whole store (claim-next) need not hold 100k decoded rows beside
the file: each line is decoded just long enough to keep the fields the choice reads, the file
itself is never whole in memory, and the rewrite streams the file around the one re-encoded
line. The scan proves what `_parse_split` proves before it keeps a file's rows (every line a
row in stored form, byte for byte as our writers write it, but perhaps for the fraction digits
of its times as Go and hand-written stores hold them, a `\\n` after the last), so the result is
the one the full load gives: the last line of an id wins, and the rewrite puts the times in
stored form (`stored_times_text`) and the rows in id order, as the full load's rewrite does. A
store in id order (ours) is rewritten as a stream of its runs of lines; one that another tool
left out of order (or with an id twice) line by line, in id order. Anything else answers None
and the caller takes the full load.

`slim_store` is the same proof for readers (`issue ready`, `issue list`, `dep diagnostics`):
each row is decoded just long enough to keep the fields the command reads.
"""

from __future__ import annotations

import bisect
import functools
import os
from array import array
from collections.abc import Callable, Iterator

from premath.lean import NamedTuple
from premath.models.issue_row import (
    TEXT_STORED,
    TEXT_UNKNOWN,
    store_row_times,
    stored_times_text,
    text_form,
)
from premath.store import json_codec
from premath.store.forked_check import check_in_parallel, forked_answer
from premath.store.json_codec import decoder_for, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.issue_row import IssueRow

CHUNK_BYTES = 1 << 20
SLIM_FIELDS = ("id", "title", "status", "priority", "assignee", "lease", "dependencies")
"""What the claim rules read of a row that may be claimed (open or in_progress); the title
says whether it is an escalation (D30a-1)."""
_CLAIMABLE_STATUSES = frozenset({"open", "in_progress"})

IssueMap = dict[str, "IssueRow"]


class StoredScan(NamedTuple):
    issues: IssueMap
    """Slim rows by id, in file order: open and in_progress rows keep `SLIM_FIELDS` (lease
    times as the file holds them: the claim rules read any form), every other row is one
    shared `{"status": ...}` per status (all a blocker check reads)."""
    starts: array[int]
    """Byte offset of each line, and the file size last."""
    identity: tuple[int, int, int]
    """(inode, size, mtime ns) of the file scanned."""
    runs: list[tuple[int, int, bool]]
    """The file as read, in runs of whole lines: (start, end, whether its times need
    `stored_times_text`)."""
    ids: list[str]
    """The id of each line, in file order."""
    ascending: bool
    """Ids strictly ascending: the file is already in id order, with no id twice."""


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
    perhaps for its times).

    The proof (`text_form` of each run of lines, a regex over every byte) runs on the other
    core while this one decodes, as `slim_store`'s does: a line is decoded before it is proven,
    so one that is no row answers None too (the full load then words the error)."""
    before = os.fstat(fd)
    issues: IssueMap = {}
    starts: array[int] = array("q")
    spans: list[tuple[int, int]] = []
    shared: dict[str, IssueRow] = {}
    ids: list[str] = []
    ascending = True
    previous = ""
    loads = decoder_for(before.st_size)
    with forked_answer(functools.partial(_run_forms, fd)) as proven:
        for offset, run in _lines(fd):
            if not run.endswith(b"\n"):
                return None
            spans.append((offset, offset + len(run)))
            position = offset
            for line in run.split(b"\n")[:-1]:
                try:
                    row: dict[str, Any] = loads(line)
                    issue_id = row["id"]
                    if issue_id <= previous and starts:
                        ascending = False
                    status = row["status"]
                    if status in _CLAIMABLE_STATUSES:
                        issues[issue_id] = {key: row[key] for key in SLIM_FIELDS if key in row}  # type: ignore[assignment]
                    else:
                        issues[issue_id] = shared.setdefault(status, {"status": status})  # type: ignore[typeddict-item]
                except (json_codec.JSONDecodeError, KeyError, TypeError):
                    return None
                previous = issue_id
                ids.append(issue_id)
                starts.append(position)
                position += len(line) + 1
        forms = proven()
    if forms is None or len(forms) != len(spans):
        forms = _run_forms(fd)  # no child could prove it: prove it here
    if TEXT_UNKNOWN in forms or len(forms) != len(spans):
        return None
    runs = [
        (start, end, form != TEXT_STORED) for (start, end), form in zip(spans, forms, strict=True)
    ]
    after = os.fstat(fd)
    identity = (after.st_ino, after.st_size, after.st_mtime_ns)
    if identity != (before.st_ino, before.st_size, before.st_mtime_ns) or not starts:
        return None
    starts.append(after.st_size)
    return StoredScan(issues, starts, identity, runs, ids, ascending)


def _run_forms(fd: int) -> bytes:
    """`text_form` of each run of lines of the open file, one byte each (an unterminated last
    piece is `TEXT_UNKNOWN`)."""
    return bytes(text_form(run) if run.endswith(b"\n") else TEXT_UNKNOWN for _, run in _lines(fd))


def _position(scan: StoredScan, issue_id: str) -> int:
    """The line of `issue_id` that wins (the last one)."""
    if scan.ascending:
        return bisect.bisect_left(scan.ids, issue_id)
    return len(scan.ids) - 1 - scan.ids[::-1].index(issue_id)


def _line_span(scan: StoredScan, issue_id: str) -> tuple[int, int]:
    position = _position(scan, issue_id)
    return scan.starts[position], scan.starts[position + 1]


def _retimed(scan: StoredScan, start: int) -> bool:
    """Whether the run holding the line at `start` needs `stored_times_text`."""
    index = bisect.bisect_right(scan.runs, (start, 1 << 62, True)) - 1
    return scan.runs[index][2]


def stored_row(fd: int, scan: StoredScan, issue_id: str) -> IssueRow:
    """The full row of `issue_id`, decoded from its line, its times in stored form."""
    start, end = _line_span(scan, issue_id)
    row: IssueRow = loads(os.pread(fd, end - start, start))
    if _retimed(scan, start):
        store_row_times([row])
    return row


def rewrite_line(path: str, fd: int, scan: StoredScan, issue_id: str, line: bytes) -> None:
    """Replace the store atomically: the file's lines, times in stored form, with the line of
    `issue_id` swapped for `line`, streamed from `fd` (a run of lines at a time)."""
    from premath.store.atomic import write_atomic_chunks

    start, end = _line_span(scan, issue_id)

    def chunks() -> Iterator[bytes]:
        if not scan.ascending:
            yield from _in_id_order(fd, scan, issue_id, line)
            return
        for run_start, run_end, retimed in scan.runs:
            if run_start <= start < run_end:
                yield from _copied(fd, run_start, start, retimed)
                yield line
                yield from _copied(fd, end, run_end, retimed)
            else:
                yield from _copied(fd, run_start, run_end, retimed)

    write_atomic_chunks(path, chunks())


_LINES_PER_WRITE = 1024


def _in_id_order(fd: int, scan: StoredScan, issue_id: str, line: bytes) -> Iterator[bytes]:
    """The file's winning lines in id order (a store another tool left out of order), times in
    stored form, the line of `issue_id` swapped for `line`; read a line at a time, written
    `_LINES_PER_WRITE` lines at a time (one write per line was a sixth of the rewrite)."""
    last = dict(zip(scan.ids, range(len(scan.ids)), strict=True))  # the last line of an id wins
    starts = scan.starts
    retimed = any(run_retimed for _, _, run_retimed in scan.runs)
    batch: list[bytes] = []
    for each in sorted(last):
        if each == issue_id:
            batch.append(line)
        else:
            position = last[each]
            start = starts[position]
            text = os.pread(fd, starts[position + 1] - start, start)
            batch.append(stored_times_text(text) if retimed and _retimed(scan, start) else text)
        if len(batch) == _LINES_PER_WRITE:
            yield b"".join(batch)
            batch.clear()
    yield b"".join(batch)
    if os.fstat(fd).st_size != starts[-1]:
        raise OSError("issues file changed while it was rewritten")


def _form_of_file(fd: int) -> int:
    """`text_form` of the whole open file, a run of lines at a time (its least form)."""
    return min(_run_forms(fd), default=TEXT_STORED)


_EDGES_KEY = b'"dependencies":'
_STATUS_KEY = b',"status":"'


def _id_and_status(line: bytes) -> tuple[str, str] | None:
    """The id and status of a stored line, read without decoding it; None when either holds
    an escape (or the line is not as expected): the caller decodes it then.

    In a line in stored form (proven by `text_form`) the fields come in the writer's order:
    the id first, then only strings up to the status. An unescaped `"` cannot occur inside a
    JSON string, so the first `,"status":"` is the row's own status key."""
    if not line.startswith(b'{"id":"'):
        return None
    id_end = line.find(b'"', 7)
    at = line.find(_STATUS_KEY, id_end)
    status_end = line.find(b'"', at + 11)
    if id_end < 0 or at < 0 or status_end < 0:
        return None
    issue_id, status = line[7:id_end], line[at + 11 : status_end]
    if b"\\" in issue_id or b"\\" in status:
        return None
    try:
        return issue_id.decode("utf-8"), status.decode("utf-8")
    except UnicodeDecodeError:
        return None


def slim_store(
    fd: int,
    slim: Callable[[dict[str, Any]], IssueRow | None],
    edgeless: Callable[[str], IssueRow | None] | None = None,
) -> IssueMap | None:
    """The store of the open file `fd` as `slim` keeps each row (None: the row is left out),
    the last line of an id winning; None when the file is not provably in our bytes (but
    perhaps for its times): the caller then takes the full load.

    `edgeless(status)`, when given, keeps a row that has no edges from its status alone, and
    such a line is not decoded at all (`_id_and_status`). The proof (a regex over every byte)
    runs on the other core while this one decodes, as the full load's does (`forked_check`)."""
    before = os.fstat(fd)
    issues: IssueMap = {}
    loads = decoder_for(before.st_size)
    seen = 0
    with check_in_parallel(functools.partial(_form_of_file, fd)) as form:
        for _, run in _lines(fd):
            if not run.endswith(b"\n"):
                return None
            for line in run.split(b"\n")[:-1]:
                head = None if edgeless is None or _EDGES_KEY in line else _id_and_status(line)
                if head is not None and edgeless is not None:
                    seen += 1
                    kept = edgeless(head[1])
                    if kept is None:
                        issues.pop(head[0], None)
                    else:
                        issues[head[0]] = kept
                    continue
                try:
                    row: dict[str, Any] = loads(line)
                    issue_id = row["id"]
                    kept = slim(row)
                except (json_codec.JSONDecodeError, KeyError, TypeError):
                    # Not a row (the proof beside may not have answered yet): the full load
                    # words the error, in the reference's words.
                    return None
                seen += 1
                if kept is None:
                    issues.pop(issue_id, None)  # an earlier line of the id no longer wins
                else:
                    issues[issue_id] = kept
        if form() == TEXT_UNKNOWN:
            return None
    after = os.fstat(fd)
    if (after.st_ino, after.st_size, after.st_mtime_ns) != (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    ) or not seen:
        return None
    return issues


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
