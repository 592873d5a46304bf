"""The one pass `harness-trajectory query` makes over a trajectory file (divergence D2-2).

Every row is validated and counted; only the best `limit` candidates of each mode asked for are
kept, in a buffer sorted and cut back whenever it fills, so memory follows `limit`, not the
file. The hot loop is one `loads` (orjson's on a big file) and `step_order_fields` per raw
line; a candidate is the row's sort key and where its line lies, and full rows are read again
and built by the caller, only for the rows it returns. The result covers the file's terminated
lines, with a last unterminated line apart, so `record/trajectory_index.py` can keep it and
later scan only what was appended.

A large file on a machine with a second core is split at a line boundary near its middle, and a
forked child scans the second half while this process scans the first: the halves meet in
`Selection.merged`, with the same result, the same first error and the same torn-tail report as
one pass (a property test compares them). Fork only from a single-threaded process; if the child
cannot run or dies, this process scans the second half itself.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from itertools import islice

from premath.errors import ArtifactInvalid, IoFailure, PremathError
from premath.lean import NamedTuple
from premath.models.serde import SchemaViolation
from premath.models.trajectory import RESULT_FLAGS_CACHE, result_flags, step_order_fields
from premath.store import json_codec
from premath.store.documents import os_error_text
from premath.store.files import open_regular
from premath.store.forked_check import forked_answer, may_fork
from premath.store.json_codec import decoder_for, loads
from premath.store.jsonl import JsonlLine
from premath.text import rust_trim

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from premath.models.trajectory import QueryMode

Candidate = tuple[int, str, str, int, int, int]
"""(negated instant, stepId, action, line number, start and end byte offsets of the line),
ascending in projection order: the row itself is read again, by offset, only if returned."""
MODES: Final = ("latest", "failed", "retry-needed")
Limits = dict[str, int]
"""How many candidates to keep, by mode (a mode left out is not kept at all)."""

# The buffer is sorted and cut back to `limit` whenever it holds this many more rows: cheaper
# than a heap operation per row in Python, and rows that cannot beat the last kept row are not
# even buffered. Memory stays at `limit + BUFFER_SLACK` candidates.
BUFFER_SLACK: Final = 1024
# Below this size (~30k rows of ~250 bytes, a tenth of a second) one pass is as fast as two.
PARALLEL_MIN_BYTES = 8 << 20
_COUNT_CHUNK = 1 << 20
_NEVER_CUT: Final = 1 << 200  # above every negated instant key


class TailRow(NamedTuple):
    """A last line without `\n` that holds a row: counted by this query, but not part of the
    file's settled prefix (an index must not cover it: its append may still be landing)."""

    candidate: Candidate
    failed: bool
    retry_needed: bool


class Selection(NamedTuple):
    """What a pass over (part of) the file gives: kept candidates by mode, and the counts, of
    its terminated lines; a last unterminated line apart (`tail`, `torn_tail`)."""

    kept: dict[str, list[Candidate]]
    total: int = 0
    failed: int = 0
    retry_needed: int = 0
    lines: int = 0
    """Terminated lines read (blank ones too): the next line's number, less one."""
    end: int = 0
    """Byte offset just after the last terminated line read."""
    tail: TailRow | None = None
    torn_tail: JsonlLine | None = None
    """A last line cut short by a crash: skipped, for the caller to report."""

    def merged(self, later: Selection, limits: Limits) -> Selection:
        """`later` (the lines after ours) appended to this selection."""
        kept = {
            mode: sorted(self.kept.get(mode, []) + later.kept.get(mode, []))[:limit]
            for mode, limit in limits.items()
        }
        return Selection(
            kept,
            self.total + later.total,
            self.failed + later.failed,
            self.retry_needed + later.retry_needed,
            later.lines or self.lines,
            later.end or self.end,
            later.tail,
            later.torn_tail or self.torn_tail,
        )

    def with_tail(self, limits: Limits) -> Selection:
        """The selection a query answers with: the unterminated last row counted and kept, and
        each mode's candidates cut to its limit."""
        tail = self.tail
        wanted = {
            "latest": tail is not None,
            "failed": tail is not None and tail.failed,
            "retry-needed": tail is not None and tail.retry_needed,
        }
        kept = {
            mode: sorted([*self.kept.get(mode, []), *([tail.candidate] if wanted[mode] else [])])[
                :limit
            ]
            if tail is not None
            else self.kept.get(mode, [])[:limit]
            for mode, limit in limits.items()
        }
        return Selection(
            kept,
            self.total + (tail is not None),
            self.failed + wanted["failed"],
            self.retry_needed + wanted["retry-needed"],
            self.lines,
            self.end,
            None,
            self.torn_tail,
        )


def _read_error(path: str, detail: str) -> ArtifactInvalid:
    return ArtifactInvalid(f"failed to read harness trajectory rows from {path}: {detail}")


def _io_error(path: str, exc: OSError) -> IoFailure:
    detail = f"failed to read/write trajectory: {os_error_text(exc)}"
    return IoFailure(f"failed to read harness trajectory rows from {path}: {detail}")


def _row_error(path: str, number: int, exc: ValueError) -> ArtifactInvalid:
    what = "failed to parse" if isinstance(exc, SchemaViolation) else "invalid"
    return _read_error(path, f"{what} trajectory row: {exc} (path={path}, line={number})")


def _jsonl_line(number: int, raw: bytes) -> JsonlLine:
    """The line as `iter_lines` gives it: without its `\\n` and a `\\r` before it."""
    terminated = raw.endswith(b"\n")
    text = raw[:-1] if terminated else raw
    return JsonlLine(number, text[:-1] if text.endswith(b"\r") else text, terminated)


_SKIP: Final = object()
"""`_decode`'s answer for a line that holds no row (blank after trimming)."""


def _decode(path: str, line: JsonlLine) -> Any:
    """The JSON value of a line refused as it stands; `_SKIP` for a blank line."""
    try:
        text = line.text.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    error: json_codec.JSONDecodeError | None = None
    if text is not None:
        # The reference trims with Unicode White_Space, which JSON whitespace does not cover.
        trimmed = rust_trim(text)
        if not trimmed:
            return _SKIP
        try:
            return loads(trimmed)
        except json_codec.JSONDecodeError as exc:
            error = exc
    where = f"(path={path}, line={line.number})"
    if error is None:
        detail = f"failed to read/write trajectory: stream did not contain valid UTF-8 {where}"
    else:
        detail = (
            f"failed to parse trajectory row: {error.msg} at line 1 column {error.colno} {where}"
        )
    raise _read_error(path, detail)


def _scan(
    path: str,
    lines: Iterable[bytes],
    first_number: int,
    first_offset: int,
    limits: Limits,
    size: int,
) -> Selection:
    """Validate and count the rows of `lines` (starting at line `first_number`, byte
    `first_offset`, about `size` bytes); keep the first `limits[mode]` candidates of each mode
    asked for."""
    loads, order_fields = decoder_for(size), step_order_fields
    cached_flags, flags = RESULT_FLAGS_CACHE.get, result_flags
    limit_all, limit_failed, limit_retry = (limits.get(mode, 0) for mode in MODES)
    all_kept: list[Candidate] = []
    failed_kept: list[Candidate] = []
    retry_kept: list[Candidate] = []
    # negated instant of the last row kept by the latest cut, per mode
    worst_all = worst_failed = worst_retry = _NEVER_CUT
    total = failed = retry_needed = 0
    offset = first_offset
    number = first_number - 1
    tail = torn_tail = None
    try:
        for number, raw in enumerate(lines, start=first_number):
            start = offset
            offset += len(raw)
            try:
                row = loads(raw)
            except json_codec.JSONDecodeError:
                line = _jsonl_line(number, raw)
                try:
                    row = _decode(path, line)
                except ArtifactInvalid:
                    if line.terminated:
                        raise
                    # The end of the file as we found it: an append may be landing right now,
                    # and what a later read returns would be its rest, not a new line.
                    torn_tail = line
                    offset = start
                    number -= 1
                    break
                if row is _SKIP:
                    if not line.terminated:  # a blank start of a line still being written
                        offset = start
                        number -= 1
                        break
                    continue
            try:
                key, step_id, action, result_class = order_fields(row)
            except ValueError as exc:
                raise _row_error(path, number, exc) from None
            is_failed, is_retry = cached_flags(result_class) or flags(result_class)
            key = -key
            candidate = (key, step_id, action, number, start, offset)
            if not raw.endswith(b"\n"):
                tail = TailRow(candidate, is_failed, is_retry)
                offset = start
                number -= 1
                break
            total += 1
            failed += is_failed
            retry_needed += is_retry
            if limit_all and key <= worst_all:
                all_kept.append(candidate)
                if len(all_kept) >= limit_all + BUFFER_SLACK:
                    all_kept.sort()
                    del all_kept[limit_all:]
                    worst_all = all_kept[-1][0]
            if is_failed and limit_failed and key <= worst_failed:
                failed_kept.append(candidate)
                if len(failed_kept) >= limit_failed + BUFFER_SLACK:
                    failed_kept.sort()
                    del failed_kept[limit_failed:]
                    worst_failed = failed_kept[-1][0]
            if is_retry and limit_retry and key <= worst_retry:
                retry_kept.append(candidate)
                if len(retry_kept) >= limit_retry + BUFFER_SLACK:
                    retry_kept.sort()
                    del retry_kept[limit_retry:]
                    worst_retry = retry_kept[-1][0]
    except OSError as exc:
        raise _io_error(path, exc) from None
    kept = {}
    for mode, buffer in zip(MODES, (all_kept, failed_kept, retry_kept), strict=True):
        if mode in limits:
            buffer.sort()
            del buffer[limits[mode] :]
            kept[mode] = buffer
    return Selection(kept, total, failed, retry_needed, number, offset, tail, torn_tail)


def _size_if_present(path: str) -> int | None:
    """The file's size; None if there is nothing at `path` (the reference's `exists()`)."""
    try:
        status = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _io_error(path, exc) from None
    if not stat.S_ISREG(status.st_mode):
        raise _read_error(path, f"invalid trajectory row: trajectory path is not a file: {path}")
    return status.st_size


def select_rows(path: str, mode: QueryMode, limit: int) -> Selection:
    """Validate and count every row of the file; keep the first `limit` rows `mode` selects
    (a last unterminated row included)."""
    limits: Limits = {mode: limit}
    return scan_file(path, limits).with_tail(limits)


def scan_file(path: str, limits: Limits) -> Selection:
    """One pass over the whole file, in two processes when it is large and a core is free."""
    size = _size_if_present(path)
    if size is None:
        return Selection(kept={mode: [] for mode in limits})
    if size >= PARALLEL_MIN_BYTES and may_fork():
        halves = _halves(path, size)
        if halves is not None:
            return _select_in_two(path, limits, size, *halves)
    return _scan_whole(path, limits, size)


def scan_from(path: str, offset: int, lines: int, limits: Limits, size: int) -> Selection:
    """The lines after the first `lines` lines (`offset` bytes) of the `size`-byte file, one
    pass."""
    try:
        with open_regular(path) as handle:
            handle.seek(offset)
            return _scan(path, handle, lines + 1, offset, limits, size - offset)
    except OSError as exc:
        raise _io_error(path, exc) from None


def _halves(path: str, size: int) -> tuple[int, int] | None:
    """(offset of the first line after the middle, number of lines before it), or None."""
    try:
        with open(path, "rb") as handle:
            handle.seek(size // 2)
            handle.readline()
            split = handle.tell()
            if split >= size:
                return None
            handle.seek(0)
            lines_before, remaining = 0, split
            while remaining:
                chunk = handle.read(min(_COUNT_CHUNK, remaining))
                if not chunk:
                    return None
                lines_before += chunk.count(b"\n")
                remaining -= len(chunk)
    except OSError as exc:
        raise _io_error(path, exc) from None
    return split, lines_before


def _scan_second_half(
    path: str, limits: Limits, size: int, split: int, lines_before: int
) -> Selection:
    try:
        with open(path, "rb") as handle:
            handle.seek(split)
            return _scan(path, handle, lines_before + 1, split, limits, size - split)
    except OSError as exc:
        raise _io_error(path, exc) from None


def _second_half_payload(
    path: str, limits: Limits, size: int, split: int, lines_before: int
) -> bytes:
    """The forked child's answer: the second half's Selection, or our error, pickled."""
    import pickle  # big trajectories only: `pickle` imports `re`

    try:
        outcome: Selection | PremathError = _scan_second_half(
            path, limits, size, split, lines_before
        )
    except PremathError as exc:
        outcome = exc
    return pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)


def _select_in_two(
    path: str, limits: Limits, size: int, split: int, lines_before: int
) -> Selection:
    with forked_answer(
        functools.partial(_second_half_payload, path, limits, size, split, lines_before)
    ) as answer:
        try:
            with open_regular(path) as handle:
                first = _scan(path, islice(handle, lines_before), 1, 0, limits, split)
        except OSError as exc:
            raise _io_error(path, exc) from None
        payload = answer()
    if payload:
        import pickle

        second: Selection | PremathError = pickle.loads(payload)  # our own child's bytes
    else:
        second = _scan_second_half(path, limits, size, split, lines_before)
    if isinstance(second, PremathError):
        raise second
    return first.merged(second, limits)


def _scan_whole(path: str, limits: Limits, size: int) -> Selection:
    try:
        with open(path, "rb") as handle:
            return _scan(path, handle, 1, 0, limits, size)
    except OSError as exc:
        raise _io_error(path, exc) from None


def read_rows(path: str, candidates: list[Candidate]) -> list[Any]:
    """The decoded rows of `candidates`, read again by offset (as the scan decoded them)."""
    rows: list[Any] = []
    if not candidates:
        return rows
    try:
        with open_regular(path) as handle:
            for _, _, _, number, start, end in candidates:
                handle.seek(start)
                raw = handle.read(end - start)
                try:
                    rows.append(loads(raw))
                except json_codec.JSONDecodeError:
                    rows.append(_decode(path, _jsonl_line(number, raw)))
    except OSError as exc:
        raise _io_error(path, exc) from None
    return rows
