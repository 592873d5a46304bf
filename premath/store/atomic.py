"""Atomic document writes: a reader sees the old bytes or the new ones, never a mix.

Trade-offs: the temp file lives in the target's folder (same filesystem, so `os.replace` is
atomic) and is created with O_EXCL and mode 0o666, so the umask gives the same file mode as the
reference's plain `fs::write`. The folder is fsynced after the rename so the new name survives a
power cut. The temp file is unlinked on any exception; a SIGKILL between create and rename can
still leave one, so its name carries the writer's pid and the next write sweeps those of dead
writers (ours, `.<name>.tmp.<pid>.<ns>`, and the reference's issues-file temps,
`<name>.tmp.<pid>.<ns>`): users commit `.premath/`, and stray files would show up in
`git status`.
"""

import contextlib
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from premath.clock import epoch_ns
from premath.store.files import write_all
from premath.store.owners import pid_alive

if TYPE_CHECKING:  # pathlib stays off the import path of hot writers (start-up budget)
    from pathlib import Path


def fsync_directory(directory: "str | os.PathLike[str]") -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_prefix(target: str) -> str:
    return f".{os.path.basename(target)}.tmp."


def sweep_orphan_temps(target: "str | os.PathLike[str]") -> None:
    """Remove temp files of `target` (ours and the reference's) left by writers that no longer
    run; only names whose pid part is a number, never our own pid."""
    target = os.fspath(target)
    parent = os.path.dirname(target) or "."
    ours = _temp_prefix(target)
    theirs = ours[1:]
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for name in entries:
        if not name.startswith((ours, theirs)):
            continue
        pid_text = name[len(ours if name.startswith(ours) else theirs) :].partition(".")[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not pid_alive(int(pid_text)):
            _unlink(os.path.join(parent, name))


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data` atomically, creating parent folders as the reference does."""
    write_atomic_chunks(path, (data,))


def write_atomic_chunks(
    path: str | os.PathLike[str],
    chunks: Iterable[bytes],
    before_replace: "Callable[[Path], None] | None" = None,
) -> None:
    """`write_atomic` of the concatenated chunks, produced while writing (bounded memory).

    `before_replace` sees the complete temp file before it takes the name; raising there
    leaves `path` as it was.
    """
    target = os.fspath(path)
    parent = os.path.dirname(target) or "."
    os.makedirs(parent, exist_ok=True)
    sweep_orphan_temps(target)
    temp = os.path.join(parent, f"{_temp_prefix(target)}{os.getpid()}.{epoch_ns()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            for chunk in chunks:
                write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            from pathlib import Path

            before_replace(Path(temp))
        os.replace(temp, target)
    except BaseException:
        _unlink(temp)
        raise
    fsync_directory(parent)
