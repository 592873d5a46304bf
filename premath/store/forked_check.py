"""A second core for one pure check: run it in a forked child while this process goes on.

Only where that is safe and useful: `os.fork` exists, no other thread runs (a fork copies the
locks other threads hold, not the threads), and at least two CPUs are ours. The child computes
one boolean and leaves with `os._exit`, touching nothing shared; a child that fails in any way
answers False, so callers must treat False as "take the careful path", never as a fact.
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
def check_in_parallel(check: Callable[[], bool]) -> Iterator[Callable[[], bool]]:
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
    if pid == 0:  # the child: one answer through the exit status, nothing else
        answer = False
        with contextlib.suppress(BaseException):
            answer = check()
        os._exit(0 if answer else 1)
    del check  # the child has its own copy of whatever the check holds on to
    answers: list[bool] = []

    def wait() -> bool:
        if not answers:
            _, status = os.waitpid(pid, 0)
            answers.append(os.waitstatus_to_exitcode(status) == 0)
        return answers[0]

    try:
        yield wait
    finally:
        if not answers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
