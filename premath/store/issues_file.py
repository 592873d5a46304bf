"""The issues store on disk: read, encode, and the reference's mutation protocol.

Bytes (specs/issue-memory.md "Store format"): one compact row per line in the reference's field
order, the file sorted by id and rewritten whole and atomically. A mutation holds
`<issues path>.lock`, a marker created exclusively with `pid=`/`utc=` lines and removed on
release, the protocol the Rust tool uses, so both can work on one store at once. Ours breaks a
marker only when its owner is provably ours and dead (`store/locks.py`) and waits up to a
configurable timeout (the reference gives up after about half a second and never recovers a
stale marker). Readers take no lock: the
rename shows them the old file or the new one.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import itertools
import operator
import os
import stat
import sys
from collections.abc import Callable, Iterator, Sequence

from premath.errors import ArtifactInvalid, InputInvalid, IoFailure, NotFound, PremathError
from premath.lean import NamedTuple, datetime
from premath.models.issue_row import (
    TEXT_STORED,
    TEXT_STORED_BUT_TIMES,
    TEXT_UNKNOWN,
    NotStored,
    RowInvalid,
    check_row,
    dependency_sort_key,
    row_stamps_are_stored,
    store_row_times,
    stored_item,
    stored_row_or_none,
    text_form,
)
from premath.store import json_codec
from premath.store.canonical import row_bytes, with_serde_floats
from premath.store.files import STORE_CAP, read_bounded
from premath.store.json_codec import decoder_for, dumps_plain_lines, loads
from premath.text import is_utf8, rust_trim_line
from premath.timefmt import (
    epoch_nanos,
    format_autosi_z,
    stamps_are_stored,
    stored_forms,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from premath.models.issue_row import IssueRow

    T = TypeVar("T")

_BIG_STORE_LINES = 10_000
_WRITTEN_CHECK_LINES = 10_000
"""From this size on, a load first tries `text_form` (its regex costs ~5 ms to compile)."""

IssueMap = dict[str, "IssueRow"]
"""Issues by id. Insertion order is not meaningful; writers sort by id."""


def lock_path(issues_path: str | os.PathLike[str]) -> str:
    """`<issues path>.lock`: the suffix goes after the whole file name, as in the reference."""
    return f"{os.fspath(issues_path)}.lock"


def encode_row(row: IssueRow) -> bytes:
    """One stored line: compact, field order, serde's float layout in `metadata`, `\\n`."""
    if "metadata" in row:
        row = {**row, "metadata": with_serde_floats(row["metadata"])}
    return row_bytes(row)


def canonical_line(row: IssueRow) -> bytes:
    """The snapshot form of a row: the stored line with dependencies in canonical order."""
    dependencies = row.get("dependencies")
    if dependencies is not None and len(dependencies) > 1:
        row = {**row, "dependencies": sorted(dependencies, key=dependency_sort_key)}
    return encode_row(row)


def encode_store(issues: IssueMap) -> bytes:
    """The whole file: every row's stored line, sorted by id (byte order of UTF-8).

    Rows in stored form hold strings, booleans, i32 integers and lists and objects of those,
    three levels deep at most, except in `metadata` (any JSON, floats written as serde writes
    them): without metadata they are plain to the codec, which then encodes them unchecked."""
    rows = [issues[issue_id] for issue_id in sorted(issues)]
    if any("metadata" in row for row in rows):
        return b"".join(map(encode_row, rows))
    return dumps_plain_lines(rows)


def _drained_lines(issues: IssueMap) -> list[bytes]:
    """The lines of `encode_store(issues)`, emptying `issues` as they are made: each row is
    freed once encoded, so the rows and the new file are never whole in memory together."""
    pop = issues.pop
    return [encode_row(pop(issue_id)) for issue_id in sorted(issues)]


class _SplitFile(NamedTuple):
    lines: list[bytes]
    size: int
    terminated: bool
    """The file ends with `\n` (so its last line cannot be torn)."""
    written: Callable[[], int]
    """What `text_form` proves about the lines (our bytes, or stored rows but for their times);
    asked only after the optimistic decode, so a check running beside it has had time to
    finish."""


def _never() -> int:
    return TEXT_UNKNOWN


def _split_file(
    data: bytes, path: str, written: Callable[[bytes], Callable[[], int]] | None = None
) -> _SplitFile:
    """Refuse NUL and non-UTF-8 bytes (specs/issue-memory.md), then cut the file into lines.

    `written` starts the stored-form check of a big store (by default, in this process when
    first asked for).
    """
    if b"\0" in data:
        raise ArtifactInvalid(
            f"failed to load {path}: corrupted substrate: {path}: contains NUL byte(s)"
        )
    if not is_utf8(data):
        raise ArtifactInvalid(
            f"failed to load {path}: corrupted substrate: {path}: "
            "contains non-UTF-8 byte sequence(s)"
        )
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if len(lines) < _WRITTEN_CHECK_LINES:
        return _SplitFile(lines, len(data), data.endswith(b"\n"), _never)
    start = written or (lambda text: functools.partial(text_form, text))
    return _SplitFile(lines, len(data), data.endswith(b"\n"), start(data))


class StoreView:
    """Something derived from a store's rows (claim-next's candidates, the leased ids) that a
    writer changing many rows between rewrites keeps up to date instead of recomputing."""

    def follow(
        self, issue_id: str, before: IssueRow | None, after: IssueRow, issues: IssueMap
    ) -> bool:
        """Take in one row's change (`before`: None for a new row); False when the view can
        no longer follow (its owner then drops it)."""
        raise NotImplementedError


class ViewedIssues(dict[str, "IssueRow"]):
    """An issue map with the views derived from it (`views`, by name), kept by a writer that
    tells them of every change (the authority's group commit): readers of the map find them
    there, build a missing one, and use it instead of a pass over every row."""

    def __init__(self, rows: IssueMap | None = None) -> None:
        super().__init__(rows or {})
        self.views: dict[str, StoreView] = {}

    def touched(self, issue_id: str) -> None:
        """A mutation changed this row and reads a view before it returns: the views take the
        row as it is now (the writer tells them again, with the row as it was, afterwards)."""
        for name, view in list(self.views.items()):
            if not view.follow(issue_id, None, self[issue_id], self):
                del self.views[name]


class LoadedStore(NamedTuple):
    issues: IssueMap
    stored_lines: list[bytes] | None
    """The file's lines when the file is exactly `encode_store(issues)`, for `_spliced_lines`."""


def parse_issues(data: bytes, path: str, now_text: str, *, tolerate_torn_tail: bool) -> IssueMap:
    """Decode a whole issues file as the reference does (specs/issue-memory.md), `_parse_lines`."""
    return _parse_paused(_split_file(data, path), path, now_text, tolerate_torn_tail).issues


def _parse_paused(
    split: _SplitFile,
    path: str,
    now_text: str,
    tolerate_torn_tail: bool,
    *,
    keep_lines: bool = False,
) -> LoadedStore:
    """`_parse_split`, with the cyclic GC paused for big stores.

    The cyclic GC would rescan the growing heap of row dicts again and again while a big store
    loads (rows hold no reference cycles); the pause ends with the load, leaving the process's
    GC as it was. The CLI's entry point goes further for its one-command process (`gc.disable`
    in `premath.cli.main`). Small stores (under 10k lines) load with the GC untouched.
    """
    if len(split.lines) < _BIG_STORE_LINES:
        return _parse_split(split, path, now_text, tolerate_torn_tail, keep_lines)
    with _gc_paused():
        return _parse_split(split, path, now_text, tolerate_torn_tail, keep_lines)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic collection while the block runs."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_split(
    split: _SplitFile, path: str, now_text: str, tolerate_torn_tail: bool, keep_lines: bool
) -> LoadedStore:
    """Every line decoded once; then lines exactly as our writers write them (checked in big
    stores only, where it saves a third of the time), else rows in stored form but perhaps
    for their times (`_stored_rows`), else the general rules (`_parse_lines`).

    Lines not kept for `_spliced_lines` are freed (`split.lines` cleared) as soon as the rows
    are known: a rewrite of a store in foreign form then re-encodes without the file's copy
    beside it (peak memory)."""
    lines = split.lines
    try:
        rows = list(map(decoder_for(split.size), lines))
    except json_codec.JSONDecodeError:
        return LoadedStore(_parse_lines(split, path, now_text, tolerate_torn_tail), None)
    if split.written is not _never:
        written = _by_id(rows)
        form = TEXT_UNKNOWN if written is None else split.written()
        if written is not None and form == TEXT_STORED:
            keep = keep_lines and split.terminated and len(written) == len(lines)
            if keep and _ascending(list(written)):
                return LoadedStore(written, lines)
            lines.clear()
            return LoadedStore(written, None)
        if written is not None and form == TEXT_STORED_BUT_TIMES:
            lines.clear()
            store_row_times(rows)
            return LoadedStore(written, None)
    stored = _stored_rows(rows)
    if stored is None:
        del rows
        return LoadedStore(_parse_lines(split, path, now_text, tolerate_torn_tail), None)
    lines.clear()
    return LoadedStore(stored, None)


def _by_id(rows: list[Any]) -> IssueMap | None:
    """The rows by id with no row check (the last row of an id wins, as in `_parse_lines`);
    None when they plainly are not rows. Only `text_form` proves they are: the caller
    asks it before using the result."""
    try:
        return dict(zip(map(operator.itemgetter("id"), rows), rows, strict=True))
    except (KeyError, TypeError):
        return None


def _stored_rows(rows: list[Any]) -> IssueMap | None:
    """The store when every row is in stored form but perhaps for its times, else None.

    One pass of `stored_item` (all C-level but it); the times are checked for the lot at once,
    and when some are not in stored form but only their fraction is off (Go's RFC3339Nano
    `.5Z`, `.123456789Z`; what beads and hand-written stores hold) they are rewritten in place
    by `stored_forms`, in the order `stored_item` queued them. A blank, `#`, torn or malformed
    line fails `orjson.loads`, and JSON white space around a row is also white space to Rust's
    trim, so where this path succeeds the general rules give the same map.
    """
    stamps: list[str] = []
    try:
        issues: IssueMap = dict(map(stored_item, rows, itertools.repeat(stamps)))
    except NotStored:
        return None
    if stamps_are_stored(stamps):
        return issues
    forms = stored_forms(stamps)
    if forms is None:
        return None
    del stamps
    _put_stamps(rows, iter(forms))
    return issues


def _put_stamps(rows: list[IssueRow], forms: Iterator[str]) -> None:
    """Write back the times `stored_item` queued, in its order: the row's, then its lease's."""
    for row in rows:
        fields: dict[str, Any] = row  # type: ignore[assignment]
        fields["created_at"] = next(forms)
        fields["updated_at"] = next(forms)
        if "closed_at" in fields:
            fields["closed_at"] = next(forms)
        lease: dict[str, Any] | None = fields.get("lease")
        if lease is not None:
            lease["acquired_at"] = next(forms)
            lease["expires_at"] = next(forms)
            if "renewed_at" in lease:
                lease["renewed_at"] = next(forms)


def _ascending(ids: list[str]) -> bool:
    return all(map(operator.lt, ids, itertools.islice(ids, 1, None)))


def _parse_lines(split: _SplitFile, path: str, now_text: str, tolerate_torn_tail: bool) -> IssueMap:
    """The reading rules, one after the other.

    Blank lines and `#` lines are skipped; line numbers count from 1 including skipped lines;
    the last row of an id wins. With `tolerate_torn_tail`, an unterminated last line that does
    not parse (a writer that is not atomic was interrupted) is skipped with a warning instead of
    failing the whole read. Rows in stored form take the fast path (`stored_row_or_none`), the
    rest `check_row`.
    """
    lines = split.lines
    texts, numbers = _rows_to_decode(lines)
    try:
        values = list(map(decoder_for(split.size), texts))
    except json_codec.JSONDecodeError:
        torn_candidate = 0 if split.terminated else len(lines)
        values = _decode_one_by_one(texts, numbers, path, torn_candidate, tolerate_torn_tail)
    del texts
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
            line = rust_trim_line(line)
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
            values.append(loads(text))
        except json_codec.JSONDecodeError as exc:
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
        return read_bounded(path, STORE_CAP)
    except FileNotFoundError:
        raise NotFound(f"issues file not found: {path}") from None
    except OSError as exc:
        raise IoFailure(f"failed to read issues file {path}: {exc.strerror or exc}") from None


def _load(path: str, now: datetime, *, tolerate_torn_tail: bool, keep_lines: bool) -> LoadedStore:
    now_text = format_autosi_z(epoch_nanos(now))
    data = _read_bytes(path)
    with contextlib.ExitStack() as checks:
        # A big store's stored-form check (a regex over the whole file) runs on the other core
        # while this one decodes the rows: at 100k issues that is most of a fifth of a second.
        split = _split_file(
            data,
            path,
            lambda text: checks.enter_context(_text_form_in_parallel(text)),
        )
        del data  # only the lines are needed from here: one copy of the file, not two
        return _parse_paused(split, path, now_text, tolerate_torn_tail, keep_lines=keep_lines)


def _text_form_in_parallel(text: bytes) -> contextlib.AbstractContextManager[Callable[[], int]]:
    from premath.store.forked_check import check_in_parallel  # big stores only: small start lean

    return check_in_parallel(functools.partial(text_form, text))


def load_issues(path: str, now: datetime, *, tolerate_torn_tail: bool = True) -> IssueMap:
    """Read the store without locking (readers rely on atomic rename). Missing: NotFound."""
    return _load(path, now, tolerate_torn_tail=tolerate_torn_tail, keep_lines=False).issues


def write_issues(path: str, issues: IssueMap) -> None:
    """Replace the store atomically: every row, sorted by id (caller holds the lock)."""
    _write(path, encode_store(issues))


def _write(path: str, data: bytes) -> None:
    from premath.store.atomic import write_atomic  # writers only: readers start leaner

    try:
        write_atomic(path, data)
    except OSError as exc:
        raise IoFailure(f"failed to write issues file {path}: {exc.strerror or exc}") from None


Changes = bool | tuple[str, ...]
"""What a mutation reports: False or `()` nothing; a tuple, the ids of the rows it changed in
place or added (no row removed or renamed); True, anything."""


def _spliced_lines(
    issues: IssueMap, stored_lines: list[bytes], changed: tuple[str, ...]
) -> list[bytes] | None:
    """The lines of `encode_store(issues)` (and a last empty one) from the file's own lines,
    re-encoding only the changed rows; None when the rows no longer line up with the lines.

    The lines are the file's, proven equal to `encode_store` of the store as loaded
    (`_parse_split`), so the ids of the loaded store are in line order.
    """
    if len(issues) != len(stored_lines):
        return None
    ids = list(issues)
    lines = list(stored_lines)
    for issue_id in changed:
        position = bisect.bisect_left(ids, issue_id)
        if position == len(ids) or ids[position] != issue_id:
            return None
        lines[position] = encode_row(issues[issue_id])[:-1]
    lines.append(b"")
    return lines


def mutate_store(
    path: str,
    mutate: Callable[[IssueMap], tuple[T, Changes]],
    *,
    now: datetime,
    timeout_s: float,
    warm: WarmStores | None = None,
) -> T:
    """Run `mutate` on the store under `<path>.lock`; save only when it reports a change.

    A missing file is an empty store. The store is saved whole and atomically, sorted by id; on
    any error the file is left as it was and the lock is still released. When the mutation names
    the rows it changed and the file was already in our bytes, the other rows keep their lines
    as read: claim-next re-encodes one row, not 100k. Otherwise, unless a warm cache keeps the
    store, the map is emptied as the new file is encoded (`_drained_lines`): `mutate` returns the
    rows it needs, never the map.
    """
    if warm is not None:
        return warm.mutate(path, mutate, now=now, timeout_s=timeout_s)
    with store_lock(path, timeout_s):
        return _mutate_locked(path, mutate, now=now, warm=None)


@contextlib.contextmanager
def store_lock(
    path: str, timeout_s: float, on_turn: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold `<path>.lock` for the block (the reference's protocol)."""
    from premath.store.locks import hold_marker  # writers only: readers start leaner

    marker = lock_path(path)
    lock = hold_marker(
        marker,
        timeout_s=timeout_s,
        busy_message=f"issue-memory lock busy: {marker}",
        on_turn=on_turn,
    )
    try:
        lock.__enter__()
    except OSError as exc:  # e.g. the lock's folder cannot be created
        raise IoFailure(
            f"failed to acquire issue-memory lock {marker}: {exc.strerror or exc}"
        ) from None
    with contextlib.ExitStack() as release:
        release.push(lock)
        yield


def load_for_write(path: str, now: datetime) -> LoadedStore:
    """The store as a writer holding the lock loads it: strictly (a torn tail is refused), with
    the file's lines when they are exactly `encode_store` of it; a missing file is empty."""
    if not os.path.exists(path):
        return LoadedStore({}, None)
    return _load(path, now, tolerate_torn_tail=False, keep_lines=True)


def _mutate_locked(
    path: str,
    mutate: Callable[[IssueMap], tuple[T, Changes]],
    *,
    now: datetime,
    warm: WarmStores | None,
    loaded: LoadedStore | None = None,
) -> T:
    """`mutate` on the store as loaded (or kept warm, or `loaded`: read before the lock and
    brought up to date under it) and its rewrite."""
    if warm is not None:
        loaded = warm.take(path)
    if loaded is None:
        loaded = load_for_write(path, now)
    value, changed = mutate(loaded.issues)
    if changed:
        lines = None
        if isinstance(changed, tuple) and loaded.stored_lines is not None:
            lines = _spliced_lines(loaded.issues, loaded.stored_lines, changed)
        if lines is None and warm is None:
            drained = _drained_lines(loaded.issues)
            del loaded
            _write(path, b"".join(drained))
            return value
        if lines is None:
            data = encode_store(loaded.issues)
            _write(path, data)
            lines = data.split(b"\n")
            # `_spliced_lines` needs the ids in line order.
            loaded = LoadedStore({key: loaded.issues[key] for key in sorted(loaded.issues)}, None)
        else:
            _write(path, b"\n".join(lines))
        lines.pop()
        if warm is not None:
            warm.keep(path, LoadedStore(loaded.issues, lines))
    elif warm is not None and os.path.exists(path):
        warm.keep(path, loaded)
    return value


SLIM_STORE_BYTES = 1 << 20
"""From this file size on, `edit_chosen_row` first tries the slim scan (`stored_scan`)."""


def edit_chosen_row(
    path: str,
    choose: Callable[[IssueMap], IssueRow | None],
    edit: Callable[[IssueRow], None],
    *,
    now: datetime,
    timeout_s: float,
) -> IssueRow | None:
    """Under `<path>.lock`: `choose` one row of the store, `edit` it in place and save; the
    edited row (None: nothing chosen, nothing written).

    `choose` sees slim rows (`stored_scan.SLIM_FIELDS`; other rows hold their status only)
    when the file is big and provably in our bytes, so 100k rows are never decoded at once
    and the file is rewritten as a stream around the one new line; otherwise the full store,
    as `mutate_store` loads it. Either way the new file is `encode_store` of the edited store.
    """

    def mutate(issues: IssueMap) -> tuple[IssueRow | None, Changes]:
        row = choose(issues)
        if row is None:
            return None, ()
        edit(row)
        return row, (row["id"],)

    early = WarmStores()
    size = _file_size(path)
    if size is not None and size < SLIM_STORE_BYTES:
        # Read before the lock: under it, only what other writers changed meanwhile is read
        # again and only the edited row encoded, so the lock is held for the writes alone (16
        # claimers on a small store queue behind each other's hold; the read costs the same).
        early.preload(path, now)
    with store_lock(path, timeout_s):
        edited = _edit_slim(path, choose, edit)
        if edited is not None:
            return edited[0]
        return _mutate_locked(path, mutate, now=now, warm=None, loaded=early.take(path))


@contextlib.contextmanager
def _slim_candidate(path: str) -> Iterator[int | None]:
    """`path` open for the slim scan when it is a regular file of `SLIM_STORE_BYTES` or more
    (and within the store cap); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        yield None
        return
    try:
        status = os.fstat(fd)
        size = status.st_size
        big = SLIM_STORE_BYTES <= size <= STORE_CAP.bytes()
        yield fd if stat.S_ISREG(status.st_mode) and big else None
    finally:
        os.close(fd)


def _file_size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def load_slim(
    path: str,
    slim: Callable[[dict[str, Any]], IssueRow | None],
    edgeless: Callable[[str], IssueRow | None] | None = None,
) -> IssueMap | None:
    """A big store in our bytes as `slim` keeps each row (`stored_scan.slim_store`), for a
    reader that needs a few fields of each: 100k rows are never whole in memory. None when the
    file is small, missing, or not provably in our bytes: the caller loads it in full (which
    also words every error)."""
    with _slim_candidate(path) as fd, _gc_paused():
        if fd is None:
            return None
        from premath.store import stored_scan  # big stores only: small ones start leaner

        return stored_scan.slim_store(fd, slim, edgeless)


def _edit_slim(
    path: str,
    choose: Callable[[IssueMap], IssueRow | None],
    edit: Callable[[IssueRow], None],
) -> tuple[IssueRow | None] | None:
    """`edit_chosen_row` by the slim scan; None when the file does not qualify."""
    with _slim_candidate(path) as fd:
        if fd is None:
            return None
        from premath.store import stored_scan  # big stores only: small ones start leaner

        scan = stored_scan.scan_stored(fd)
        if scan is None:
            return None
        chosen = choose(scan.issues)
        if chosen is None:
            return (None,)
        issue_id = chosen["id"]
        del chosen
        row = stored_scan.stored_row(fd, scan, issue_id)
        edit(row)
        try:
            stored_scan.rewrite_line(path, fd, scan, issue_id, encode_row(row))
        except OSError as exc:
            raise IoFailure(f"failed to write issues file {path}: {exc.strerror or exc}") from None
        return (row,)


FileIdentity = tuple[int, int, int, int]


def file_identity(path: str) -> FileIdentity | None:
    """(device, inode, size, mtime ns), or None when the file is absent or unreadable."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


class WarmStores:
    """Parsed stores a long-running process (the MCP server) keeps between calls, each valid
    while its file's identity (device, inode, size, mtime) is unchanged. Every use revalidates
    with one `stat`, so a write by any other process is seen by the next call; a mutation hands
    its store over (`take`) and gets the saved one back (`keep`), so a failed mutation can never
    leave a half-changed store behind. Only strictly parsed stores (no torn tail) are kept."""

    def __init__(self) -> None:
        self._stores: dict[str, tuple[FileIdentity, LoadedStore]] = {}

    def take(self, path: str) -> LoadedStore | None:
        entry = self._stores.pop(path, None)
        if entry is None:
            return None
        identity = file_identity(path)
        if entry[0] == identity:
            return entry[1]
        return _refreshed(entry[1], path, identity)

    def mutate(
        self,
        path: str,
        mutate: Callable[[IssueMap], tuple[T, Changes]],
        *,
        now: datetime,
        timeout_s: float,
    ) -> T:
        """`mutate_store` on the kept store: one mutation, one rewrite (`GroupCommits` groups)."""
        with store_lock(path, timeout_s, functools.partial(self.prefetch, path)):
            return _mutate_locked(path, mutate, now=now, warm=self)

    def keep(self, path: str, loaded: LoadedStore) -> None:
        identity = file_identity(path)
        if identity is not None:
            self._stores[path] = (identity, loaded)

    def prefetch(self, path: str) -> None:
        """Bring a kept store up to date with the file as it is now, without the lock (a
        reader's view, as `read`): a mutation waiting its turn then re-reads under the lock only
        the rows its one predecessor changes. A store never kept is left to the mutation."""
        entry = self._stores.get(path)
        if entry is None:
            return
        identity = file_identity(path)
        if identity is None or entry[0] == identity:
            return
        refreshed = _refreshed(entry[1], path, identity)
        if refreshed is not None:
            self._stores[path] = (identity, refreshed)

    def preload(self, path: str, now: datetime) -> None:
        """Keep the store for a writer before it takes the lock, so that under the lock `take`
        re-reads only the rows other writers changed meanwhile and the rewrite re-encodes only
        the rows this writer changes. Any failure is left for the load under the lock to
        report in its own words.

        The lines kept are those of the bytes read, proven equal to `encode_store` of the rows
        decoded from them, whatever another writer does meanwhile: the identity, taken before
        the read, only tells `take` whether to look for changes."""
        identity = file_identity(path)
        if identity is None:
            return
        now_text = format_autosi_z(epoch_nanos(now))
        try:
            data = read_bounded(path, STORE_CAP)
            loaded = _parse_paused(_split_file(data, path), path, now_text, False, keep_lines=True)
        except (PremathError, OSError):
            return
        if loaded.stored_lines is None and encode_store(loaded.issues) == data:
            lines = data.split(b"\n")
            lines.pop()
            loaded = LoadedStore(loaded.issues, lines)
        self._stores[path] = (identity, loaded)

    def read(self, path: str, now: datetime) -> IssueMap:
        """The store for a reader: the kept one while the file is unchanged, else loaded (and
        kept when it parsed strictly). The caller must not change it."""
        entry = self._stores.get(path)
        identity = file_identity(path)
        if entry is not None and entry[0] == identity:
            return entry[1].issues
        refreshed = None if entry is None else _refreshed(entry[1], path, identity)
        if refreshed is not None and identity is not None:
            self._stores[path] = (identity, refreshed)
            return refreshed.issues
        try:
            loaded = _load(path, now, tolerate_torn_tail=False, keep_lines=True)
        except ArtifactInvalid:
            self._stores.pop(path, None)
            return load_issues(path, now)
        if identity is not None and identity == file_identity(path):
            self._stores[path] = (identity, _with_stored_lines(loaded, path))
        return loaded.issues


def _with_stored_lines(loaded: LoadedStore, path: str) -> LoadedStore:
    """`loaded` with the file's lines when the file is exactly `encode_store` of it (a small
    store's load does not check that; a warm store pays it once to refresh cheaply later)."""
    if loaded.stored_lines is not None:
        return loaded
    try:
        data = read_bounded(path, STORE_CAP)
    except (OSError, InputInvalid):
        return loaded
    if encode_store(loaded.issues) != data:
        return loaded
    lines = data.split(b"\n")
    lines.pop()
    return LoadedStore(loaded.issues, lines)


def _refreshed(old: LoadedStore, path: str, identity: FileIdentity | None) -> LoadedStore | None:
    """The store after another writer rewrote it, rows changed in place (a claim, an update):
    lines equal to the kept ones keep their rows; each other line must be a row in stored form,
    byte for byte as our writers write it, with the same id at the same place. None when the
    file is anything else (then it is loaded in full): at 1,000 issues this is a file read and
    a line compare instead of a thousand row checks."""
    if old.stored_lines is None or identity is None:
        return None
    try:
        data = read_bounded(path, STORE_CAP)
    except (OSError, InputInvalid):
        return None
    if file_identity(path) != identity or not data.endswith(b"\n") or b"\0" in data:
        return None
    lines = data.split(b"\n")
    lines.pop()
    if len(lines) != len(old.stored_lines):
        return None
    ids = list(old.issues)
    issues = dict(old.issues)
    stamps: list[str] = []
    try:
        for position, line in enumerate(lines):
            if line == old.stored_lines[position]:
                continue
            issue_id, row = stored_item(loads(line), stamps)
            if issue_id != ids[position] or encode_row(row)[:-1] != line:
                return None
            issues[issue_id] = row
    except (json_codec.JSONDecodeError, NotStored):
        return None
    return LoadedStore(issues, lines) if stamps_are_stored(stamps) else None


def require_store_file(path: str) -> None:
    """Commands that edit existing issues refuse a missing file before taking the lock."""
    if not os.path.exists(path):
        raise NotFound(f"issues file not found: {path}")
