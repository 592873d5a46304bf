"""Append-only JSONL: whole-line appends under a lock; streaming readers that survive a torn tail.

A crash (SIGKILL mid-`write(2)`) can leave the last line half written. Readers skip such a line
(no `\\n` at the end and not parseable) and report it once on stderr, never rewriting the file;
any other malformed line is an error naming `<path>:<line>`.

Appends go through one `write(2)` of the whole line on an O_APPEND descriptor while holding
`<path>.lock`, then fsync, so concurrent appenders never interleave. Under that lock the
appender also keeps a torn tail from becoming permanent: an unterminated last line that parses
(a row the reference left without `\\n`) gets its `\\n`; one that does not parse is copied to a
quarantine file beside the log (`<name>.torn.<ns>`), cut off, and named in a warning. Without
this, the next row's leading `\\n` would turn the tail into a terminated malformed line that
every reader refuses forever. A short or failed write (full disk, RLIMIT_FSIZE) is rolled back
by truncating to the size before it, so a failed append leaves no partial row either.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator

from premath.clock import epoch_ns
from premath.errors import InputInvalid
from premath.lean import NamedTuple
from premath.store import json_codec
from premath.store.atomic import write_atomic
from premath.store.files import LINE_CAP, open_regular, write_all
from premath.store.json_codec import loads

_TAIL_CHUNK = 1 << 16


class JsonlLine(NamedTuple):
    number: int
    """1-based line number in the file, counting skipped lines."""
    text: bytes
    """The line without its `\\n` (and a trailing `\\r`)."""
    terminated: bool
    """False only for a last line with no `\\n`: possibly torn by a crash."""


def iter_lines(path: str | os.PathLike[str]) -> Iterator[JsonlLine]:
    """Stream the non-blank lines of a JSONL file; memory stays bounded by `LINE_CAP`.

    An unterminated line is the end of the file as we found it: an append may be landing while
    we read, and whatever a later read returns is the rest of that line, never a new one.
    """
    cap = LINE_CAP.bytes()
    with open_regular(path) as handle:
        number = 0
        while raw := handle.readline(cap + 1):
            number += 1
            terminated = raw.endswith(b"\n")
            if not terminated and len(raw) > cap:
                raise InputInvalid(
                    f"{os.fspath(path)}:{number}: line longer than {cap} bytes; "
                    f"raise {LINE_CAP.env} if it is meant to be"
                )
            text = raw[:-1] if terminated else raw
            if text.endswith(b"\r"):
                text = text[:-1]
            if text.strip():
                yield JsonlLine(number, text, terminated)
            if not terminated:
                return


def report_torn_tail(path: str | os.PathLike[str], line: JsonlLine) -> None:
    sys.stderr.write(
        f"warning: {os.fspath(path)}:{line.number}: skipped an incomplete last line "
        "(a writer was interrupted); the next append moves it to a quarantine file\n"
    )


def _unterminated_tail(fd: int, size: int) -> int:
    """Where the last line starts when the file does not end with `\\n`; `size` if it does."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def _parses(text: bytes) -> bool:
    try:
        loads(text)
    except json_codec.JSONDecodeError:
        return False
    return True


def _quarantine(target: str, fd: int, start: int, size: int) -> bytes:
    """Move the torn tail `[start, size)` to a file beside `target`; the bytes to write first."""
    tail = os.pread(fd, size - start, start)
    if _parses(tail.strip()):
        return b"\n"  # a whole row without its newline: keep it, end it
    quarantine = f"{target}.torn.{epoch_ns()}"
    write_atomic(quarantine, tail)
    os.ftruncate(fd, start)
    sys.stderr.write(
        f"warning: {target}: an incomplete last line ({len(tail)} bytes, left by an interrupted "
        f"writer) was moved to {quarantine}\n"
    )
    return b""


def sync_file(path: str | os.PathLike[str]) -> None:
    """fsync the file at `path`: makes every row appended with `sync=False` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_line(
    path: str | os.PathLike[str], line: bytes, *, timeout_s: float, sync: bool = True
) -> None:
    """Append one whole line (ending in `\\n`) under `<path>.lock`, durably, or nothing at all
    (OSError propagates after the rollback, for the caller to word). `sync=False` leaves the
    fsync to the caller's `sync_file` once a batch of rows is written (readers see each row
    at once either way)."""
    from premath.store.locks import hold_marker  # appenders only: readers start leaner

    target = os.fspath(path)
    with hold_marker(f"{target}.lock", timeout_s=timeout_s):
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputInvalid(f"{target} is not a regular file; cannot append to it")
            size = os.fstat(fd).st_size
            start = _unterminated_tail(fd, size)
            prefix = _quarantine(target, fd, start, size) if start < size else b""
            size = os.fstat(fd).st_size
            try:
                write_all(fd, prefix + line)
                if sync:
                    os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)  # a partial row must not stay behind
                raise
        finally:
            os.close(fd)


def parsed_rows(path: str | os.PathLike[str]) -> Iterator[object]:
    """Every line that parses as JSON, in file order; torn or malformed lines are skipped and a
    missing file has none. For logs whose readers take what they can use (a bench run's events,
    which a crashed run must still export)."""
    try:
        for line in iter_lines(path):
            try:
                yield loads(line.text)
            except json_codec.JSONDecodeError:
                continue
    except FileNotFoundError:
        return
