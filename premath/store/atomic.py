"""Atomic document writes: a reader sees the old bytes or the new ones, never a mix.

Trade-offs: the temp file lives in the target's folder (same filesystem, so `os.replace` is
atomic) and is created with O_EXCL and mode 0o666, so the umask gives the same file mode as the
reference's plain `fs::write`. The folder is fsynced after the rename so the new name survives a
power cut; a crash before the rename leaves the old file and, at worst, nothing else: the temp
file is unlinked on any exception, and its name says which process made it.
"""

import os
from pathlib import Path

from premath.clock import epoch_ns


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data` atomically, creating parent folders as the reference does."""
    target = Path(path)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    temp = parent / f".{target.name}.tmp.{os.getpid()}.{epoch_ns()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_directory(parent)
