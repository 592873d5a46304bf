"""SIGTERM and Ctrl-C as an exception, so a stopped worker still cleans up after itself.

Inside the block either signal raises `Interrupted`: `run_bounded` then kills the running
command's process group, the step gives its lease back, the worker records a
`failed_runtime_error` row, and the CLI exits 1 with a message. A coordinator's worker deadline
(`--worker-timeout-seconds`) arrives as SIGTERM, so it ends the same way.
"""

from __future__ import annotations

import contextlib

from premath.errors import Interrupted
from premath.runner.interrupts import stop_signals_raise


def _worker_stopped(signal_name: str) -> Interrupted:
    return Interrupted(f"worker stopped by {signal_name}; its claimed lease was given back")


def interrupts_as_errors() -> contextlib.AbstractContextManager[None]:
    """Main thread only; elsewhere (a test's worker thread) the block runs unchanged."""
    return stop_signals_raise(_worker_stopped)
