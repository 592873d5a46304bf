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

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from premath.clock import epoch_ns
from premath.store.files import write_all
from premath.store.owners import pid_alive


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_prefix(target: Path) -> str:
    return f".{target.name}.tmp."


def sweep_orphan_temps(target: Path) -> None:
    """Remove temp files of `target` (ours and the reference's) left by writers that no longer
    run; only names whose pid part is a number, never our own pid."""
    ours = _temp_prefix(target)
    theirs = ours[1:]
    try:
        entries = os.listdir(target.parent)
    except OSError:
        return
    for name in entries:
        if not name.startswith((ours, theirs)):
            continue
        pid_text = name[len(ours if name.startswith(ours) else theirs) :].partition(".")[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not pid_alive(int(pid_text)):
            (target.parent / name).unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data` atomically, creating parent folders as the reference does."""
    write_atomic_chunks(path, (data,))


def write_atomic_chunks(
    path: str | os.PathLike[str],
    chunks: Iterable[bytes],
    before_replace: Callable[[Path], None] | None = None,
) -> None:
    """`write_atomic` of the concatenated chunks, produced while writing (bounded memory).

    `before_replace` sees the complete temp file before it takes the name; raising there
    leaves `path` as it was.
    """
    target = Path(path)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    sweep_orphan_temps(target)
    temp = parent / f"{_temp_prefix(target)}{os.getpid()}.{epoch_ns()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            for chunk in chunks:
                write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace(temp)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_directory(parent)


class StagedWriteFailed(Exception):
    """`write_atomic_together` failed on file `index`; no file took new bytes unless
    `published` says how many already had (a rename failing after the first succeeded)."""

    def __init__(self, index: int, error: OSError, published: int) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error
        self.published = published


def _stage(target: Path, data: bytes) -> Path:
    temp = target.parent / f"{_temp_prefix(target)}{os.getpid()}.{epoch_ns()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def write_atomic_together(files: list[tuple[str, bytes]]) -> None:
    """Give several files their new bytes so that a failure leaves them all as they were.

    Every temp file is written and fsynced before any takes its name, so a full disk, a missing
    permission or a target that is a directory changes nothing; parent folders are created only
    once every target has been checked. Only a rename failing after an earlier one succeeded
    (which needs the folder to change under us) can publish part of the set.
    """
    targets = [Path(path) for path, _ in files]
    for index, target in enumerate(targets):
        if target.is_dir():
            raise StagedWriteFailed(index, IsADirectoryError(21, os.strerror(21)), 0)
        ancestor = target.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise StagedWriteFailed(index, NotADirectoryError(20, os.strerror(20)), 0)
    staged: list[Path] = []
    try:
        for index, (target, (_, data)) in enumerate(zip(targets, files, strict=True)):
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                sweep_orphan_temps(target)
                staged.append(_stage(target, data))
            except OSError as exc:
                raise StagedWriteFailed(index, exc, 0) from exc
        for index, (temp, target) in enumerate(zip(staged, targets, strict=True)):
            try:
                os.replace(temp, target)
            except OSError as exc:
                raise StagedWriteFailed(index, exc, index) from exc
    finally:
        for temp in staged:
            temp.unlink(missing_ok=True)
    for folder in {target.parent for target in targets}:
        fsync_directory(folder)
