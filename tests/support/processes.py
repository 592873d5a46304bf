"""Waiting on real processes a test started (or that its children started)."""

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORK = multiprocessing.get_context("fork")
HANG_GUARD_S = 60.0
"""How long a test waits for what must happen (a process starting or ending, a thread ending, a
file, a server's answer) before failing: only a hang guard, never a speed asserted, as a loaded
machine may take seconds for any of them."""


def wait_dead(pid: int, within_s: float = HANG_GUARD_S) -> bool:
    """True once `pid` no longer exists (a zombie counts as gone: it runs nothing)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
        except FileNotFoundError:
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            status = "R"
        if status == "Z":
            return True
        time.sleep(0.02)
    return False


def read_pid(path: Path, within_s: float = HANG_GUARD_S) -> int:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.strip():
            return int(text)
        time.sleep(0.01)
    raise AssertionError(f"{path} never got a pid")


def kill_when(
    target: Callable[..., None],
    args: tuple[Any, ...],
    moment: Callable[[], bool],
    delay_s: float,
) -> None:
    """Fork `target(*args, ready)`, SIGKILL it `delay_s` after `moment()` first holds, reap it: a
    writer cut short at a point of its work the test chooses. The delay starts at a state of the
    child's work, not at its start: on a loaded machine a child may not run for a while."""
    ready = FORK.Event()
    child = FORK.Process(target=target, args=(*args, ready))
    child.start()
    assert ready.wait(HANG_GUARD_S), "the child never started"
    deadline = time.monotonic() + HANG_GUARD_S
    while not moment():
        assert time.monotonic() < deadline, "the child never reached the moment"
        time.sleep(0.0005)
    time.sleep(delay_s)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()


def descendants(root: int) -> list[int]:
    """Every process below `root` (Linux /proc), children before grandchildren."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [root]
    while queue:
        children = parents.get(queue.pop(0), [])
        found += children
        queue += children
    return found


def _killed(status: str) -> bool:
    """Whether a process's /proc status shows a SIGKILL pending: it runs no more code, it only
    waits for a core to finish dying on (a caller that killed it need not have waited)."""
    pending = 0
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            pending |= int(line.split()[1], 16)
    return bool(pending & (1 << (signal.SIGKILL - 1)))


def processes_under(folder: Path) -> list[int]:
    """Live processes whose working folder is inside `folder` (orphaned commands); one being
    killed is gone already."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            killed = _killed((entry / "status").read_text())
        except OSError:
            continue
        if cwd.startswith(str(folder)) and not killed:
            found.append(int(entry.name))
    return found
