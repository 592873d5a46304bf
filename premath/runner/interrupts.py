"""SIGTERM and Ctrl-C as an exception (or an event), so a stopped premath still cleans up.

`run_bounded` kills the running command's process group when an exception leaves it, so no
child outlives us, and the caller still records what happened. A supervisor (the coordinator)
takes the signal as an event instead: its children stop through `run_bounded`'s `cancel`.
"""

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
Handler = Callable[[int, FrameType | None], None]


@contextlib.contextmanager
def _on_stop_signals(handler: Handler) -> Iterator[None]:
    """Main thread only; elsewhere (a test's worker thread) the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in _STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal.signal(signum, action)


def stop_signals_raise(
    make_error: Callable[[str], BaseException],
) -> contextlib.AbstractContextManager[None]:
    """Raise `make_error(<signal name>)` on SIGTERM/SIGINT inside the block."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise make_error(signal.Signals(signum).name)

    return _on_stop_signals(handler)


def stop_signals_set(stop: threading.Event) -> contextlib.AbstractContextManager[None]:
    """Set `stop` on SIGTERM/SIGINT inside the block instead of raising."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    return _on_stop_signals(handler)
