"""Lock markers with the reference's shape: `<path>.lock` created exclusively, removed on release.

The reference (issue memory) only tests whether the marker exists; it writes `pid=<pid>` and
`utc=<time>` lines into it, and so do we, so both tools can share one store. Ours adds what the
reference lacks: a configurable timeout with a clear error, and recovery of a marker whose process
is dead on this host. Recovery is serialised by a second marker (`<lock>.break`), and the stale
judgement is repeated while holding it, so two processes can never both break one marker and
delete a lock taken in between. Why this and not filelock: docs/architecture.md "Dependencies".
"""

import contextlib
import errno
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from premath.clock import SystemClock, epoch_ns
from premath.errors import IoFailure, LockBusy
from premath.timefmt import format_seconds_z

DEFAULT_LOCK_TIMEOUT_S = 10.0
LOCK_TIMEOUT_ENV = "PREMATH_LOCK_TIMEOUT_SECONDS"
_POLL_S = 0.002
_POLL_MAX_S = 0.02
# A marker with no readable pid (its creator died between create and write) counts as stale
# once it is this old; a live creator writes its pid microseconds after creating the file.
_UNREADABLE_MARKER_GRACE_S = 2.0
_BREAKER_GRACE_S = 5.0


def lock_timeout_from_env() -> float:
    """The lock timeout in seconds: PREMATH_LOCK_TIMEOUT_SECONDS, else the default."""
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_LOCK_TIMEOUT_S
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT_S
    return max(value, 0.0)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (EPERM means it does)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def _marker_pid(marker: Path) -> int | None:
    try:
        text = marker.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("pid="):
            with contextlib.suppress(ValueError):
                return int(line[4:].strip())
    return None


def _age_s(path: Path) -> float | None:
    try:
        return max(0.0, epoch_ns() / 1e9 - path.stat().st_mtime)
    except OSError:
        return None


def _is_stale(marker: Path) -> bool:
    pid = _marker_pid(marker)
    if pid is not None:
        return pid != os.getpid() and not pid_alive(pid)
    age = _age_s(marker)
    return age is not None and age > _UNREADABLE_MARKER_GRACE_S


def _create_marker(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        stamp = format_seconds_z(SystemClock().now())
        os.write(fd, f"pid={os.getpid()}\nutc={stamp}\n".encode())
    finally:
        os.close(fd)
    return True


def _report(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def _break_if_stale(marker: Path, report: Callable[[str], None]) -> bool:
    """Remove `marker` if its owner is dead, judged again under the breaker marker.

    False when another process holds the breaker: the caller waits (and honours its deadline)
    instead of spinning until that breaker is released or, if its owner died, ages out.
    """
    breaker = marker.with_name(marker.name + ".break")
    if not _create_marker(breaker):
        age = _age_s(breaker)
        if age is not None and age > _BREAKER_GRACE_S and _is_stale(breaker):
            breaker.unlink(missing_ok=True)
        return False
    try:
        if _is_stale(marker):
            pid = _marker_pid(marker)
            marker.unlink(missing_ok=True)
            owner = f"process {pid}" if pid is not None else "an unknown process"
            report(f"removed stale lock {marker} left by {owner} that is no longer running")
    finally:
        breaker.unlink(missing_ok=True)
    return True


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
    delay = _POLL_S
    while True:
        try:
            if _create_marker(path):
                break
        except OSError as exc:
            raise IoFailure(f"failed to create lock {path}: {exc.strerror or exc}") from exc
        if _is_stale(path) and _break_if_stale(path, report):
            continue
        if time.monotonic() >= deadline:
            raise LockBusy(
                busy_message
                or f"lock busy: {path} is held by another process (waited {timeout_s:g}s); "
                f"retry, or raise {LOCK_TIMEOUT_ENV}"
            )
        time.sleep(delay)
        delay = min(delay * 2, _POLL_MAX_S)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def artifact_lock(
    path: str | os.PathLike[str], timeout_s: float
) -> contextlib.AbstractContextManager[None]:
    """The lock of one harness artifact: `<artifact>.lock`, a name the reference never uses."""
    return hold_marker(f"{os.fspath(path)}.lock", timeout_s=timeout_s)
