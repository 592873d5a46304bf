"""SIGTERM and Ctrl-C as an exception (or an event), so a stopped premath still cleans up.

`run_bounded` kills the running command's process group when an exception leaves it, so no
child outlives us, and the caller still records what happened. A supervisor (the coordinator)
takes the signal as an event instead: its children stop through `run_bounded`'s `cancel`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import FrameType

from premath.lean import SIGINT, SIGTERM, in_main_thread, signal

_STOP_SIGNALS: dict[int, str] = {SIGTERM: "SIGTERM", SIGINT: "SIGINT"}
Handler = Callable[[int, FrameType | None], None]


class InterruptHold:
    """Holds back the stop exception while a child is being spawned: raised inside `Popen`, it
    would lose the child's pid and orphan it. `release()` (idempotent) raises what arrived
    meanwhile, once the caller can clean the child up. Main thread only; elsewhere a no-op."""

    _active: InterruptHold | None = None
    requested: BaseException | None = None
    """The stop this process was asked for, kept after it was raised: a loop that swallowed it
    (a broad `except`) still starts no new command (`raise_if_stopped`)."""

    def __init__(self) -> None:
        self.pending: BaseException | None = None
        self.held = in_main_thread()
        if self.held:
            InterruptHold._active = self

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        InterruptHold._active = None
        if self.pending is not None:
            raise self.pending


@contextlib.contextmanager
def _on_stop_signals(handler: Handler) -> Iterator[None]:
    """Main thread only; elsewhere (a test's worker thread) the block runs unchanged."""
    if not in_main_thread():
        yield
        return
    previous = {signum: signal(signum, handler) for signum in _STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, action in previous.items():
            signal(signum, action)


def stop_signals_raise(
    make_error: Callable[[str], BaseException],
) -> contextlib.AbstractContextManager[None]:
    """Raise `make_error(<signal name>)` on the first SIGTERM/SIGINT inside the block; later
    ones are ignored, so a supervisor's repeated signal cannot cut the clean-up short."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        if InterruptHold.requested is not None:
            return
        error = make_error(_STOP_SIGNALS[signum])
        InterruptHold.requested = error
        hold = InterruptHold._active
        if hold is not None:
            hold.pending = error
            return
        raise error

    return _stop_requests_cleared(_on_stop_signals(handler))


@contextlib.contextmanager
def _stop_requests_cleared(handling: contextlib.AbstractContextManager[None]) -> Iterator[None]:
    """The block with `handling`; the recorded stop is forgotten when it ends (tests, reuse)."""
    with handling:
        try:
            yield
        finally:
            InterruptHold.requested = None


def raise_if_stopped() -> None:
    """Raise the stop this process was already asked for, if any (before a new unit of work;
    clean-up after the stop may still spawn)."""
    if InterruptHold.requested is not None:
        raise InterruptHold.requested


def on_stop_signals(callback: Callable[[], None]) -> contextlib.AbstractContextManager[None]:
    """Call `callback` on SIGTERM/SIGINT inside the block instead of raising."""

    def handler(_signum: int, _frame: FrameType | None) -> None:
        callback()

    return _on_stop_signals(handler)


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM (CI cancel, `timeout`, a supervisor) stops the block the way Ctrl-C does, with
    KeyboardInterrupt, instead of killing the process mid-way. Main thread only."""
    if not in_main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal(SIGTERM, interrupt)
    try:
        yield
    finally:
        signal(SIGTERM, previous)
