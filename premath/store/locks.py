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
- polling every 2 ms, the reference's interval, with no back-off: a waiter that backs off loses
  every race to newer arrivals, and under 16 writers some waited ten seconds.
filelock's SoftFileLock has the same create/remove shape but neither the reference's contents
nor this judgement, so these few lines are ours.
"""

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from premath.clock import SystemClock
from premath.errors import InvalidUsage, IoFailure, LockBusy
from premath.store.files import write_all
from premath.store.owners import Owner, OwnerState, owner_state, this_process
from premath.timefmt import format_seconds_z

DEFAULT_LOCK_TIMEOUT_S = 10.0
LOCK_TIMEOUT_ENV = "PREMATH_LOCK_TIMEOUT_SECONDS"
_POLL_S = 0.002
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


def _create_marker(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        write_all(fd, marker_text(this_process(), format_seconds_z(SystemClock().now())).encode())
    finally:
        os.close(fd)
    return True


def _report(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def _break_if_dead(marker: Path, report: Callable[[str], None]) -> bool:
    """Remove `marker` if its owner is provably dead, judged again under the breaker marker.

    False when another process holds the breaker: the caller waits (and honours its deadline)
    instead of spinning until that breaker is released or, if its owner died, is broken too.
    """
    breaker = marker.with_name(marker.name + ".break")
    if not _create_marker(breaker):
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
    polls = 0
    state: OwnerState = "unknown"
    while True:
        try:
            if _create_marker(path):
                break
        except OSError as exc:
            raise IoFailure(f"failed to create lock {path}: {exc.strerror or exc}") from exc
        if polls % _JUDGE_EVERY_POLLS == 0:
            state = _state(path)
            if state == "dead" and _break_if_dead(path, report):
                continue
        polls += 1
        if time.monotonic() >= deadline:
            message = busy_message or (
                f"lock busy: {path} is held by another process (waited {timeout_s:g}s); "
                f"retry, or raise {LOCK_TIMEOUT_ENV}"
            )
            if _state(path) == "unknown" and path.exists():
                message += _unjudged_hint(path)
            raise LockBusy(message)
        time.sleep(_POLL_S)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def artifact_lock(
    path: str | os.PathLike[str], timeout_s: float
) -> contextlib.AbstractContextManager[None]:
    """The lock of one harness artifact: `<artifact>.lock`, a name the reference never uses."""
    return hold_marker(f"{os.fspath(path)}.lock", timeout_s=timeout_s)
