"""What a lock marker says and how it appears: the reference's lines, then who we are.

The reference only tests whether a marker exists; it writes `pid=<pid>` and `utc=<time>` into
it. Ours writes the same two lines first, then `host=`, `boot=`, `pidns=` and `start=`
(`store/owners.py`), precisely enough to be judged from another process, so both tools can
share one store. The contents are written once to a private file and published by `link(2)`
(`Claim`); the queue's tickets (`store/lock_queue.py`) hold the same contents.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from premath.clock import SystemClock, epoch_ns
from premath.store.files import write_all
from premath.store.owners import Owner, owner_state, this_process
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.store.owners import OwnerState

_MARKER_READ_BYTES = 4096
"""A marker holds six short lines; what a longer one (or a FIFO, a device) says is not judged."""


def marker_text(owner: Owner, utc: str) -> str:
    """A marker's contents: the reference's two lines, then the facts that let us judge it."""
    return (
        f"pid={owner.pid}\nutc={utc}\n"
        f"host={owner.host}\nboot={owner.boot}\npidns={owner.pidns}\nstart={owner.start}\n"
    )


def marker_owner(marker: str | os.PathLike[str]) -> Owner | None:
    """The owner a marker records, or None when it does not say enough (the reference's, an
    empty or unreadable one). Reads a few KiB at most and never blocks (a FIFO)."""
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, _MARKER_READ_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data.decode("utf-8", errors="replace").splitlines()
    fields = dict(line.partition("=")[::2] for line in lines)
    try:
        return Owner(
            fields["host"], fields["boot"], fields["pidns"], int(fields["pid"]), fields["start"]
        )
    except (KeyError, ValueError):
        return None


def marker_state(marker: str | os.PathLike[str]) -> OwnerState:
    """Whether the owner a marker (or ticket, or claim file) records is alive, provably dead,
    or cannot be judged from here."""
    owner = marker_owner(marker)
    return "unknown" if owner is None else owner_state(owner)


class Claim:
    """A marker's contents written once to a private file, then published by `link(2)`.

    `link` fails if the name exists, exactly as the reference's O_CREAT|O_EXCL does, but the
    marker appears with its contents already in it: a writer killed at any moment never leaves
    an empty marker that nobody could judge. The private file (`.<marker>.<pid>.<ns>.claim`) is
    removed when the claim ends; one left by a killed process is swept after a later release
    (`lock_queue.sweep`). Filesystems without hard links fall back to O_CREAT|O_EXCL and a
    write.
    """

    def __init__(self, marker: str) -> None:
        self.marker = marker
        folder, name = os.path.split(marker)
        self.text = marker_text(this_process(), format_seconds_z(SystemClock().now())).encode()
        self.private: str | None = os.path.join(folder, f".{name}.{os.getpid()}.{epoch_ns()}.claim")

    def write_private(self) -> None:
        assert self.private is not None
        fd = os.open(self.private, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            write_all(fd, self.text)
        finally:
            os.close(fd)

    def take(self) -> bool:
        """Create the marker if it does not exist; False if it does."""
        return self.publish(self.marker)

    def publish(self, name: str) -> bool:
        """Create `name` holding the contents if it does not exist; False if it does."""
        if self.private is not None:
            try:
                os.link(self.private, name)
            except FileExistsError:
                return False
            except FileNotFoundError:  # swept by another process: write it again, retry
                self.write_private()
                return self.publish(name)
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
                self.close()
            else:
                return True
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            return False
        try:
            write_all(fd, self.text)
        finally:
            os.close(fd)
        return True

    def close(self) -> None:
        if self.private is not None:
            remove(self.private)
            self.private = None


_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV}
"""What a filesystem without hard links answers."""


@contextlib.contextmanager
def claim(marker: str) -> Iterator[Claim]:
    """A `Claim` on `marker` whose private file is removed when the block ends, however it ends:
    the file is written inside the block, so Ctrl-C or SIGTERM while it is being created still
    removes it (its name is known before it exists)."""
    held = Claim(marker)
    try:
        held.write_private()
        yield held
    finally:
        held.close()


def remove(path: str) -> None:
    """Unlink `path` if it still exists."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
