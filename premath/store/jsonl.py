"""Append-only JSONL: whole-line appends under a lock; streaming readers that survive a torn tail.

A crash can leave the last line half written. Readers skip such a line (no `\\n` at the end and
not parseable) and report it once on stderr, never rewriting the file; any other malformed line is
an error naming `<path>:<line>`. Appends go through one `write(2)` of the whole line on an O_APPEND
descriptor while holding `<path>.lock`, then fsync, so concurrent appenders never interleave, and a
line is never glued onto an unterminated predecessor.
"""

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from premath.store.locks import hold_marker


@dataclass(frozen=True, slots=True)
class JsonlLine:
    number: int
    """1-based line number in the file, counting skipped lines."""
    text: bytes
    """The line without its `\\n` (and a trailing `\\r`)."""
    terminated: bool
    """False only for a last line with no `\\n`: possibly torn by a crash."""


def iter_lines(path: str | os.PathLike[str]) -> Iterator[JsonlLine]:
    """Stream the non-blank lines of a JSONL file; memory stays bounded by the longest line.

    An unterminated line is the end of the file as we found it: an append may be landing while
    we read, and whatever a later read returns is the rest of that line, never a new one.
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            terminated = raw.endswith(b"\n")
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
        "(a writer was interrupted); the file is left as it is\n"
    )


def _ends_without_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def append_line(path: str | os.PathLike[str], line: bytes, *, timeout_s: float) -> None:
    """Append one whole line (ending in `\\n`) under `<path>.lock`, durably."""
    target = Path(path)
    with hold_marker(f"{os.fspath(target)}.lock", timeout_s=timeout_s):
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            data = b"\n" + line if _ends_without_newline(fd) else line
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
