"""SIGTERM and Ctrl-C as an exception, so a stopped premath still cleans up after itself.

`run_bounded` kills the running command's process group when an exception leaves it, so no
child outlives us, and the caller still records what happened.
"""

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def stop_signals_raise(make_error: Callable[[str], BaseException]) -> Iterator[None]:
    """Raise `make_error(<signal name>)` on SIGTERM/SIGINT inside the block.

    Main thread only; elsewhere (a test's worker thread) the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise make_error(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, handler) for signum in _STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)
