"""The waiters' queue, with real processes: arrival order, a stopped head skipped, a killed
waiter neither blocking the rest nor leaving files behind."""

import multiprocessing
import os
import signal
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
    for count, name in enumerate(names, start=1):
        waiter = FORK.Process(target=_serve, args=(str(marker), str(log), name))
        waiter.start()
        waiters[name] = waiter
        _wait_for(lambda count=count: _tickets(marker.parent) == count, f"{count} tickets")
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
