"""The lease heartbeat renews while the block runs, and never after."""

import threading
import time

from premath.harness.heartbeat import lease_heartbeat
from tests.support.processes import HANG_GUARD_S


def _wait_until(predicate, timeout_s=HANG_GUARD_S):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_renews_repeatedly_while_the_block_runs_and_stops_after():
    calls = []
    with lease_heartbeat(lambda: calls.append(1) or True, 0.01):
        assert _wait_until(lambda: len(calls) >= 3)
    after = len(calls)
    time.sleep(0.05)
    assert len(calls) == after
    assert not any(t.name == "premath-lease-heartbeat" for t in threading.enumerate())


def test_stops_at_the_first_failed_renewal():
    calls = []
    with lease_heartbeat(lambda: calls.append(1) and False, 0.01):
        assert _wait_until(lambda: len(calls) == 1)
        time.sleep(0.05)
    assert len(calls) == 1
