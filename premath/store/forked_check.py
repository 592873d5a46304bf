"""A second core for one pure check: run it in a forked child while this process goes on.

Only where that is safe and useful: `os.fork` exists, no other thread runs (a fork copies the
locks other threads hold, not the threads), and at least two CPUs are ours. The child computes
one small answer (a bool, or an int from 0 to 250) and leaves with `os._exit`, touching nothing
shared; a child that fails in any way answers 0 (False), so callers must treat 0 as "take the
careful path", never as a fact.
"""

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator


def may_fork() -> bool:
    """Whether a forked helper is safe (single-threaded) and useful (two or more CPUs)."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    cores = (
        os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    )
    return len(cores) >= 2


@contextlib.contextmanager
def check_in_parallel(check: Callable[[], int]) -> Iterator[Callable[[], int]]:
    """Start `check()` beside the caller; the yielded function waits for its answer.

    Where forking is not possible the check runs here, when its answer is first asked for. A
    child whose answer is never asked for is killed and reaped when the block ends.
    """
    if not may_fork():
        yield check
        return
    try:
        pid = os.fork()
    except OSError:
        yield check
        return
    if pid == 0:  # the child: one answer through the exit status (answer + 1), nothing else
        status = 0
        with contextlib.suppress(BaseException):
            status = 1 + int(check())
        os._exit(status)
    del check  # the child has its own copy of whatever the check holds on to
    answers: list[int] = []

    def wait() -> int:
        if not answers:
            _, status = os.waitpid(pid, 0)
            answers.append(max(os.waitstatus_to_exitcode(status) - 1, 0))
        return answers[0]

    try:
        yield wait
    finally:
        if not answers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
