"""The lock marker: exclusive, removed after use, busy after its timeout, dead owners recovered."""

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from premath.errors import LockBusy
from premath.store.locks import hold_marker
from tests.support.markers import marker_of
from tests.support.processes import HANG_GUARD_S

FORK = multiprocessing.get_context("fork")


def test_marker_holds_pid_and_utc_and_is_removed(tmp_path):
    marker = tmp_path / "x.lock"
    with hold_marker(marker, timeout_s=1):
        lines = marker.read_text().splitlines()
        assert lines[0] == f"pid={os.getpid()}"
        assert lines[1].startswith("utc=")
        assert lines[1].endswith("Z")
    assert not marker.exists()


def test_marker_is_removed_after_an_error(tmp_path):
    marker = tmp_path / "x.lock"
    with pytest.raises(RuntimeError), hold_marker(marker, timeout_s=1):
        raise RuntimeError("boom")
    assert not marker.exists()


def _hold(marker: str, held, release) -> None:
    with hold_marker(marker, timeout_s=5):
        held.set()
        release.wait(HANG_GUARD_S)


def test_live_owner_makes_others_time_out_with_a_clear_error(tmp_path):
    marker = str(tmp_path / "x.lock")
    held, release = FORK.Event(), FORK.Event()
    owner = FORK.Process(target=_hold, args=(marker, held, release))
    owner.start()
    assert held.wait(HANG_GUARD_S), "the owner never took the marker"
    try:
        start = time.monotonic()
        with (
            pytest.raises(LockBusy, match=r"x\.lock is held by another process"),
            hold_marker(marker, timeout_s=0.2),
        ):
            pass
        assert time.monotonic() - start >= 0.2
    finally:
        release.set()
        owner.join()
    assert not Path(marker).exists()


def test_marker_of_a_dead_process_is_recovered_and_reported(tmp_path):
    marker = tmp_path / "x.lock"
    dead = FORK.Process(target=lambda: None)
    dead.start()
    dead.join()
    marker.write_text(marker_of(dead.pid))
    reports: list[str] = []
    with hold_marker(marker, timeout_s=1, report=reports.append):
        assert marker.read_text().startswith(f"pid={os.getpid()}")
    assert len(reports) == 1
    assert f"process {dead.pid}" in reports[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _count_in_lock(marker: str, counter: str, rounds: int, barrier) -> None:
    barrier.wait()
    for _ in range(rounds):
        with hold_marker(marker, timeout_s=30):
            value = int(Path(counter).read_text())
            Path(counter).write_text(str(value + 1))


def test_racing_recoverers_never_break_a_live_lock(tmp_path):
    """Many processes find one dead marker at once: the counter proves mutual exclusion held."""
    marker, counter = str(tmp_path / "c.lock"), tmp_path / "counter"
    counter.write_text("0")
    dead = FORK.Process(target=lambda: None)
    dead.start()
    dead.join()
    Path(marker).write_text(marker_of(dead.pid))
    barrier = FORK.Barrier(6)
    workers = [
        FORK.Process(target=_count_in_lock, args=(marker, str(counter), 50, barrier))
        for _ in range(6)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    assert counter.read_text() == "300"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counter"]
