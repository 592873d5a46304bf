"""Keep a claimed lease alive while a long work or verify command runs.

A worker that is alive renews its lease every third of the TTL, so a slow command does not let
the lease go stale and be reclaimed mid-step. A worker that dies stops renewing: its lease goes
stale at the TTL and another worker reclaims the issue, which is what a dead worker should cause.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def lease_heartbeat(renew: Callable[[], bool], interval_s: float) -> Iterator[None]:
    """Call `renew` every `interval_s` seconds in a thread until the block ends or it fails."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(interval_s):
            if not renew():
                return

    thread = threading.Thread(target=beat, name="premath-lease-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
