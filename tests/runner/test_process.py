"""run_bounded with real children: process groups, deadlines, output caps, env and limits."""

import sys
import threading
import time

import orjson
import pytest

from premath.runner.process import (
    ALLOWED_ENV,
    ResourceLimits,
    allowlisted_env,
    process_start_time,
    reap_group_ticket,
    run_bounded,
)
from tests.support import optional_tools
from tests.support.processes import read_pid, wait_dead

PY = sys.executable


def run(argv, tmp_path, **kwargs):
    options = {
        "cwd": tmp_path,
        "env": allowlisted_env(),
        "timeout_s": 20.0,
        "stdout_path": tmp_path / "stdout.txt",
        "stderr_path": tmp_path / "stderr.txt",
        "output_cap": 1 << 20,
    } | kwargs
    return run_bounded(argv, **options)


def test_exit_zero_writes_both_streams_to_their_files(tmp_path):
    outcome = run(["sh", "-c", "printf out; printf err >&2"], tmp_path)
    assert (outcome.status, outcome.exit_code, outcome.signal) == ("ok", 0, None)
    assert (tmp_path / "stdout.txt").read_bytes() == b"out"
    assert (tmp_path / "stderr.txt").read_bytes() == b"err"
    assert (outcome.stdout_tail, outcome.stderr_tail) == ("out", "err")
    assert (outcome.stdout_bytes, outcome.stderr_bytes) == (3, 3)
    assert outcome.duration_s >= 0
    assert outcome.pid is not None


def test_nonzero_exit_is_data_with_its_code(tmp_path):
    outcome = run(["sh", "-c", "echo boom >&2; exit 7"], tmp_path)
    assert (outcome.status, outcome.exit_code, outcome.signal) == ("exit_nonzero", 7, None)
    assert outcome.stderr_tail == "boom\n"


def test_death_by_a_foreign_signal_is_exit_nonzero_with_the_signal(tmp_path):
    outcome = run(["sh", "-c", "kill -9 $$"], tmp_path)
    assert (outcome.status, outcome.exit_code, outcome.signal) == ("exit_nonzero", None, 9)


def test_missing_program_is_spawn_failed_not_an_exception(tmp_path):
    outcome = run(["./no-such-harness"], tmp_path)
    assert outcome.status == "spawn_failed"
    assert outcome.spawn_error is not None
    assert "no-such-harness" in outcome.spawn_error
    assert outcome.pid is None


def test_missing_cwd_is_spawn_failed(tmp_path):
    outcome = run(["true"], tmp_path, cwd=tmp_path / "absent")
    assert outcome.status == "spawn_failed"


def test_output_beyond_the_cap_is_counted_and_dropped(tmp_path):
    size = 20 * 1024 * 1024
    outcome = run(
        [PY, "-c", f"import sys; sys.stdout.buffer.write(b'x' * {size})"],
        tmp_path,
        output_cap=1000,
        tail_bytes=10,
    )
    assert outcome.status == "ok"
    assert (tmp_path / "stdout.txt").read_bytes() == b"x" * 1000
    assert (outcome.stdout_bytes, outcome.stdout_truncated) == (size, True)
    assert outcome.stdout_tail == "x" * 10
    assert (outcome.stderr_bytes, outcome.stderr_truncated) == (0, False)


def test_output_exactly_at_the_cap_is_not_truncated(tmp_path):
    outcome = run(["sh", "-c", "printf 12345"], tmp_path, output_cap=5)
    assert ((tmp_path / "stdout.txt").read_bytes(), outcome.stdout_truncated) == (b"12345", False)


def test_none_paths_count_without_writing(tmp_path):
    outcome = run(["sh", "-c", "printf abc"], tmp_path, stdout_path=None, stderr_path=None)
    assert (outcome.stdout_bytes, outcome.stdout_tail) == (3, "abc")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_stdin_bytes_reach_the_child_even_when_larger_than_a_pipe(tmp_path):
    payload = bytes(range(256)) * 4096
    outcome = run(["cat"], tmp_path, stdin=payload)
    assert outcome.status == "ok"
    assert (tmp_path / "stdout.txt").read_bytes() == payload


def test_stdin_is_devnull_by_default(tmp_path):
    outcome = run(["cat"], tmp_path, timeout_s=5)
    assert (outcome.status, outcome.stdout_bytes) == ("ok", 0)


def test_timeout_kills_the_whole_group_including_grandchildren(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    started = time.monotonic()
    # long enough for sh to start the grandchild and write its pid even on a loaded machine
    outcome = run(["sh", "-c", script], tmp_path, timeout_s=3, grace_s=0.5)
    assert outcome.status == "timeout"
    assert outcome.exit_code is None
    assert outcome.signal is not None
    assert wait_dead(read_pid(pid_file))
    assert time.monotonic() - started < 30  # sleep 60 did not hold us


def test_a_child_ignoring_sigterm_is_killed_after_the_grace(tmp_path):
    # sh ignores SIGTERM within milliseconds of starting (a Python child needs its start-up
    # first, which a loaded machine can stretch past the deadline); its sleep inherits that.
    script = "trap '' TERM; sleep 60"
    outcome = run(["sh", "-c", script], tmp_path, timeout_s=3, grace_s=0.3)
    assert (outcome.status, outcome.signal) == ("timeout", 9)


def test_a_child_that_exits_on_sigterm_reports_sigterm(tmp_path):
    outcome = run(["sleep", "60"], tmp_path, timeout_s=0.3, grace_s=5)
    assert (outcome.status, outcome.signal) == ("timeout", 15)


def test_grandchildren_left_behind_by_a_finished_leader_are_killed(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    outcome = run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; exit 0"], tmp_path)
    assert outcome.status == "ok"
    assert wait_dead(read_pid(pid_file))


def test_an_escaped_descendant_holding_a_pipe_does_not_hang_the_call(tmp_path):
    pid_file = tmp_path / "escaped.pid"
    script = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(60)\n"
        "    os._exit(0)\n"
        f"while not os.path.exists({str(pid_file)!r}): time.sleep(0.01)\n"
    )
    started = time.monotonic()
    outcome = run([PY, "-c", script], tmp_path, grace_s=0.3)
    assert outcome.status == "ok"
    assert time.monotonic() - started < 30
    assert wait_dead(read_pid(pid_file))  # ended by us, its subreaper
    assert outcome.leftover_descendants == 1


def test_environment_is_the_allowlist_plus_extras_only(tmp_path, monkeypatch):
    monkeypatch.setenv("PREMATH_SECRET", "leak")
    monkeypatch.setenv("AGENTLAB_RUN_ID", "leak")
    monkeypatch.setenv("OPENAI_API_KEY", "leak")
    monkeypatch.setenv("LANG", "C.UTF-8")
    env = allowlisted_env({"DEBUG": "1"})
    outcome = run(
        [PY, "-c", "import json, os; print(json.dumps(sorted(os.environ)))"],
        tmp_path,
        env=env,
        extra_env={"X": "2"},
    )
    seen = set(orjson.loads(outcome.stdout_tail))
    # the interpreter itself may add LC_CTYPE when coercing the C locale
    assert seen - {"LC_CTYPE"} <= {*ALLOWED_ENV, "DEBUG", "X"}
    assert {"DEBUG", "X", "LANG"} <= seen


def test_allowlisted_env_reads_only_allowed_names_from_the_source():
    source = {"PATH": "/bin", "HOME": "/h", "PREMATH_X": "1", "SECRET": "s"}
    assert allowlisted_env({"A": "b"}, source=source) == {"PATH": "/bin", "HOME": "/h", "A": "b"}
    assert allowlisted_env(source={}) == {}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit is Linux-only")
def test_memory_limit_makes_a_large_allocation_fail(tmp_path):
    script = "b = bytearray(800 * 1024 * 1024); print(len(b))"
    outcome = run([PY, "-c", script], tmp_path, limits=ResourceLimits(memory_mb=300))
    assert "memory_mb" in outcome.limits_applied
    assert outcome.status == "exit_nonzero"
    assert "MemoryError" in outcome.stderr_tail


def test_limits_hold_from_the_childs_first_instruction(tmp_path):
    """The first thing the child sees is already limited: no window after the spawn."""
    optional_tools.require(optional_tools.prlimit())
    script = "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE)[1])"
    for _ in range(5):
        outcome = run([PY, "-c", script], tmp_path, limits=ResourceLimits(open_files=77))
        assert (outcome.status, outcome.stdout_tail.strip()) == ("ok", "77")
        assert outcome.limits_applied == ("open_files",)


def test_missing_program_with_limits_is_still_spawn_failed(tmp_path):
    outcome = run(["no-such-program-premath"], tmp_path, limits=ResourceLimits(open_files=77))
    assert outcome.status == "spawn_failed"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit is Linux-only")
def test_file_size_limit_stops_a_huge_write(tmp_path):
    script = "open('big', 'wb').write(b'x' * (5 * 1024 * 1024))"
    outcome = run([PY, "-c", script], tmp_path, limits=ResourceLimits(file_size_mb=1))
    assert "file_size_mb" in outcome.limits_applied
    assert outcome.status == "exit_nonzero"
    assert (tmp_path / "big").stat().st_size <= 1024 * 1024


def test_many_threads_can_run_children_at_once(tmp_path):
    results: dict[int, str] = {}

    def work(index: int) -> None:
        folder = tmp_path / str(index)
        folder.mkdir()
        outcome = run(["sh", "-c", f"sleep 0.2; printf {index}"], folder)
        results[index] = outcome.stdout_tail

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: str(i) for i in range(8)}


def test_cancel_ends_the_group_like_a_deadline(tmp_path):
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    pid_file = tmp_path / "grandchild.pid"
    try:
        outcome = run(
            ["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"],
            tmp_path,
            timeout_s=60,
            grace_s=0.5,
            cancel=cancel,
        )
    finally:
        timer.cancel()
    assert outcome.status == "cancelled"
    assert wait_dead(read_pid(pid_file))


def test_a_set_cancel_before_the_spawn_still_runs_nothing_long(tmp_path):
    cancel = threading.Event()
    cancel.set()
    outcome = run(["sleep", "60"], tmp_path, timeout_s=60, cancel=cancel)
    assert (outcome.status, outcome.signal) == ("cancelled", 15)


def test_the_group_ticket_exists_only_while_the_child_runs(tmp_path):
    ticket = tmp_path / "harness.pid"
    script = f"while [ ! -s {ticket} ]; do sleep 0.01; done; cat {ticket}"
    outcome = run(["sh", "-c", script], tmp_path, group_ticket=ticket)
    pid_text, start = outcome.stdout_tail.split()
    assert int(pid_text) == outcome.pid
    assert start.isdigit() or (start == "-" and not sys.platform.startswith("linux"))
    assert not ticket.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times come from /proc")
def test_reap_group_ticket_kills_only_the_recorded_process(tmp_path):
    import subprocess

    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        stale = tmp_path / "stale.pid"
        stale.write_text(f"{child.pid} 1\n")  # same pid, another start time: a reused pid
        assert reap_group_ticket(stale) is False
        assert not stale.exists()
        unknown = tmp_path / "unknown.pid"
        unknown.write_text(f"{child.pid} -\n")
        assert reap_group_ticket(unknown) is False
        assert child.poll() is None
        live = tmp_path / "live.pid"
        live.write_text(f"{child.pid} {process_start_time(child.pid)}\n")
        assert reap_group_ticket(live) is True
        assert child.wait(timeout=10) == -9
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    garbage = tmp_path / "garbage.pid"
    garbage.write_text("not a ticket")
    assert reap_group_ticket(garbage) is False
    assert not garbage.exists()
