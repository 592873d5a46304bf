"""Who a process is, precisely enough to judge from another process whether it still runs.

A pid alone names a process only inside one PID namespace on one boot of one host: a writer in
another container sharing `.premath/` has a pid that means nothing (or another process) here.
An `Owner` records host, boot id, PID-namespace id, pid and the kernel's start time of the
process; `owner_state` answers "dead" only when the owner is provably ours (same host, boot and
namespace) and gone: no such pid, a zombie (killed, not yet reaped), or the pid reused by a
process that started at another time. Anything it cannot prove is "unknown".
"""

from __future__ import annotations

import errno
import os
from functools import cache

from premath.lean import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    OwnerState = Literal["alive", "dead", "unknown"]


_UNKNOWN = "-"


class Owner(NamedTuple):
    host: str
    boot: str
    pidns: str
    pid: int
    start: str
    """Clock ticks since boot when the process started (Linux `/proc/<pid>/stat` field 22)."""


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("ascii", errors="replace").strip()
    except OSError:
        return None


@cache
def _machine() -> tuple[str, str, str]:
    boot = _read_text("/proc/sys/kernel/random/boot_id") or _UNKNOWN
    try:
        pidns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pidns = _UNKNOWN
    return os.uname().nodename or _UNKNOWN, boot, pidns


def _stat_fields(pid: int) -> list[str] | None:
    """`/proc/<pid>/stat` after the command name (field 3 onwards), or None if unreadable."""
    text = _read_text(f"/proc/{pid}/stat")
    if text is None:
        return None
    return text.rsplit(")", 1)[-1].split()


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot, Linux), or None if unknown."""
    return _start_field(_stat_fields(pid))


def _start_field(fields: list[str] | None) -> str | None:
    return fields[19] if fields is not None and len(fields) > 19 else None


def this_process() -> Owner:
    """Us; cached per pid (reading /proc costs more than the lock it identifies)."""
    pid = os.getpid()
    return _owner_of(pid)


@cache
def _owner_of(pid: int) -> Owner:
    host, boot, pidns = _machine()
    return Owner(host, boot, pidns, pid, process_start_time(pid) or _UNKNOWN)


def pid_exists(pid: int) -> bool:
    """Whether `pid` names a process of our PID namespace, perhaps a zombie (one system call;
    EPERM means it exists)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def pid_alive(pid: int) -> bool:
    """Whether `pid` runs in our PID namespace and is not a zombie (EPERM means it runs)."""
    if not pid_exists(pid):
        return False
    fields = _stat_fields(pid)
    return fields is None or not fields or fields[0] != "Z"


def owner_state(owner: Owner) -> OwnerState:
    """Alive, provably dead, or unknown (another host, boot or PID namespace; missing facts)."""
    machine = (owner.host, owner.boot, owner.pidns)
    if _UNKNOWN in machine or machine != _machine():
        return "unknown"
    ours = owner.pid == os.getpid()
    if not ours and not pid_exists(owner.pid):
        return "dead"
    fields = _stat_fields(owner.pid)
    if not ours and fields and fields[0] == "Z":
        return "dead"  # killed, not yet reaped
    start = _start_field(fields)
    if owner.start != _UNKNOWN and start is not None and start != owner.start:
        return "dead"  # the pid now names a process that started later: ours is gone
    return "alive"
