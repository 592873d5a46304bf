"""Whole-file I/O that hostile paths cannot stall: regular files only, bounded reads, full writes.

A path we read may name `/dev/zero` (endless bytes), a FIFO (a read that never returns) or a
file far larger than any artifact. Every read here opens without blocking, refuses anything but
a regular file, and reads at most `cap + 1` bytes, so a file over its cap is a clear error
rather than a MemoryError; it reserves only what the file holds, so a large cap costs nothing
under an address-space limit (`ulimit -v`). Caps are named settings (`ReadCaps`), overridable
by environment variable for the rare legitimate giant.
"""

from __future__ import annotations

import errno
import os
import stat

from premath.errors import InputInvalid, InvalidUsage, NotFound
from premath.lean import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

_MIB = 1 << 20


class ReadCap(NamedTuple):
    """One named size cap: `default` bytes unless the environment variable `env` says otherwise."""

    env: str
    default: int

    def bytes(self) -> int:
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default
        if not raw.isdigit() or int(raw) <= 0:
            raise InvalidUsage(f"{self.env} must be a positive number of bytes, got {raw!r}")
        return int(raw)


DOCUMENT_CAP = ReadCap("PREMATH_MAX_DOCUMENT_BYTES", 64 * _MIB)
"""JSON/YAML documents: session, ledger, policy, join-check input, ATIF, experiment files, notes."""
STORE_CAP = ReadCap("PREMATH_MAX_STORE_BYTES", 4096 * _MIB)
"""The issues file, read whole."""
LINE_CAP = ReadCap("PREMATH_MAX_LINE_BYTES", 64 * _MIB)
"""One line of a streamed JSONL file (trajectory, dataset, trials)."""


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> BinaryIO:
    """Open `path` for reading if it is a regular file; never blocks on a FIFO or device.

    A directory raises IsADirectoryError, as reading it would; anything else InputInvalid.
    Without `follow_symlinks`, a symlink as the last component raises OSError (ELOOP)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags if follow_symlinks else flags | os.O_NOFOLLOW)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):  # as reading it would fail: callers word this OSError already
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(mode):
            raise InputInvalid(
                f"{os.fspath(path)} is not a regular file ({file_kind(mode)}); give the path of "
                "a file"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_kind(mode: int) -> str:
    """What a file of this mode is, in words ("a FIFO", "a device", ...)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a file"


_GROWTH_BYTES = 1 << 20


def read_capped(handle: BinaryIO, limit: int) -> bytes:
    """What the open regular file holds, at most `limit + 1` bytes, never reserving the cap.

    A read of `limit + 1` bytes allocates that much before the first byte arrives (a 4 GiB
    store cap fails under a 1 GiB address-space limit, D26-5): the size comes from `fstat`,
    then the read grows by bounded steps while the file still gives bytes (it grew, or its
    size lies, as /proc files' does)."""
    size = os.fstat(handle.fileno()).st_size
    data = handle.read(min(size, limit) + 1)
    chunks = [data]
    total = len(data)
    while total <= limit:
        chunk = handle.read(min(max(total, _GROWTH_BYTES), limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return data if len(chunks) == 1 else b"".join(chunks)


def read_bounded(path: str | os.PathLike[str], cap: ReadCap = DOCUMENT_CAP) -> bytes:
    """The bytes of regular file `path`, refused past `cap` (reads at most cap + 1 bytes, and
    reserves only what the file holds: `read_capped`).

    OSError (missing, unreadable) propagates for the caller to name; InputInvalid otherwise.
    """
    limit = cap.bytes()
    with open_regular(path) as handle:
        data = read_capped(handle, limit)
    if len(data) > limit:
        raise InputInvalid(
            f"{os.fspath(path)} is larger than {limit} bytes; raise {cap.env} if it is meant to be"
        )
    return data


def read_bounded_text(path: str | os.PathLike[str], cap: ReadCap = DOCUMENT_CAP) -> str:
    """`read_bounded` decoded as UTF-8 (UnicodeDecodeError propagates)."""
    return read_bounded(path, cap).decode("utf-8")


def read_input_file(
    path: str | os.PathLike[str],
    cap: ReadCap,
    *,
    named: str | os.PathLike[str],
    what: str,
    expected: str,
) -> bytes:
    """`read_bounded` of an input file the user named `named` (`what`, e.g. "task file"):
    NotFound when it is missing; InputInvalid when it is a folder (pass `expected` instead)
    or cannot be read."""
    try:
        return read_bounded(path, cap)
    except FileNotFoundError:
        raise NotFound(f"{what} {named} does not exist") from None
    except IsADirectoryError:
        raise InputInvalid(f"{named} is a folder; pass {expected}") from None
    except OSError as exc:
        raise InputInvalid(f"cannot read {named}: {exc.strerror or exc}") from exc


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd` (a short write is continued; errors propagate)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
