"""Lock markers with the reference's shape: `<path>.lock` created exclusively, removed on release.

The reference (issue memory) only tests whether the marker exists; it writes `pid=<pid>` and
`utc=<time>` lines into it. Ours writes the same two lines first, then who we are precisely
enough to be judged from another process (`host=`, `boot=`, `pidns=`, `start=`; see
`store/owners.py`), so both tools can share one store. Ours adds what the reference lacks:
- a configurable, finite timeout with a clear error;
- recovery of a marker whose owner is provably ours and dead (same host, boot and PID
  namespace; no such process, a zombie, or a reused pid). A marker we cannot judge (the
  reference's two lines, a writer in another container, an empty marker) is never broken: we
  wait for it until the timeout, then say how to remove it by hand. Recovery is serialised by a
  second marker (`<lock>.break`) and the judgement repeated while holding it, so two processes
  can never both break one marker and delete a lock taken in between;
- polling every 2 ms, the reference's interval, with no back-off;
- waiters queued by ticket, served in arrival order (`_Queue`).
Why this and not filelock: docs/architecture.md "Dependencies".
"""

import contextlib
import errno
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from premath.clock import SystemClock, epoch_ns
from premath.errors import InvalidUsage, IoFailure, LockBusy
from premath.store.files import write_all
from premath.store.owners import Owner, OwnerState, owner_state, this_process
from premath.timefmt import format_seconds_z

DEFAULT_LOCK_TIMEOUT_S = 10.0
LOCK_TIMEOUT_ENV = "PREMATH_LOCK_TIMEOUT_SECONDS"
_POLL_S = 0.002
_HEAD_PATIENCE_S = 1.0
_JUDGE_EVERY_POLLS = 16
"""Reading the marker and /proc each poll would cost more than the poll; every 32 ms suffices."""


def lock_timeout_from_env() -> float:
    """The lock timeout in seconds: PREMATH_LOCK_TIMEOUT_SECONDS, else the default.

    Refused unless a finite number of seconds, zero or more: `inf` or `nan` would wait forever,
    and a typo must not silently mean the default.
    """
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InvalidUsage(
            f"{LOCK_TIMEOUT_ENV} must be a finite number of seconds (0 or more), got {raw!r}"
        )
    return value


def marker_text(owner: Owner, utc: str) -> str:
    """A marker's contents: the reference's two lines, then the facts that let us judge it."""
    return (
        f"pid={owner.pid}\nutc={utc}\n"
        f"host={owner.host}\nboot={owner.boot}\npidns={owner.pidns}\nstart={owner.start}\n"
    )


def marker_owner(marker: Path) -> Owner | None:
    """The owner a marker records, or None when it does not say enough (reference, empty)."""
    try:
        text = marker.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = dict(line.partition("=")[::2] for line in text.splitlines())
    try:
        return Owner(
            fields["host"], fields["boot"], fields["pidns"], int(fields["pid"]), fields["start"]
        )
    except (KeyError, ValueError):
        return None


def _state(marker: Path) -> OwnerState:
    owner = marker_owner(marker)
    return "unknown" if owner is None else owner_state(owner)


class _Claim:
    """A marker's contents written once to a private file, then published by `link(2)`.

    `link` fails if the name exists, exactly as the reference's O_CREAT|O_EXCL does, but the
    marker appears with its contents already in it: a writer killed at any moment never leaves
    an empty marker that nobody could judge. The private file
    (`.<marker>.<pid>.<ns>.claim`) is removed when the claim ends; one left by a killed process
    is swept by the next holder (`_Queue.sweep`). Filesystems without hard links fall back to
    O_CREAT|O_EXCL and a write.
    """

    def __init__(self, marker: Path) -> None:
        self.marker = marker
        self.text = marker_text(this_process(), format_seconds_z(SystemClock().now())).encode()
        self.private: Path | None = marker.with_name(
            f".{marker.name}.{os.getpid()}.{epoch_ns()}.claim"
        )
        self._write_private()

    def _write_private(self) -> None:
        assert self.private is not None
        fd = os.open(self.private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            write_all(fd, self.text)
        finally:
            os.close(fd)

    def take(self) -> bool:
        """Create the marker if it does not exist; False if it does."""
        return self.publish(self.marker)

    def publish(self, name: Path) -> bool:
        """Create `name` holding the contents if it does not exist; False if it does."""
        if self.private is not None:
            try:
                os.link(self.private, name)
            except FileExistsError:
                return False
            except FileNotFoundError:  # swept by another process: write it again, retry
                self._write_private()
                return self.publish(name)
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
                self.close()
            else:
                return True
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            write_all(fd, self.text)
        finally:
            os.close(fd)
        return True

    def close(self) -> None:
        if self.private is not None:
            self.private.unlink(missing_ok=True)
            self.private = None


_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV}
"""What a filesystem without hard links answers."""
_ORPHAN_CLAIM_AGE_S = 2.0


@contextlib.contextmanager
def _claim(marker: Path) -> Iterator[_Claim]:
    claim = _Claim(marker)
    try:
        yield claim
    finally:
        claim.close()


def _older_than(path: Path, seconds: float = _ORPHAN_CLAIM_AGE_S) -> bool:
    try:
        return epoch_ns() / 1e9 - path.stat().st_mtime > seconds
    except OSError:
        return False


class _Queue:
    """Waiters' tickets beside the marker, so premath writers are served in arrival order.

    Each waiter publishes `.<marker>.<epoch ns>.<pid>.wait` (the marker's contents, so it can be
    judged) and tries the marker only while no live ticket is older than its own. Tickets are
    advisory: the marker alone is the lock, and the reference (which polls the marker) competes
    as before. A dead ticket is removed; one we cannot judge (another host or container) is not
    waited for. Without it, a waiter polling every 2 ms could lose race after race to newer
    arrivals: under 16 writers one call waited 30 s while the median waited 3.
    """

    def __init__(self, marker: Path, claim: _Claim) -> None:
        self.marker = marker
        self.folder = marker.parent
        self.prefix = f".{marker.name}."
        self.ticket = marker.with_name(f"{self.prefix}{epoch_ns():020d}.{os.getpid()}.wait")
        self.queued = claim.publish(self.ticket)
        self._head: tuple[str, float] | None = None

    def _tickets(self) -> list[str]:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(n for n in names if n.startswith(self.prefix) and n.endswith(".wait"))

    def my_turn(self) -> bool:
        """True unless a live waiter that arrived before us is still waiting."""
        if not self.queued:
            return True
        for name in self._tickets():
            if name == self.ticket.name:
                return True
            state = _state(self.folder / name)
            if state == "dead":
                (self.folder / name).unlink(missing_ok=True)
            elif state == "alive" and not self._stuck(name):
                return False
        return True  # our ticket is gone (removed by hand): the marker still decides

    def _stuck(self, name: str) -> bool:
        """A live waiter ahead that has not taken a free marker for `_HEAD_PATIENCE_S`: stopped
        (SIGSTOP) or starved; we stop waiting for it, so one waiter can never block the rest."""
        now = time.monotonic()
        if self._head is None or self._head[0] != name:
            self._head = (name, now)
            return False
        return now - self._head[1] > _HEAD_PATIENCE_S and not self.marker.exists()

    def sweep(self) -> None:
        """Remove the tickets and private claim files of processes that were killed: owner
        provably dead, or (a claim file cut short by the kill) unreadable and old. Removing a
        live process's claim file only makes it write the file again."""
        for name in self._tickets():
            if _state(self.folder / name) == "dead":
                (self.folder / name).unlink(missing_ok=True)
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for name in names:
            if name.startswith(self.prefix) and name.endswith(".claim"):
                claim = self.folder / name
                state = _state(claim)
                if state == "dead" or (state == "unknown" and _older_than(claim)):
                    claim.unlink(missing_ok=True)

    def close(self) -> None:
        if self.queued:
            self.ticket.unlink(missing_ok=True)
            self.queued = False


def _report(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def _break_if_dead(marker: Path, report: Callable[[str], None]) -> bool:
    """Remove `marker` if its owner is provably dead, judged again under the breaker marker.

    False when another process holds the breaker: the caller waits (and honours its deadline)
    instead of spinning until that breaker is released or, if its owner died, is broken too.
    """
    breaker = marker.with_name(marker.name + ".break")
    with _claim(breaker) as claim:
        taken = claim.take()
    if not taken:
        if _state(breaker) == "dead":
            breaker.unlink(missing_ok=True)
        return False
    try:
        owner = marker_owner(marker)
        if owner is not None and owner_state(owner) == "dead":
            marker.unlink(missing_ok=True)
            report(
                f"removed stale lock {marker} left by process {owner.pid} that is no longer running"
            )
    finally:
        breaker.unlink(missing_ok=True)
    return True


def _unjudged_hint(marker: Path) -> str:
    owner = marker_owner(marker)
    who = (
        f"process {owner.pid} on host {owner.host} in another PID namespace or boot"
        if owner is not None
        else "a writer that did not record its host and PID namespace (the reference, or an "
        "older premath)"
    )
    return (
        f"; the lock was taken by {who}, which cannot be checked from here: if no process "
        f"uses this store any more, remove {marker} by hand"
    )


@contextlib.contextmanager
def hold_marker(
    marker: str | os.PathLike[str],
    *,
    timeout_s: float,
    busy_message: str | None = None,
    report: Callable[[str], None] = _report,
) -> Iterator[None]:
    """Hold `marker` for the block: create it exclusively, remove it afterwards, even on error."""
    path = Path(marker)
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout_s
    try:
        _wait_for(path, deadline, timeout_s, busy_message, report)
    except OSError as exc:
        raise IoFailure(f"failed to create lock {path}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _wait_for(
    path: Path,
    deadline: float,
    timeout_s: float,
    busy_message: str | None,
    report: Callable[[str], None],
) -> None:
    """Take `path` in our turn, polling every 2 ms; break it if provably dead; LockBusy at the
    deadline."""
    with _claim(path) as claim:
        queue = _Queue(path, claim)
        try:
            _wait_in_turn(path, claim, queue, deadline, timeout_s, busy_message, report)
        finally:
            queue.close()
        queue.sweep()


def _wait_in_turn(
    path: Path,
    claim: _Claim,
    queue: _Queue,
    deadline: float,
    timeout_s: float,
    busy_message: str | None,
    report: Callable[[str], None],
) -> None:
    polls = 0
    while not (queue.my_turn() and claim.take()):
        judge = polls % _JUDGE_EVERY_POLLS == 0
        if judge and _state(path) == "dead" and _break_if_dead(path, report):
            continue
        polls += 1
        if time.monotonic() >= deadline:
            message = busy_message or (
                f"lock busy: {path} is held by another process (waited {timeout_s:g}s); "
                f"retry, or raise {LOCK_TIMEOUT_ENV}"
            )
            if path.exists() and _state(path) == "unknown":
                message += _unjudged_hint(path)
            raise LockBusy(message)
        time.sleep(_POLL_S)


def artifact_lock(
    path: str | os.PathLike[str], timeout_s: float
) -> contextlib.AbstractContextManager[None]:
    """The lock of one harness artifact: `<artifact>.lock`, a name the reference never uses."""
    return hold_marker(f"{os.fspath(path)}.lock", timeout_s=timeout_s)
