"""The issue event log (`.premath/memory/events.jsonl`) and the replay cache on disk.

Bytes (reference agent-surface §5.1-§5.3): one compact `issue.event.v1` row per line in struct
order. The log is read as a stream (a line at a time, memory bounded by the longest line), the
way the reference's `BufRead::lines` reads it: `\\n` or `\\r\\n` ends a line, lines are trimmed,
blank and `#` lines skipped, numbers count from 1 including skipped lines. The replay cache is a
pretty-printed document in struct order with no trailing newline, as serde's `to_vec_pretty`.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import orjson

from premath.errors import IoFailure
from premath.models.issue_event import IssueEvent, check_event
from premath.models.issue_row import RowInvalid
from premath.store.atomic import write_atomic, write_atomic_chunks
from premath.store.canonical import row_bytes, with_serde_floats
from premath.store.documents import os_error_text
from premath.text import is_utf8, rust_trim_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_EVENTS_PATH = ".premath/memory/events.jsonl"
EVENT_REF_PREFIX = "ev1_"
REPLAY_CACHE_SCHEMA = "issue.replay.cache.v1"
REPLAY_CACHE_NAME = "replay-cache.json"
_LINES_PER_CHUNK = 4096


class EventLogInvalid(Exception):
    """A line of the log the reference would refuse: `line N: parse error: <why>` (or I/O)."""


def read_events(path: str, now_text: str) -> Iterator[IssueEvent]:
    """Every event of the log in file order, checked (`check_event`), one line in memory."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not is_utf8(raw):
                raise EventLogInvalid(
                    f"line {number}: I/O error: stream did not contain valid UTF-8"
                )
            line = rust_trim_line(raw)
            if not line or line[0] == 0x23:  # '#'
                continue
            try:
                yield check_event(orjson.loads(line), now_text)
            except (orjson.JSONDecodeError, RowInvalid) as exc:
                raise EventLogInvalid(f"line {number}: parse error: {exc}") from None


def event_line(event: IssueEvent) -> bytes:
    """The event's stored line: compact, struct order, serde's floats in metadata, `\\n`."""
    issue = event.get("issue")
    if issue is not None and "metadata" in issue:
        payload: Any = {
            **event,
            "issue": {**issue, "metadata": with_serde_floats(issue["metadata"])},
        }
        return row_bytes(payload)
    return orjson.dumps(event) + b"\n"


class StreamDigest:
    """`ev1_` over the events fed to it: sha256 of each stored line, `\\n`-terminated."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.count = 0

    def add(self, line: bytes) -> None:
        self._sha.update(line)
        self.count += 1

    def ref(self) -> str:
        return EVENT_REF_PREFIX + self._sha.hexdigest()


def write_event_log(
    path: str, lines: Iterable[bytes], verify: Callable[[str], None] | None = None
) -> None:
    """Replace the log atomically with `lines`, written as they are produced (bounded memory);
    `verify` reads the complete new log before it replaces the old one and may refuse it.

    The reference truncates and writes in place; a reader or a crash then sees half a log.
    """
    if os.path.isdir(path):
        # The reference's wording (its plain `File::create` fails this way).
        raise IsADirectoryError(21, "Is a directory", path)
    iterator = iter(lines)
    batches = iter(lambda: list(itertools.islice(iterator, _LINES_PER_CHUNK)), [])
    check = None if verify is None else (lambda temp: verify(os.fspath(temp)))
    write_atomic_chunks(path, map(b"".join, batches), check)


class ReplayCacheEntry(NamedTuple):
    """`issue.replay.cache.v1`, fields in the reference's struct order."""

    events_path: str
    issues_path: str
    event_stream_ref: str
    snapshot_ref: str
    event_count: int
    issue_count: int


_CACHE_KEYS = ("eventsPath", "issuesPath", "eventStreamRef", "snapshotRef")
_U64_MAX = 2**64 - 1


def replay_cache_path(issues_path: str, cache: str | None) -> str:
    """`--cache` as given; else `replay-cache.json` beside the issues file, joined as Rust does."""
    if cache is not None:
        return cache
    parent = os.path.dirname(issues_path)
    return os.path.join(parent, REPLAY_CACHE_NAME) if parent else REPLAY_CACHE_NAME


def read_replay_cache(path: str) -> ReplayCacheEntry | None:
    """The cache entry, or None for any miss: absent, unreadable, unparsable, wrong schema."""
    try:
        with open(path, "rb") as handle:
            document = orjson.loads(handle.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    if type(document) is not dict or document.get("schema") != REPLAY_CACHE_SCHEMA:
        return None
    values = [document.get(key) for key in _CACHE_KEYS]
    counts = [document.get("eventCount"), document.get("issueCount")]
    if any(type(value) is not str for value in values):
        return None
    if any(type(count) is not int or not 0 <= count <= _U64_MAX for count in counts):
        return None
    return ReplayCacheEntry(*values, *counts)  # type: ignore[arg-type]


def replay_cache_bytes(entry: ReplayCacheEntry) -> bytes:
    """serde's `to_vec_pretty` of the entry: struct order, 2-space indent, no final newline."""
    document = {
        "schema": REPLAY_CACHE_SCHEMA,
        "eventsPath": entry.events_path,
        "issuesPath": entry.issues_path,
        "eventStreamRef": entry.event_stream_ref,
        "snapshotRef": entry.snapshot_ref,
        "eventCount": entry.event_count,
        "issueCount": entry.issue_count,
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2)


def make_parent_folder(path: str, label: str) -> None:
    """Create the folders above `path`; IoFailure `failed to create <label> directory ...`."""
    parent = os.path.dirname(path)
    if parent:
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise IoFailure(
                f"failed to create {label} directory {parent}: {os_error_text(exc)}"
            ) from None


def write_replay_cache(path: str, entry: ReplayCacheEntry) -> None:
    """Write the cache atomically (the reference writes in place), creating its folders."""
    make_parent_folder(path, "replay cache")
    try:
        write_atomic(path, replay_cache_bytes(entry))
    except OSError as exc:
        raise IoFailure(f"failed to write replay cache {path}: {os_error_text(exc)}") from None
