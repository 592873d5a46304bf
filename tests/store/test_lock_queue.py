"""The waiters' queue, with real processes: arrival order, a stopped head skipped, a killed or
zombie waiter neither blocking the rest nor leaving files behind."""

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from premath.store.locks import hold_marker

FORK = multiprocessing.get_context("fork")


def _hold(marker: str, held, release) -> None:
    with hold_marker(marker, timeout_s=5):
        held.set()
        release.wait(30)


def _serve(marker: str, log: str, name: str) -> None:
    with hold_marker(marker, timeout_s=30), open(log, "a") as out:
        out.write(f"{name}\n")


def _tickets(folder: Path) -> int:
    return sum(1 for p in folder.iterdir() if p.name.endswith(".wait"))


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.005)


def _queue_up(marker: Path, log: Path, names: list[str]) -> dict[str, multiprocessing.Process]:
    """Start one waiter per name, each once the previous one holds its ticket."""
    waiters = {}
    queued = _tickets(marker.parent)
    for name in names:
        waiter = FORK.Process(target=_serve, args=(str(marker), str(log), name))
        waiter.start()
        waiters[name] = waiter
        queued += 1
        _wait_for(lambda queued=queued: _tickets(marker.parent) == queued, f"{queued} tickets")
    return waiters


@pytest.fixture
def held(tmp_path):
    """A marker held by another process until the test calls the returned release."""
    marker = tmp_path / "x.lock"
    taken, release = FORK.Event(), FORK.Event()
    holder = FORK.Process(target=_hold, args=(str(marker), taken, release))
    holder.start()
    assert taken.wait(10)
    yield marker, release.set
    release.set()
    holder.join(30)


def test_waiters_are_served_in_arrival_order(held, tmp_path):
    marker, release = held
    log = tmp_path / "served"
    names = [f"w{n}" for n in range(8)]
    waiters = _queue_up(marker, log, names)
    release()
    for waiter in waiters.values():
        waiter.join(60)
        assert waiter.exitcode == 0
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
    for waiter in waiters.values():
        waiter.join(60)
        assert waiter.exitcode == 0
    assert log.read_text().split() == ["a", "b", "stopped"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


def test_a_killed_waiter_neither_blocks_the_queue_nor_leaves_files(held, tmp_path):
    marker, release = held
    log = tmp_path / "served"
    waiters = _queue_up(marker, log, ["a", "killed", "b", "c"])
    os.kill(waiters["killed"].pid, signal.SIGKILL)
    waiters["killed"].join(10)
    assert any(p.name.endswith(".claim") for p in tmp_path.iterdir())  # its private file
    release()
    for name in ("a", "b", "c"):
        waiters[name].join(60)
        assert waiters[name].exitcode == 0
    assert log.read_text().split() == ["a", "b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


_QUEUER = """
import sys
from premath.store.locks import hold_marker
with hold_marker(sys.argv[1], timeout_s=30):
    pass
"""


def test_a_zombie_waiter_does_not_block_the_queue(held, tmp_path):
    """Killed but not reaped, its pid still exists: only the full judgement (/proc) finds it
    dead, and the waiters behind it are served all the same."""
    marker, release = held
    log = tmp_path / "served"
    zombie = subprocess.Popen([sys.executable, "-c", _QUEUER, str(marker)], cwd=os.getcwd())
    try:
        _wait_for(lambda: _tickets(tmp_path) == 1, "the zombie's ticket")
        waiters = _queue_up(marker, log, ["a", "b"])
        zombie.kill()  # not reaped until the end: `kill(pid, 0)` still succeeds
        _wait_for(lambda: Path(f"/proc/{zombie.pid}/stat").read_text().split(") ")[1][0] == "Z",
                  "a zombie")  # fmt: skip
        # While the marker is still held (so no waiter can be skipped as stuck), the waiter
        # behind the zombie finds it dead and removes its ticket.
        _wait_for(lambda: _tickets(tmp_path) == 2, "the zombie's ticket removed")
        release()
        for waiter in waiters.values():
            waiter.join(60)
            assert waiter.exitcode == 0
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
    for waiter in waiters.values():
        waiter.join(60)
        assert waiter.exitcode == 0
    assert log.read_text().split() == names
    assert sum(used.values()) <= len(names), used  # a tick is 10 ms: at most ~1 each
    assert states == {"S"}


def test_a_killed_holder_wakes_the_queue_which_recovers_its_marker_in_order(tmp_path):
    """The holder dies with the marker taken: the kernel releases its ticket's lock at once, the
    next waiter removes its ticket, judges the marker dead and breaks it, and every waiter is
    served in arrival order with nothing left behind."""
    marker = tmp_path / "x.lock"
    taken, go = FORK.Event(), FORK.Event()
    holder = FORK.Process(target=_hold_until, args=(str(marker), taken, go))
    holder.start()
    assert taken.wait(10)
    log = tmp_path / "served"
    waiters = _queue_up(marker, log, ["a", "b", "c"])
    os.kill(holder.pid, signal.SIGKILL)
    holder.join(10)
    assert marker.exists()  # a dead owner's marker: only the queue's judgement removes it
    for waiter in waiters.values():
        waiter.join(60)
        assert waiter.exitcode == 0
    assert log.read_text().split() == ["a", "b", "c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["served"]


def _hold_until(marker: str, held, go) -> None:
    with hold_marker(marker, timeout_s=5):
        held.set()
        go.wait(60)
