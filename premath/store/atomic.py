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

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable

from premath.clock import epoch_ns
from premath.store.files import write_all
from premath.store.owners import pid_alive

TYPE_CHECKING = False
if TYPE_CHECKING:  # pathlib stays off the import path of hot writers (start-up budget)
    from pathlib import Path


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_prefix(target: str) -> str:
    return f".{os.path.basename(target)}.tmp."


def sweep_orphan_temps(target: str | os.PathLike[str]) -> None:
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


def write_atomic(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data` atomically, creating parent folders as the reference does.
    `durable=False` skips both fsyncs: still all-or-nothing for readers and a killed process,
    but a power cut may lose the write (for files another fsynced write makes redundant: a
    cursor that may lag, evidence written just before its fsynced index row)."""
    write_atomic_chunks(path, (data,), durable=durable)


def write_atomic_chunks(
    path: str | os.PathLike[str],
    chunks: Iterable[bytes],
    before_replace: Callable[[Path], None] | None = None,
    *,
    durable: bool = True,
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
            if durable:
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
    if durable:
        fsync_directory(parent)


class StagedWriteFailed(Exception):
    """`write_atomic_together` failed on file `index`; no file took new bytes unless
    `published` says how many already had (a rename failing after the first succeeded)."""

    def __init__(self, index: int, error: OSError, published: int) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error
        self.published = published


def stage_file(target: str, data: bytes, *, mode: int = 0o666) -> str:
    """A new temp file beside `target` holding `data`, fsynced (removed if that fails), for
    the caller to give its name to `target`; named so `sweep_orphan_temps` finds it."""
    temp = os.path.join(
        os.path.dirname(target) or ".", f"{_temp_prefix(target)}{os.getpid()}.{epoch_ns()}"
    )
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink(temp)
        raise
    return temp


def write_atomic_together(files: list[tuple[str, bytes]]) -> None:
    """Give several files their new bytes so that a failure leaves them all as they were.

    Every temp file is written and fsynced before any takes its name, so a full disk, a missing
    permission or a target that is a directory changes nothing; parent folders are created only
    once every target has been checked. Only a rename failing after an earlier one succeeded
    (which needs the folder to change under us) can publish part of the set.
    """
    targets = [os.fspath(path) for path, _ in files]
    for index, target in enumerate(targets):
        if os.path.isdir(target):
            raise StagedWriteFailed(index, IsADirectoryError(21, os.strerror(21)), 0)
        ancestor = os.path.dirname(os.path.abspath(target))
        while not os.path.exists(ancestor) and ancestor != os.path.dirname(ancestor):
            ancestor = os.path.dirname(ancestor)
        if not os.path.isdir(ancestor):
            raise StagedWriteFailed(index, NotADirectoryError(20, os.strerror(20)), 0)
    staged: list[str] = []
    try:
        for index, (target, (_, data)) in enumerate(zip(targets, files, strict=True)):
            try:
                os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                sweep_orphan_temps(target)
                staged.append(stage_file(target, data))
            except OSError as exc:
                raise StagedWriteFailed(index, exc, 0) from exc
        for index, (temp, target) in enumerate(zip(staged, targets, strict=True)):
            try:
                os.replace(temp, target)
            except OSError as exc:
                raise StagedWriteFailed(index, exc, index) from exc
    finally:
        for temp in staged:
            _unlink(temp)
    for folder in {os.path.dirname(target) or "." for target in targets}:
        fsync_directory(folder)
