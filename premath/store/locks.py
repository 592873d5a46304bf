"""Lock markers with the reference's shape: `<path>.lock` created exclusively, removed on release.

The marker's contents and how it is published are `store/markers.py`; the ticket queue that
serves premath waiters in arrival order is `store/lock_queue.py`. Ours adds what the reference
lacks:
- a configurable, finite timeout with a clear error;
- recovery of a marker whose owner is provably ours and dead (same host, boot and PID
  namespace; no such process, a zombie, or a reused pid). A marker we cannot judge (the
  reference's two lines, a writer in another container, an empty marker) is never broken: we
  wait for it until the timeout, then say how to remove it by hand. Recovery is serialised by a
  second marker (`<lock>.break`) and the judgement repeated while holding it, so two processes
  can never both break one marker and delete a lock taken in between;
- waiters queued by ticket and served in arrival order, asleep in the kernel (a blocking
  `flock` on the ticket ahead) until their turn; the holder keeps its ticket locked until it
  has released the marker, so the next waiter wakes when the marker is free.
Why this and not filelock: docs/architecture.md "Dependencies".
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator

from premath.errors import InvalidUsage, IoFailure, LockBusy
from premath.lean import NamedTuple
from premath.store.lock_queue import JUDGE_AFTER_S, TicketQueue, head_pause_s, sweep, wake_every_s
from premath.store.markers import Claim, claim, marker_owner, marker_state, remove
from premath.store.owners import owner_state

DEFAULT_LOCK_TIMEOUT_S = 10.0
LOCK_TIMEOUT_ENV = "PREMATH_LOCK_TIMEOUT_SECONDS"


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


def _report(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def _break_if_dead(marker: str, report: Callable[[str], None]) -> bool:
    """Remove `marker` if its owner is provably dead, judged again under the breaker marker.

    False when another process holds the breaker: the caller waits (and honours its deadline)
    instead of spinning until that breaker is released or, if its owner died, is broken too.
    """
    breaker = f"{marker}.break"
    with claim(breaker) as held:
        taken = held.take()
    if not taken:
        if marker_state(breaker) == "dead":
            remove(breaker)
        return False
    try:
        owner = marker_owner(marker)
        if owner is not None and owner_state(owner) == "dead":
            remove(marker)
            report(
                f"removed stale lock {marker} left by process {owner.pid} that is no longer running"
            )
    finally:
        remove(breaker)
    return True


def _unjudged_hint(marker: str) -> str:
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
    on_turn: Callable[[], None] | None = None,
) -> Iterator[None]:
    """Hold `marker` for the block: create it exclusively, remove it afterwards, even on error.

    `on_turn` runs once if we are next in line while another process still holds the marker:
    work that needs no lock (reading what the holder's predecessors wrote) done then is not
    done under the lock, where every waiter waits for it.
    """
    path = os.fspath(marker)
    folder = os.path.dirname(path)
    if folder and not os.path.isdir(folder):
        os.makedirs(folder, exist_ok=True)
    wait = _Wait(path, time.monotonic() + timeout_s, timeout_s, busy_message, report, on_turn)
    queue: TicketQueue | None = None
    try:
        try:
            with claim(path) as held:
                queue = TicketQueue(path, held.text)
                wait.until_taken(held, queue)
        except OSError as exc:
            raise IoFailure(f"failed to create lock {path}: {exc.strerror or exc}") from exc
        try:
            yield
        finally:
            remove(path)
            queue.close()  # after the marker: the next waiter wakes to a free marker
            sweep(path)
    finally:
        if queue is not None:
            queue.close()


class _Wait(NamedTuple):
    """One waiter's terms: the marker, when to give up, and what to say or do meanwhile."""

    path: str
    deadline: float
    timeout_s: float
    busy_message: str | None
    report: Callable[[str], None]
    on_turn: Callable[[], None] | None

    def until_taken(self, held: Claim, queue: TicketQueue) -> None:
        """Sleep behind the waiter ahead until our turn, then take the marker; break it if
        provably dead; LockBusy at the deadline. The head judges the marker's owner after
        `JUDGE_AFTER_S` and as often after that; every waiter judges it at its deadline."""
        judge_at = math.inf
        on_turn = self.on_turn
        while True:
            now = time.monotonic()
            ahead = queue.ahead(now)
            late = now >= self.deadline
            if ahead and not late:
                if len(ahead) == 1 and on_turn is not None:
                    on_turn()  # next in line: the holder's writes can be read meanwhile
                    on_turn = None
                    continue
                queue.sleep_behind(ahead[-1], min(wake_every_s(), self.deadline - now))
                continue
            if not ahead and held.take():
                return
            if on_turn is not None:
                on_turn()
                on_turn = None
                continue
            if judge_at == math.inf:
                judge_at = now + JUDGE_AFTER_S
            if late or now >= judge_at:
                judge_at = now + JUDGE_AFTER_S
                if marker_state(self.path) == "dead" and _break_if_dead(self.path, self.report):
                    continue
            if late:
                raise LockBusy(self._busy())
            time.sleep(min(head_pause_s(), self.deadline - now))

    def _busy(self) -> str:
        message = self.busy_message or (
            f"lock busy: {self.path} is held by another process (waited {self.timeout_s:g}s); "
            f"retry, or raise {LOCK_TIMEOUT_ENV}"
        )
        if os.path.exists(self.path) and marker_state(self.path) == "unknown":
            message += _unjudged_hint(self.path)
        return message


def artifact_lock(
    path: str | os.PathLike[str], timeout_s: float
) -> contextlib.AbstractContextManager[None]:
    """The lock of one harness artifact: `<artifact>.lock`, a name the reference never uses."""
    return hold_marker(f"{os.fspath(path)}.lock", timeout_s=timeout_s)
