"""Descendants that left the process group: found, ended, and counted when a call ends.

Killing the child's process group misses a descendant that called `setsid()` or double-forked.
So premath makes itself the subreaper of everything it starts (`PR_SET_CHILD_SUBREAPER`, Linux):
an orphaned descendant is re-parented to us instead of to init, where we can still see it. At
the end of a call, `CallTree.end_remaining` kills what is left of the call:
- every process still in the leader's session (a `setpgid` escape keeps the session);
- every descendant seen while the call ran (`observe`, a /proc scan every few hundred ms);
- when no other call is in flight, every orphan re-parented to us that started after the
  leader, and its own descendants (with several calls in flight an orphan cannot be
  attributed, so only the first two apply). A child our host application started itself
  before the call is never touched; one it starts in another thread during a call could be.
Processes are matched by pid and start time, so a reused pid is never hit; orphans we killed are
reaped. Elsewhere than Linux (no /proc, no subreaper) nothing is found and the group kill is all.
A cgroup would be exact, but is rarely writable for an unprivileged CLI.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache

_PR_SET_CHILD_SUBREAPER = 36
OBSERVE_EVERY_S = 0.25

_in_flight_lock = threading.Lock()
_in_flight: set[int] = set()
"""Leader pids of calls in flight (0 while one is being spawned), never taken for orphans."""
_calls_in_flight = 0


@cache
def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (once); False where not possible."""
    if not os.path.exists("/proc/self/stat"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True, slots=True)
class _Process:
    pid: int
    ppid: int
    session: int
    start: str
    zombie: bool


def _processes() -> list[_Process]:
    found = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    text = handle.read().decode("ascii", errors="replace")
            except OSError:
                continue
            fields = text.rsplit(")", 1)[-1].split()
            if len(fields) > 19:
                found.append(
                    _Process(
                        int(name), int(fields[1]), int(fields[3]), fields[19], fields[0] == "Z"
                    )
                )
    return found


def _descendants(roots: set[int], processes: list[_Process]) -> set[int]:
    children: dict[int, list[int]] = {}
    for process in processes:
        children.setdefault(process.ppid, []).append(process.pid)
    seen, stack = set(roots), list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


@dataclass
class CallTree:
    """The processes one call started, as far as /proc lets us tell."""

    leader: int
    known: dict[int, str] = field(default_factory=dict)
    """pid -> start time of every descendant seen while the call ran."""
    leader_start: int = 0
    """The leader's start time (clock ticks since boot); 0 when unknown."""

    def __post_init__(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{self.leader}/stat", "rb") as handle:
                fields = handle.read().decode("ascii", errors="replace").rsplit(")", 1)[-1]
            self.leader_start = int(fields.split()[19])

    def observe(self) -> None:
        processes = _processes()
        by_pid = {process.pid: process for process in processes}
        for pid in _descendants({self.leader, *self.known}, processes):
            if pid != self.leader and pid in by_pid:
                self.known.setdefault(pid, by_pid[pid].start)

    def end_remaining(self) -> int:
        """Kill what is left of the call; the number of processes that were still running."""
        processes = _processes()
        ours, me = os.getpid(), os.getpid()
        roots = {p.pid for p in processes if p.session == self.leader and p.pid != self.leader}
        roots |= {p.pid for p in processes if self.known.get(p.pid) == p.start}
        with _in_flight_lock:
            alone = _calls_in_flight <= 1
            leaders = set(_in_flight)
        if alone and self.leader_start:
            roots |= {
                p.pid
                for p in processes
                if p.ppid == ours
                and p.pid not in leaders
                and p.pid != self.leader
                and int(p.start) >= self.leader_start
            }
        targets = _descendants(roots, processes) - {self.leader, me}
        running = [p for p in processes if p.pid in targets and not p.zombie]
        for process in running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)
        for process in processes:
            if process.pid in targets and process.ppid == ours:  # adopted orphans we ended
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(process.pid, 0)
        return len(running)


@contextlib.contextmanager
def call_in_flight() -> Iterator[list[int]]:
    """Count a call as in flight from before its spawn; append the leader's pid once known."""
    global _calls_in_flight
    leader: list[int] = []
    with _in_flight_lock:
        _calls_in_flight += 1
    try:
        yield leader
    finally:
        with _in_flight_lock:
            _calls_in_flight -= 1
            for pid in leader:
                _in_flight.discard(pid)


def register_leader(slot: list[int], pid: int) -> None:
    with _in_flight_lock:
        _in_flight.add(pid)
    slot.append(pid)
