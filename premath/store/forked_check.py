"""A second core for one pure computation: run it in a forked child while this process goes on.

Only where that is safe and useful: `os.fork` exists, no other thread runs (a fork copies the
locks other threads hold, not the threads), and at least two CPUs are ours. The child computes
one byte string, sends it over a pipe only the two processes hold, and leaves with `os._exit`,
touching nothing shared. A child that fails in any way answers None, so callers must treat None
as "do it yourself", never as a fact. A child whose answer is never asked for is killed and
reaped when the block ends: no child outlives its caller.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

from premath.lean import SIGKILL, alone_in_process

_NO_ANSWER: Callable[[], bytes | None] = lambda: None  # noqa: E731 - a constant, named once


def may_fork() -> bool:
    """Whether a forked helper is safe (single-threaded) and useful (two or more CPUs)."""
    if not hasattr(os, "fork") or not alone_in_process():
        return False
    cores = (
        os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    )
    return len(cores) >= 2


def _child(write_end: int, compute: Callable[[], bytes]) -> None:
    status = 1
    try:
        answer = compute()
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(answer)
        status = 0
    except BaseException:  # noqa: BLE001 - nothing may escape a forked child; None answers
        pass
    finally:
        os._exit(status)


@contextlib.contextmanager
def forked_answer(compute: Callable[[], bytes]) -> Iterator[Callable[[], bytes | None]]:
    """Start `compute()` in a forked child; the yielded function waits for its bytes (None when
    no child could run or it failed: the caller computes the answer itself)."""
    if not may_fork():
        yield _NO_ANSWER
        return
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        yield _NO_ANSWER
        return
    if pid == 0:
        os.close(read_end)
        _child(write_end, compute)
    os.close(write_end)
    del compute  # the child has its own copy of whatever the computation holds on to
    answers: list[bytes | None] = []

    def wait() -> bytes | None:
        if not answers:
            with os.fdopen(read_end, "rb") as pipe:
                payload = pipe.read()
            _, status = os.waitpid(pid, 0)
            answers.append(payload if os.waitstatus_to_exitcode(status) == 0 else None)
        return answers[0]

    try:
        yield wait
    finally:
        if not answers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, SIGKILL)
            os.close(read_end)
            os.waitpid(pid, 0)


@contextlib.contextmanager
def check_in_parallel(check: Callable[[], int]) -> Iterator[Callable[[], int]]:
    """Start `check()` (a bool, or a small int) beside the caller; the yielded function waits
    for its answer, 0 when the child failed.

    Where forking is not possible the check runs here, when its answer is first asked for.
    """
    if not may_fork():
        yield check
        return
    with forked_answer(lambda: b"%d" % int(check())) as answer:
        yield lambda: int(answer() or b"0")
