"""A side index for `harness-trajectory query` (divergence D26-3): a repeated query reads only
what was appended since the last one.

The index is a cache, never an authority. It sits beside the trajectory as
`.<name>.tmp.query-index` (a name the `.premath/.gitignore` premath writes, and most
others, already ignore: `.*.tmp.*`) and records, for the file's settled prefix (its terminated
lines, up to byte `end`): the counts, the best `limits[mode]` candidates of every mode (sort key
and line offsets, not rows), and what identifies the prefix: the file's device and inode, `end`,
and checksums of its first and last 64 KiB. It is used only when all of these still match the
file; otherwise (missing, stale, corrupt, truncated, replaced) the file is scanned in full and
the index written anew, atomically. Rows returned are read again by offset and checked against
their candidate, so an index that does not match the file can never change an answer: the
query then scans the file in full.

Small files (under `INDEX_MIN_BYTES`, a few thousand rows) are scanned every time and get no
index: a scan costs less than writing one. A `--limit` above `MAX_KEEP` is not indexed either.
"""

from __future__ import annotations

import contextlib
import os
import stat
import zlib

from premath.models.trajectory import step_order_fields
from premath.record.trajectory_scan import (
    MODES,
    Candidate,
    Limits,
    Selection,
    read_rows,
    scan_file,
    scan_from,
)
from premath.store import json_codec
from premath.store.files import read_capped
from premath.store.json_codec import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.models.trajectory import QueryMode

INDEX_MIN_BYTES = 1 << 20
DEFAULT_KEEP = 100
MAX_KEEP = 10_000
WINDOW = 1 << 16
SCHEMA = "premath.harness.trajectory-query-index.v1"


def index_path(path: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}.tmp.query-index")


def _checksums(fd: int, end: int) -> list[int]:
    """crc32 of the first and the last `WINDOW` bytes before `end`."""
    head = os.pread(fd, min(WINDOW, end), 0)
    tail_start = max(0, end - WINDOW)
    tail = (
        head[tail_start:] if tail_start < len(head) else os.pread(fd, end - tail_start, tail_start)
    )
    return [zlib.crc32(head), zlib.crc32(tail)]


def _identity(status: os.stat_result) -> list[int]:
    return [status.st_dev, status.st_ino]


def _candidates(value: Any, end: int) -> list[Candidate] | None:
    if not isinstance(value, list):
        return None
    out: list[Candidate] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 6):
            return None
        key, step_id, action, number, start, stop = item
        if not (
            isinstance(key, str)
            and isinstance(step_id, str)
            and isinstance(action, str)
            and all(type(v) is int for v in (number, start, stop))
            and 0 <= start < stop <= end
        ):
            return None
        try:
            out.append((int(key), step_id, action, number, start, stop))
        except ValueError:
            return None
    return out if out == sorted(out) else None


def _load(path: str, fd: int, status: os.stat_result) -> tuple[Selection, Limits] | None:
    """The indexed prefix, if the index exists and still describes this file."""
    try:
        with open(index_path(path), "rb") as handle:
            document = loads(read_capped(handle, MAX_KEEP * 3 * 1024))
    except (OSError, json_codec.JSONDecodeError):
        return None
    try:
        end, lines = document["end"], document["lines"]
        valid = (
            document["schema"] == SCHEMA
            and document["file"] == _identity(status)
            and type(end) is int
            and type(lines) is int
            and 0 <= lines <= end <= status.st_size
            and document["checksums"] == _checksums(fd, end)
        )
        counts = [document[name] for name in ("total", "failed", "retryNeeded")]
        limits_value = document["limits"]
        kept_value = document["kept"]
    except (KeyError, TypeError, OSError):
        return None
    if not valid or not all(type(count) is int and count >= 0 for count in counts):
        return None
    if not isinstance(limits_value, dict) or set(limits_value) != set(MODES):
        return None
    limits: Limits = {}
    kept: dict[str, list[Candidate]] = {}
    for mode in MODES:
        limit = limits_value[mode]
        found = _candidates(kept_value.get(mode) if isinstance(kept_value, dict) else None, end)
        if type(limit) is not int or found is None or len(found) > limit:
            return None
        limits[mode], kept[mode] = limit, found
    total, failed, retry_needed = counts
    return Selection(kept, total, failed, retry_needed, lines, end), limits


def _save(path: str, fd: int, status: os.stat_result, selection: Selection, limits: Limits) -> None:
    """Write the index of `selection` (the settled prefix) atomically; a folder we cannot
    write to simply gets no index."""
    document = {
        "schema": SCHEMA,
        "file": _identity(status),
        "end": selection.end,
        "lines": selection.lines,
        "checksums": _checksums(fd, selection.end),
        "total": selection.total,
        "failed": selection.failed,
        "retryNeeded": selection.retry_needed,
        "limits": limits,
        "kept": {
            mode: [[str(key), *rest] for key, *rest in selection.kept[mode]] for mode in MODES
        },
    }
    from premath.store.atomic import write_atomic

    with contextlib.suppress(OSError):
        write_atomic(index_path(path), dumps(document))


def _indexed(path: str, mode: QueryMode, limit: int) -> Selection | None:
    """The selection through the index (building or refreshing it); None: not indexed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size < INDEX_MIN_BYTES:
            return None
        loaded = _load(path, fd, status)
        if loaded is not None and loaded[1][mode] >= limit:
            indexed, limits = loaded
            if indexed.end == status.st_size:
                return indexed
            newer = scan_from(path, indexed.end, indexed.lines, limits, status.st_size)
            selection = indexed.merged(newer, limits)
        else:
            keep = max(limit, DEFAULT_KEEP)
            limits = {m: max(keep, loaded[1][m]) if loaded else keep for m in MODES}
            selection = scan_file(path, limits)
        if os.fstat(fd).st_ino == status.st_ino and selection.end <= os.fstat(fd).st_size:
            _save(path, fd, status, selection, limits)
        return selection
    finally:
        os.close(fd)


def _rows_match(rows: list[Any], candidates: list[Candidate]) -> bool:
    try:
        return all(
            (-order[0], order[1], order[2]) == candidate[:3]
            for order, candidate in zip(map(step_order_fields, rows), candidates, strict=True)
        )
    except ValueError:
        return False


def query_selection(path: str, mode: QueryMode, limit: int) -> tuple[Selection, list[Any]]:
    """The query's counts and its top `limit` rows of `mode` (decoded, in order)."""
    limits: Limits = {mode: limit}
    selection = _indexed(path, mode, limit) if limit <= MAX_KEEP else None
    if selection is not None:
        answer = selection.with_tail(limits)
        rows = read_rows(path, answer.kept[mode])
        if _rows_match(rows, answer.kept[mode]):
            return answer, rows
        with contextlib.suppress(OSError):
            os.unlink(index_path(path))  # it did not describe the file: never trust it again
    answer = scan_file(path, limits).with_tail(limits)
    rows = read_rows(path, answer.kept[mode])
    if not _rows_match(rows, answer.kept[mode]):  # replaced while we read it: read it again
        answer = scan_file(path, limits).with_tail(limits)
        rows = read_rows(path, answer.kept[mode])
    return answer, rows
