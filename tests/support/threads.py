"""Waiting for this test process to run its main thread alone (what a forked helper needs)."""

import threading
import time

from tests.support.processes import HANG_GUARD_S


def wait_alone_in_process(within_s: float = HANG_GUARD_S) -> None:
    """Join every other thread of this process; fail naming those still running after
    `within_s` (a test that leaked a thread: `premath.store.forked_check` will not fork here)."""
    deadline = time.monotonic() + within_s
    for thread in threading.enumerate():
        # A thread started outside `threading` (a dummy) cannot be joined; it is reported below.
        if thread is not threading.current_thread() and not isinstance(
            thread, threading._DummyThread
        ):
            thread.join(max(0.0, deadline - time.monotonic()))
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    assert not others, f"threads still running after {within_s:g} s (leaked by a test?): {others}"
