"""Waiters' tickets beside a lock marker, so premath writers are served in arrival order.

Each waiter publishes `.<marker>.<epoch ns>.<pid>.wait` (the marker's contents, so it can be
judged) and tries the marker only while no live ticket is older than its own. Tickets are
advisory: the marker alone is the lock, and the reference (which polls the marker) competes as
before. Without them, a waiter polling every 2 ms could lose race after race to newer arrivals:
under 16 writers one call waited 30 s while the median waited 3.

Waiting is cheap, because the waiters share the CPU the holder needs (16 writers on 2 cores): a
waiter lists the folder once, then a poll is a `stat` of the oldest ticket still ahead, and a
waiter further back polls less often in proportion to its place (`pause_s`). A
ticket in front is presumed live while the pid in its name exists (`kill(pid, 0)`) and judged
in full (its contents and /proc, `store/owners.py`) only once it has been in front for
`JUDGE_AFTER_S`: most are served sooner. The waiter right behind the head removes the head's
ticket when its owner is dead, or when it has left the free marker untaken for
`_HEAD_PATIENCE_S` (stopped by SIGSTOP, or starved), so one waiter never blocks the rest (once
resumed, that waiter still tries the marker as a head does: it has waited longest). A ticket
we cannot judge (another host or container) is not waited for.
"""

import math
import os
import time
from typing import NamedTuple

from premath.clock import epoch_ns
from premath.store.markers import Claim, marker_owner, marker_state, remove
from premath.store.owners import OwnerState, owner_state, pid_exists

_POLL_S = 0.002
_HEAD_POLL_S = 0.0005
_MAX_PAUSE_S = 0.032
_HEAD_PATIENCE_S = 1.0
_REJUDGE_S = 1.0
_SWEEP_EVERY_S = 5.0
JUDGE_AFTER_S = 0.032
"""A marker or ticket in front of a waiter is judged in full only once it has been there this
long (reading it and /proc costs more than many polls)."""


class _Seen(NamedTuple):
    pid: int
    state: OwnerState
    judge_at: float
    """When to judge the ticket in full (again)."""


def _ticket_pid(ticket: str) -> int:
    """The pid a ticket's name carries (`....<ns>.<pid>.wait`), 0 if it carries none."""
    digits = ticket.removesuffix(".wait").rpartition(".")[2]
    return int(digits) if digits.isdigit() else 0


class TicketQueue:
    """Our ticket in the queue of `marker`, and how many live waiters are ahead of it."""

    def __init__(self, marker: str, claim: Claim) -> None:
        self.marker = marker
        self.folder = os.path.dirname(marker) or "."
        self.prefix = f".{os.path.basename(marker)}."
        self.ticket = os.path.join(
            self.folder, f"{self.prefix}{epoch_ns():020d}.{os.getpid()}.wait"
        )
        self.queued = claim.publish(self.ticket)
        self._seen: dict[str, _Seen] = {}
        self._free: tuple[str, float | None] = ("", None)
        self._ahead: list[str] | None = None

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

    def waiting_ahead(self, now: float) -> int:
        """How many waiters that arrived before us still wait (0: our turn).

        No ticket older than ours can appear, and waiters leave oldest first: the folder is
        listed once, then a poll is a `stat` of the oldest ticket still ahead."""
        if not self.queued:
            return 0
        ahead = self._ahead
        if ahead is None:
            ahead = self._ahead = self._tickets_ahead()
        while ahead and not os.path.exists(ahead[0]):
            del ahead[0]
        while ahead and (state := self._state(ahead[0], now)) != "alive":
            if state == "dead":
                remove(ahead[0])
            del ahead[0]
        if len(ahead) == 1 and self._head_stuck(ahead[0], now):
            remove(ahead[0])
            del ahead[0]
        return len(ahead)

    def _state(self, ticket: str, now: float) -> OwnerState:
        """The state of a ticket's owner: presumed alive while its pid exists, judged in full
        after `JUDGE_AFTER_S` in front of us and every `_REJUDGE_S` after that."""
        seen = self._seen.get(ticket)
        if seen is None:
            seen = self._seen[ticket] = _Seen(_ticket_pid(ticket), "alive", now + JUDGE_AFTER_S)
        if seen.state == "dead":
            return "dead"
        if now < seen.judge_at and (seen.state == "unknown" or pid_exists(seen.pid)):
            return seen.state
        owner = marker_owner(ticket)
        state: OwnerState = "unknown" if owner is None else owner_state(owner)
        self._seen[ticket] = _Seen(seen.pid, state, now + _REJUDGE_S)
        return state

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
        """Leave the queue (served, or given up)."""
        if self.queued:
            remove(self.ticket)
            self.queued = False


def pause_s(waiting_ahead: int) -> float:
    """How long a waiter sleeps between polls. The head tries the marker every 0.5 ms (the
    reference every 2 ms): a try is one failed `link`, and the sooner the head sees the marker
    gone, the less time the lock stands idle between two writers. A waiter further back can
    only be served after those ahead of it, so it looks again every 2 ms per place (at most
    every `_MAX_PAUSE_S`)."""
    if waiting_ahead == 0:
        return _HEAD_POLL_S
    return min(_POLL_S * waiting_ahead, _MAX_PAUSE_S)


_last_sweep: dict[str, float] = {}


def sweep(marker: str) -> None:
    """Remove the tickets of processes that were killed (owner provably dead), and every
    private claim file not provably alive: one cut short by a kill cannot be judged, and
    removing a live process's claim file only makes it write the file again.

    Run after a release (never under the lock), by each process at its first release of a
    marker and then at most every `_SWEEP_EVERY_S`: judging every file beside the marker costs
    more than a lock hand-off. Waiters remove dead tickets ahead of them meanwhile."""
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
        if not name.startswith(prefix):
            continue
        path = os.path.join(folder, name)
        if name.endswith(".wait"):
            if marker_state(path) == "dead":
                remove(path)
        elif name.endswith(".claim") and marker_state(path) != "alive":
            remove(path)
