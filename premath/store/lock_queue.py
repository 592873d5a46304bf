"""Waiters' tickets beside a lock marker: premath writers served in arrival order, asleep.

Each waiter publishes `.<marker>.<epoch ns>.<pid>.wait` (the marker's contents, so a person can
tell whose it is) holding `flock(LOCK_EX)` on it from before the name appears until it leaves
the queue, which it does after releasing the marker. A waiter sleeps in the kernel, in a
blocking `flock` on the ticket just ahead of its own: it wakes when that waiter is done, or the
moment that process dies (the kernel releases a dead process's locks), and costs no CPU
meanwhile. A ticket whose lock can be taken while its name still exists belongs to a process
that died: it is removed. Tickets are advisory: the marker alone is the lock, and the reference
(which polls the marker) competes as before; the head of the queue, with nothing ahead of it
but a marker held outside the queue, polls the marker as the reference does.

A sleeping waiter also wakes every `_WAKE_EVERY_S` (a timer, main thread only; other threads
poll the ticket ahead without blocking, a few ms apart): the waiter right behind the head removes
the head's ticket when the head leaves the free marker untaken for `_HEAD_PATIENCE_S` (stopped
by SIGSTOP, or starved), so one waiter never blocks the rest (once resumed, that waiter still
tries the marker as a head does: it has waited longest); and every waiter honours its deadline.
A filesystem without `flock` gives no queue: each waiter then polls the marker.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import time

from premath.clock import epoch_ns
from premath.lean import (
    ITIMER_REAL,
    SIG_DFL,
    SIG_IGN,
    SIGALRM,
    getitimer,
    getsignal,
    in_main_thread,
    setitimer,
    signal,
)
from premath.store.files import write_all
from premath.store.markers import marker_state, remove
from premath.store.owners import pid_exists

_POLL_S = 0.002
_MAX_POLL_S = 0.032
_HEAD_POLL_S = 0.002
_WAKE_EVERY_S = 0.25
_HEAD_PATIENCE_S = 1.0
_SWEEP_EVERY_S = 5.0
JUDGE_AFTER_S = 0.032
"""A marker in front of the head is judged in full (its contents and /proc) only once it has
been there this long (reading it costs more than many polls)."""

_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.EBADF}


class _Wake(Exception):
    """The timer that bounds one blocking `flock` went off."""


def try_lock(fd: int) -> bool:
    """Take `flock(LOCK_EX)` on `fd` if nobody holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _timer_usable() -> bool:
    """SIGALRM may bound a blocking call: main thread, no handler or timer of someone else's."""
    if not in_main_thread():
        return False
    handler = getsignal(SIGALRM)
    if handler not in (SIG_DFL, SIG_IGN, None):
        return False
    return getitimer(ITIMER_REAL)[0] == 0


def lock_within(fd: int, timeout_s: float) -> bool:
    """Take `flock(LOCK_EX)` on `fd`, sleeping in the kernel at most `timeout_s`; whether it
    was taken. Off the main thread (no timer to bound the call) it polls instead."""
    if timeout_s <= 0:
        return try_lock(fd)
    if not _timer_usable():
        end = time.monotonic() + timeout_s
        pause = _POLL_S
        while not try_lock(fd):
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, _MAX_POLL_S)
        return True

    def wake(_signum: int, _frame: object) -> None:
        raise _Wake

    previous = signal(SIGALRM, wake)
    try:
        setitimer(ITIMER_REAL, timeout_s)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except _Wake:
            return try_lock(fd)  # the timer may go off just after the lock was taken
        finally:
            setitimer(ITIMER_REAL, 0)
    except _Wake:  # went off between the flock and disarming the timer: the lock is ours
        return try_lock(fd)
    finally:
        signal(SIGALRM, previous)
    return True


def _ticket_gone(path: str, fd: int) -> bool:
    """Whether `path` no longer names the file open as `fd` (its owner left the queue)."""
    try:
        return os.stat(path).st_ino != os.fstat(fd).st_ino
    except FileNotFoundError:
        return True


def _open_ticket(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None


def ticket_is_dead(path: str) -> bool:
    """A ticket whose lock nobody holds while its name exists: its owner died."""
    fd = _open_ticket(path)
    if fd is None:
        return False
    try:
        return try_lock(fd) and not _ticket_gone(path, fd)
    except OSError:
        return False
    finally:
        os.close(fd)


class TicketQueue:
    """Our locked ticket in the queue of `marker`, and the sleep behind the one ahead of it."""

    def __init__(self, marker: str, text: bytes) -> None:
        self.marker = marker
        self.folder = os.path.dirname(marker) or "."
        self.prefix = f".{os.path.basename(marker)}."
        self.ticket = os.path.join(
            self.folder, f"{self.prefix}{epoch_ns():020d}.{os.getpid()}.wait"
        )
        self.fd = self._publish(text)
        self._free: tuple[str, float | None] = ("", None)

    @property
    def queued(self) -> bool:
        return self.fd is not None

    def _publish(self, text: bytes) -> int | None:
        """Lock and write the ticket under a private name, then rename it into the queue: it
        is never visible unlocked. None where the filesystem has no `flock`.

        A sweep may remove the private file in the instant between its creation and its lock
        (it looks abandoned then): the rename fails and we start again."""
        private = f"{self.ticket}.new"
        while True:
            fd = os.open(private, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                write_all(fd, text)
                os.rename(private, self.ticket)
            except FileNotFoundError:
                os.close(fd)
                continue
            except OSError as exc:
                os.close(fd)
                remove(private)
                if exc.errno in _NO_FLOCK:
                    return None
                raise
            except BaseException:
                os.close(fd)
                remove(private)
                raise
            return fd

    def _tickets_ahead(self) -> list[str]:
        """The paths of the tickets older than ours, oldest first."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        own, prefix = os.path.basename(self.ticket), self.prefix
        ahead = [n for n in names if n < own and n.startswith(prefix) and n.endswith(".wait")]
        ahead.sort()
        return [os.path.join(self.folder, name) for name in ahead]

    def ahead(self, now: float) -> list[str]:
        """The live waiters that arrived before us, oldest first ([]: our turn). Dead ones'
        tickets are removed; a head that leaves the free marker untaken is skipped."""
        if self.fd is None:
            return []
        ahead = [ticket for ticket in self._tickets_ahead() if not self._removed_if_dead(ticket)]
        if len(ahead) == 1 and self._head_stuck(ahead[0], now):
            remove(ahead[0])
            return []
        return ahead

    def _removed_if_dead(self, ticket: str) -> bool:
        if ticket_is_dead(ticket):
            remove(ticket)
            return True
        return False

    def sleep_behind(self, ticket: str, timeout_s: float) -> None:
        """Sleep in the kernel until the waiter of `ticket` is done or dies (its lock is
        released), at most `timeout_s`; a dead waiter's ticket is removed."""
        fd = _open_ticket(ticket)
        if fd is None:
            return
        try:
            if lock_within(fd, timeout_s) and not _ticket_gone(ticket, fd):
                remove(ticket)  # its lock was released while its name exists: it died
        finally:
            os.close(fd)

    def _head_stuck(self, head: str, now: float) -> bool:
        """Whether the live waiter at the head has left the marker free for `_HEAD_PATIENCE_S`
        (each time we looked)."""
        if os.path.exists(self.marker):
            self._free = (head, None)
            return False
        ticket, since = self._free
        if ticket != head or since is None:
            self._free = (head, now)
            return False
        return now - since > _HEAD_PATIENCE_S

    def close(self) -> None:
        """Leave the queue (served and done, or given up): the name goes before the lock, so a
        waiter woken by the lock never mistakes us for a dead waiter."""
        if self.fd is not None:
            remove(self.ticket)
            os.close(self.fd)
            self.fd = None


def wake_every_s() -> float:
    return _WAKE_EVERY_S


def head_pause_s() -> float:
    """How long the head sleeps between tries of a marker held outside the queue (the
    reference, or a writer of ours that is not queued): the reference's own 2 ms."""
    return _HEAD_POLL_S


def _named_pid(rest: str) -> int:
    """The pid a claim (`<pid>.<ns>.claim`) or ticket (`<ns>.<pid>.wait[.new]`) names; 0 when
    it names none."""
    parts = rest.split(".")
    digits = parts[0] if parts[-1] == "claim" else parts[1] if len(parts) > 2 else ""
    return int(digits) if digits.isdigit() else 0


_last_sweep: dict[str, float] = {}


def sweep(marker: str) -> None:
    """Remove the tickets of processes that died and every private file not provably alive
    (a claim or a ticket cut short by a kill cannot be judged; removing a live process's claim
    file only makes it write the file again). A file whose named pid still exists here is left
    for a later sweep: judging it costs a read of /proc, and every writer sweeps.

    Run after a release (never under the lock), by each process at its first release of a
    marker and then at most every `_SWEEP_EVERY_S`. Waiters remove dead tickets ahead of them
    meanwhile."""
    now = time.monotonic()
    if now - _last_sweep.get(marker, -math.inf) < _SWEEP_EVERY_S:
        return
    _last_sweep[marker] = now
    folder = os.path.dirname(marker) or "."
    prefix = f".{os.path.basename(marker)}."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix) or pid_exists(_named_pid(name[len(prefix) :])):
            continue  # its process still runs (a sweep runs after every short-lived release)
        path = os.path.join(folder, name)
        if name.endswith((".wait", ".wait.new")):
            if ticket_is_dead(path):
                remove(path)
        elif name.endswith(".claim") and marker_state(path) != "alive":
            with contextlib.suppress(OSError):
                remove(path)
