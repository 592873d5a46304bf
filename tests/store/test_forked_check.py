"""A check run on the other core: its answer, a failing child, and no child left behind."""

import os
import threading
from pathlib import Path

import pytest

from premath.store.forked_check import check_in_parallel, may_fork
from tests.support.threads import wait_alone_in_process

needs_fork = pytest.mark.skipif(not may_fork(), reason="needs fork and two CPUs")


@pytest.fixture(autouse=True)
def alone_in_process() -> None:
    """A check forks only while this process runs its main thread alone (threads another test
    stopped may still be ending): wait for that."""
    wait_alone_in_process()


def _children_of_this_process() -> set[str]:
    path = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    return set(path.read_text().split()) if path.exists() else set()


@needs_fork
@pytest.mark.parametrize("answer", [True, False])
def test_the_answer_comes_from_the_child(answer):
    parent, before = os.getpid(), _children_of_this_process()
    with check_in_parallel(lambda: answer and os.getpid() != parent) as result:
        assert result() == answer
        assert result() == answer  # asked twice, waited once
    assert _children_of_this_process() == before


@needs_fork
def test_a_failing_check_answers_false():
    def boom() -> bool:
        raise RuntimeError("boom")

    with check_in_parallel(boom) as result:
        assert result() == 0


@needs_fork
def test_small_integer_answers_come_back_whole():
    with check_in_parallel(lambda: 2) as result:
        assert result() == 2


@needs_fork
def test_an_answer_never_asked_for_leaves_no_child():
    before = _children_of_this_process()
    with check_in_parallel(lambda: threading.Event().wait(60)):
        assert len(_children_of_this_process() - before) == 1
    assert _children_of_this_process() == before


def test_with_other_threads_running_the_check_runs_here():
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait)
    helper.start()
    before = _children_of_this_process()
    try:
        with check_in_parallel(lambda: os.getpid()) as result:
            assert result() == os.getpid()
            assert _children_of_this_process() == before
    finally:
        stop.set()
        helper.join()
