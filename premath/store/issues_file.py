"""The issues store on disk: read, encode, and the reference's mutation protocol.

Bytes (issue-memory-and-loops.md §A1-§A2): one compact row per line in the reference's field
order, the file sorted by id and rewritten whole and atomically. A mutation holds
`<issues path>.lock`, a marker created exclusively with `pid=`/`utc=` lines and removed on
release, the protocol the Rust tool uses, so both can work on one store at once. Ours breaks a
marker whose pid is dead on this host and waits up to a configurable timeout (the reference gives
up after about half a second and never recovers a stale marker). Readers take no lock: the
rename shows them the old file or the new one.
"""

import contextlib
import gc
import itertools
import math
import operator
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import orjson

from premath.errors import ArtifactInvalid, IoFailure, NotFound
from premath.models.issue_row import (
    IssueRow,
    RowInvalid,
    check_row,
    dependency_sort_key,
    row_stamps_are_stored,
    stamps_are_stored,
    stored_row_or_none,
)
from premath.store.atomic import write_atomic
from premath.store.locks import hold_marker
from premath.text import rust_trim
from premath.timefmt import epoch_nanos, format_autosi_z

DEFAULT_ISSUES_PATH = ".premath/issues.jsonl"
_BIG_STORE_LINES = 10_000

IssueMap = dict[str, IssueRow]
"""Issues by id. Insertion order is not meaningful; writers sort by id."""

T = TypeVar("T")


def lock_path(issues_path: str | os.PathLike[str]) -> str:
    """`<issues path>.lock`: the suffix goes after the whole file name, as in the reference."""
    return f"{os.fspath(issues_path)}.lock"


def serde_float(value: float) -> str:
    """A float as serde_json writes it (ryu): `1e16`, `1.5e-7`, `0.1`, `2.0`, `-0.0`.

    Python's repr gives the same shortest digits; only the layout differs (`1e+16`, `1.5e-07`).
    """
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exponent_text = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    exponent = (int(exponent_text) if exponent_text else 0) - len(fraction)
    digits = (whole + fraction).lstrip("0")
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    length = len(digits)
    point = length + exponent  # 10^(point-1) <= |value| < 10^point
    if exponent >= 0 and point <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < point <= 16:
        body = f"{digits[:point]}.{digits[point:]}"
    elif -5 < point <= 0:
        body = "0." + "0" * -point + digits
    elif length == 1:
        body = f"{digits}e{point - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + body


def _serde_numbers(value: Any) -> Any:
    if type(value) is float:
        return orjson.Fragment(serde_float(value).encode())
    if type(value) is dict:
        return {key: _serde_numbers(item) for key, item in value.items()}
    if type(value) is list:
        return [_serde_numbers(item) for item in value]
    return value


def encode_row(row: IssueRow) -> bytes:
    """One stored line: compact, field order, serde's float layout in `metadata`, `\\n`."""
    if "metadata" in row:
        row = {**row, "metadata": _serde_numbers(row["metadata"])}
    return orjson.dumps(row) + b"\n"


def canonical_line(row: IssueRow) -> bytes:
    """The snapshot form of a row: the stored line with dependencies in canonical order."""
    dependencies = row.get("dependencies")
    if dependencies is not None and len(dependencies) > 1:
        row = {**row, "dependencies": sorted(dependencies, key=dependency_sort_key)}
    return encode_row(row)


def encode_store(issues: IssueMap) -> bytes:
    """The whole file: every row's stored line, sorted by id (byte order of UTF-8)."""
    rows = [issues[issue_id] for issue_id in sorted(issues)]
    if any("metadata" in row for row in rows):
        return b"".join(map(encode_row, rows))
    dumps = orjson.dumps
    return b"".join([dumps(row) + b"\n" for row in rows])


def _trimmed(raw: bytes) -> bytes:
    line = raw.strip()
    if line and (line[0] >= 0x80 or line[-1] >= 0x80):
        # Rust's trim also strips non-ASCII white space (NBSP, U+2028, ...).
        line = rust_trim(line.decode("utf-8")).encode("utf-8")
    return line


class _SplitFile(NamedTuple):
    lines: list[bytes]
    all_rows: bool
    """Every line starts with `{`: nothing to skip, line numbers are positions."""
    terminated: bool
    """The file ends with `\n` (so its last line cannot be torn)."""


def _split_file(data: bytes, path: str) -> _SplitFile:
    """Refuse NUL and non-UTF-8 bytes (§A2), then cut the file into lines."""
    if b"\0" in data:
        raise ArtifactInvalid(
            f"failed to load {path}: corrupted substrate: {path}: contains NUL byte(s)"
        )
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise ArtifactInvalid(
                f"failed to load {path}: corrupted substrate: {path}: "
                "contains non-UTF-8 byte sequence(s)"
            ) from None
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    all_rows = data.count(b"\n{") + data.startswith(b"{") == len(lines)
    return _SplitFile(lines, all_rows, data.endswith(b"\n"))


def parse_issues(data: bytes, path: str, now_text: str, *, tolerate_torn_tail: bool) -> IssueMap:
    """Decode a whole issues file the reference's way (§A2 "Read"); see `_parse_lines`."""
    return _parse_paused(_split_file(data, path), path, now_text, tolerate_torn_tail)


def _parse_paused(
    split: _SplitFile, path: str, now_text: str, tolerate_torn_tail: bool
) -> IssueMap:
    """`_parse_lines`, with the cyclic GC out of the way for big stores.

    Trade-off: the cyclic GC would rescan the growing heap of row dicts again and again while a
    big store loads, and again in every collection afterwards (at 100k rows that doubled the
    time of `issue ready`). Rows hold no reference cycles, so collection is paused while
    parsing and the loaded objects are then frozen out of the GC's generations (`gc.freeze`):
    reference counting still frees them, only cyclic garbage alive at that moment is never
    collected (a long-running caller may call `gc.unfreeze()` when that matters). Small stores
    (under 10k lines) load with the GC untouched.
    """
    if len(split.lines) < _BIG_STORE_LINES:
        return _parse_lines(split, path, now_text, tolerate_torn_tail)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_lines(split, path, now_text, tolerate_torn_tail)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _parse_lines(split: _SplitFile, path: str, now_text: str, tolerate_torn_tail: bool) -> IssueMap:
    """The reading rules, one after the other.

    Blank lines and `#` lines are skipped; line numbers count from 1 including skipped lines;
    the last row of an id wins. With `tolerate_torn_tail`, an unterminated last line that does
    not parse (a writer that is not atomic was interrupted) is skipped with a warning instead of
    failing the whole read. Rows in stored form take the fast path (`stored_row_or_none`), the
    rest `check_row`.
    """
    lines = split.lines
    texts: list[bytes]
    numbers: Sequence[int]
    if split.all_rows:
        texts, numbers = lines, range(1, len(lines) + 1)
    else:
        texts, numbers = _rows_to_decode(lines)
    try:
        values = list(map(orjson.loads, texts))
    except orjson.JSONDecodeError:
        torn_candidate = 0 if split.terminated else len(lines)
        values = _decode_one_by_one(texts, numbers, path, torn_candidate, tolerate_torn_tail)
    # The raw lines are a copy of the file: free them before the rows grow.
    del lines, texts, split
    stamps: list[str] = []
    rows = list(map(stored_row_or_none, values, itertools.repeat(stamps)))
    if None in rows:
        for position, row in enumerate(rows):
            if row is None:
                try:
                    rows[position] = _checked(values[position], numbers[position], path, now_text)
                except ArtifactInvalid:
                    # A fast row above may hold a bad time: the reference reports it first.
                    _recheck_times(rows[:position], values, numbers, path, now_text, {})
                    raise
    issues: IssueMap = dict(zip(map(operator.itemgetter("id"), rows), rows, strict=True))  # type: ignore[arg-type]
    if not stamps_are_stored(stamps):
        _recheck_times(rows, values, numbers, path, now_text, issues)
    return issues


def _recheck_times(
    rows: list[IssueRow | None],
    values: list[Any],
    numbers: Sequence[int],
    path: str,
    now_text: str,
    issues: IssueMap,
) -> None:
    """Send fast-path rows whose times are not in stored form through `check_row`, in file
    order: normalised (unless a later row of the same id won) or refused with their line."""
    for position, row in enumerate(rows):
        if row is not None and row is values[position] and not row_stamps_are_stored(row):
            checked = _checked(row, numbers[position], path, now_text)
            if issues.get(checked["id"]) is row:
                issues[checked["id"]] = checked


def _rows_to_decode(lines: list[bytes]) -> tuple[list[bytes], list[int]]:
    """The lines holding rows (not blank, not `#`), trimmed as Rust trims, and their numbers."""
    texts: list[bytes] = []
    numbers: list[int] = []
    for index, raw in enumerate(lines):
        line = raw.strip()
        if line and (line[0] >= 0x80 or line[-1] >= 0x80):
            line = _trimmed(line)
        if line and line[0] != 0x23:  # '#'
            texts.append(line)
            numbers.append(index + 1)
    return texts, numbers


def _checked(value: Any, number: int, path: str, now_text: str) -> IssueRow:
    try:
        return check_row(value, now_text)
    except RowInvalid as exc:
        raise ArtifactInvalid(f"failed to load {path}: line {number}: parse error: {exc}") from None


def _decode_one_by_one(
    texts: list[bytes],
    numbers: Sequence[int],
    path: str,
    torn_candidate: int,
    tolerate_torn_tail: bool,
) -> list[Any]:
    """Find the line that does not parse; a torn last line may be dropped (with a warning)."""
    values = []
    for position, text in enumerate(texts):
        try:
            values.append(orjson.loads(text))
        except orjson.JSONDecodeError as exc:
            number = numbers[position]
            if tolerate_torn_tail and number == torn_candidate:
                sys.stderr.write(
                    f"warning: {path}:{number}: skipped an incomplete last line (a writer was "
                    "interrupted); the next issue mutation will refuse the file until it is fixed\n"
                )
                break
            raise ArtifactInvalid(
                f"failed to load {path}: line {number}: parse error: {exc}"
            ) from None
    return values


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise NotFound(f"issues file not found: {path}") from None
    except OSError as exc:
        raise IoFailure(f"failed to read issues file {path}: {exc.strerror or exc}") from None


def load_issues(path: str, now: datetime, *, tolerate_torn_tail: bool = True) -> IssueMap:
    """Read the store without locking (readers rely on atomic rename). Missing: NotFound."""
    now_text = format_autosi_z(epoch_nanos(now))
    data = _read_bytes(path)
    split = _split_file(data, path)
    del data  # only the lines are needed from here: one copy of the file, not two
    return _parse_paused(split, path, now_text, tolerate_torn_tail)


def write_issues(path: str, issues: IssueMap) -> None:
    """Replace the store atomically: every row, sorted by id (caller holds the lock)."""
    try:
        write_atomic(path, encode_store(issues))
    except OSError as exc:
        raise IoFailure(f"failed to write issues file {path}: {exc.strerror or exc}") from None


def mutate_store(
    path: str,
    mutate: Callable[[IssueMap], tuple[T, bool]],
    *,
    now: datetime,
    timeout_s: float,
) -> T:
    """Run `mutate` on the store under `<path>.lock`; save only when it reports a change.

    A missing file is an empty store. The store is saved whole and atomically, sorted by id; on
    any error the file is left as it was and the lock is still released.
    """
    marker = lock_path(path)
    lock = hold_marker(
        marker, timeout_s=timeout_s, busy_message=f"issue-memory lock busy: {marker}"
    )
    try:
        lock.__enter__()
    except OSError as exc:  # e.g. the lock's folder cannot be created
        raise IoFailure(
            f"failed to acquire issue-memory lock {marker}: {exc.strerror or exc}"
        ) from None
    with contextlib.ExitStack() as release:
        release.push(lock)
        exists = os.path.exists(path)
        issues = load_issues(path, now, tolerate_torn_tail=False) if exists else {}
        value, changed = mutate(issues)
        if changed:
            write_issues(path, issues)
            remove_orphaned_temp_files(path)
    return value


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_orphaned_temp_files(path: str) -> None:
    """Delete temp files of writers that died before their rename (ours and the reference's).

    Ours are `.<name>.tmp.<pid>.<ns>`, the reference's `<name>.tmp.<pid>.<ns>`; only files whose
    pid is no longer alive on this host are removed, and only while the store lock is held.
    """
    target = Path(path)
    name = target.name
    try:
        entries = os.listdir(target.parent)
    except OSError:
        return
    for entry in entries:
        stem = entry[1:] if entry.startswith(f".{name}.tmp.") else entry
        if not stem.startswith(f"{name}.tmp."):
            continue
        pid_text = stem[len(name) + 5 :].partition(".")[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_alive(int(pid_text)):
            with contextlib.suppress(OSError):
                (target.parent / entry).unlink()


def require_store_file(path: str) -> None:
    """Commands that edit existing issues refuse a missing file before taking the lock."""
    if not os.path.exists(path):
        raise NotFound(f"issues file not found: {path}")
