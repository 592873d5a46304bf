"""The waiters' queue, with real processes: arrival order, a stopped head skipped, a killed or
zombie waiter neither blocking the rest nor leaving files behind.

Every process is a fresh interpreter (never a fork of the test process, whose other threads
may hold a lock at the instant of the fork)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

_HOLDER = """
import sys
from premath.store.locks import hold_marker
with hold_marker(sys.argv[1], timeout_s=5):
    print("held", flush=True)
    sys.stdin.readline()
"""

_WAITER = """
import sys
from premath.store.locks import hold_marker
with hold_marker(sys.argv[1], timeout_s=30), open(sys.argv[2], "a") as out:
    out.write(sys.argv[3] + "\\n")
"""


def _python(script: str, *args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, *args], cwd=os.getcwd(), **popen)


def _queued(folder: Path, process: subprocess.Popen) -> bool:
    """Whether `process` holds a ticket in `folder` (the holder keeps its own one too)."""
    return any(p.name.endswith(f".{process.pid}.wait") for p in folder.iterdir())


def _wait_for(condition, what: str, watched: dict[str, subprocess.Popen] | None = None) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        for name, process in (watched or {}).items():
            assert process.poll() is None, f"waiting for {what}: {name} exited {process.returncode}"
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.005)


def _queue_up(marker: Path, log: Path, names: list[str]) -> dict[str, subprocess.Popen]:
    """Start one waiter per name, each once the previous one holds its ticket."""
    waiters: dict[str, subprocess.Popen] = {}
    for name in names:
        waiter = waiters[name] = _python(_WAITER, str(marker), str(log), name)
        _wait_for(lambda waiter=waiter: _queued(marker.parent, waiter), f"{name}'s ticket",
                  waiters)  # fmt: skip
    return waiters


def _served(waiters: dict[str, subprocess.Popen]) -> None:
    for name, waiter in waiters.items():
        assert waiter.wait(60) == 0, name


def _holder(marker: Path) -> subprocess.Popen:
    """A process holding `marker` until a line arrives on its stdin (or it is killed)."""
    holder = _python(_HOLDER, str(marker), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    with holder.stdout:
        assert holder.stdout.readline() == "held\n"
    return holder


def _release(holder: subprocess.Popen) -> None:
    if holder.stdin is not None and not holder.stdin.closed:
        holder.stdin.close()


@pytest.fixture
def held(tmp_path):
    """A marker held by another process until the test calls the returned release."""
    marker = tmp_path / "x.lock"
    holder = _holder(marker)
    yield marker, lambda: _release(holder)
    _release(holder)
    holder.wait(30)


def test_waiters_are_served_in_arrival_order(held, tmp_path):
    marker, release = held
    log = tmp_path / "served"
    names = [f"w{n}" for n in range(8)]
    waiters = _queue_up(marker, log, names)
    release()
    _served(waiters)
    assert log.read_text().split() == names
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


def test_a_stopped_head_is_skipped_then_served_once_resumed(held, tmp_path):
    marker, release = held
    log = tmp_path / "served"
    waiters = _queue_up(marker, log, ["stopped", "a", "b"])
    os.kill(waiters["stopped"].pid, signal.SIGSTOP)
    try:
        release()
        # Each waiter gives up after 30 s: behind a head that never moves they would.
        _wait_for(lambda: log.exists() and log.read_text().split() == ["a", "b"], "a, b served")
    finally:
        os.kill(waiters["stopped"].pid, signal.SIGCONT)
    _served(waiters)
    assert log.read_text().split() == ["a", "b", "stopped"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


def test_a_killed_waiter_neither_blocks_the_queue_nor_leaves_files(held, tmp_path):
    marker, release = held
    log = tmp_path / "served"
    waiters = _queue_up(marker, log, ["a", "killed", "b", "c"])
    killed = waiters.pop("killed")
    killed.kill()
    killed.wait(10)
    assert any(p.name.endswith(".claim") for p in tmp_path.iterdir())  # its private file
    release()
    _served(waiters)
    assert log.read_text().split() == ["a", "b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


def test_a_zombie_waiter_does_not_block_the_queue(held, tmp_path):
    """Killed but not reaped, its pid still exists: only the full judgement (/proc) finds it
    dead, and the waiters behind it are served all the same."""
    marker, release = held
    log = tmp_path / "served"
    zombie = _python(_WAITER, str(marker), str(tmp_path / "zombie-served"), "zombie")
    try:
        _wait_for(lambda: _queued(tmp_path, zombie), "the zombie's ticket", {"zombie": zombie})
        waiters = _queue_up(marker, log, ["a", "b"])
        os.kill(zombie.pid, signal.SIGKILL)  # not reaped until the end: `kill(pid, 0)` succeeds
        _wait_for(lambda: Path(f"/proc/{zombie.pid}/stat").read_text().split(") ")[1][0] == "Z",
                  "a zombie")  # fmt: skip
        # While the marker is still held (so no waiter can be skipped as stuck), the waiter
        # behind the zombie finds it dead and removes its ticket.
        _wait_for(lambda: not _queued(tmp_path, zombie), "the zombie's ticket removed")
        release()
        _served(waiters)
    finally:
        zombie.wait()
    assert log.read_text().split() == ["a", "b"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".wait")) == []


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def test_waiters_sleep_in_the_kernel_until_their_turn(held, tmp_path):
    """Queued waiters block in `flock` on the ticket ahead: over a second and a half of waiting
    they use (almost) no CPU, where a waiter polling every few ms would use tens of ticks."""
    marker, release = held
    log = tmp_path / "served"
    names = [f"w{n}" for n in range(6)]
    waiters = _queue_up(marker, log, names)
    time.sleep(0.3)  # every waiter is past its start-up
    before = {name: _cpu_ticks(waiter.pid) for name, waiter in waiters.items()}
    time.sleep(1.5)
    used = {name: _cpu_ticks(waiter.pid) - before[name] for name, waiter in waiters.items()}
    states = {Path(f"/proc/{w.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
              for w in waiters.values()}  # fmt: skip
    release()
    _served(waiters)
    assert log.read_text().split() == names
    assert sum(used.values()) <= len(names), used  # a tick is 10 ms: at most ~1 each
    assert states == {"S"}


def test_a_killed_holder_wakes_the_queue_which_recovers_its_marker_in_order(tmp_path):
    """The holder dies with the marker taken: the kernel releases its ticket's lock at once, the
    next waiter removes its ticket, judges the marker dead and breaks it, and every waiter is
    served in arrival order with nothing left behind."""
    marker = tmp_path / "x.lock"
    holder = _holder(marker)
    log = tmp_path / "served"
    waiters = _queue_up(marker, log, ["a", "b", "c"])
    holder.kill()
    holder.wait(10)
    _release(holder)
    assert marker.exists()  # a dead owner's marker: only the queue's judgement removes it
    _served(waiters)
    assert log.read_text().split() == ["a", "b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]
