"""SIGTERM and Ctrl-C as an exception, so a stopped worker still cleans up after itself.

Inside the block either signal raises `Interrupted`: `run_bounded` then kills the running
command's process group, the step gives its lease back, the worker records a
`failed_runtime_error` row, and the CLI exits 1 with a message. A coordinator's worker deadline
(`--worker-timeout-seconds`) arrives as SIGTERM, so it ends the same way.
"""

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from premath.errors import Interrupted

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def interrupts_as_errors() -> Iterator[None]:
    """Main thread only; elsewhere (a test's worker thread) the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        raise Interrupted(f"worker stopped by {name}; its claimed lease was given back")

    previous = {sig: signal.signal(sig, handler) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, action in previous.items():
            signal.signal(sig, action)
