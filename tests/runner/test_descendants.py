"""Descendants that leave the process group (setsid, double fork) do not outlive the call."""

import sys
import textwrap
import threading
from pathlib import Path

import orjson

from premath.runner.descendants import CallTree
from premath.runner.process import ProcessOutcome, allowlisted_env, run_bounded
from tests.support.bench_runs import live_bench_run
from tests.support.cli import run_premath
from tests.support.processes import HANG_GUARD_S, read_pid, wait_dead
from tests.support.remote import wait_for

PY = sys.executable

ESCAPE = textwrap.dedent(
    """
    import os, sys, time
    pid_path, leave_when = sys.argv[1], sys.argv[2]  # the parent exits once `leave_when` exists
    if os.fork() == 0:
        if len(sys.argv) > 3 and os.fork() != 0:  # double fork: the middle process leaves
            os._exit(0)
        os.setsid()
        open(pid_path + ".tmp", "w").write(str(os.getpid()))
        os.rename(pid_path + ".tmp", pid_path)
        time.sleep(60)
        os._exit(0)
    while not os.path.exists(leave_when):
        time.sleep(0.01)
    """
)
WORK_UNTIL = textwrap.dedent(
    """
    import os, sys, time
    open(sys.argv[1], "w").close()
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    print("done")
    """
)


def _run(argv, tmp_path):
    return run_bounded(
        argv, cwd=tmp_path, env=allowlisted_env(), timeout_s=HANG_GUARD_S, stdout_path=None,
        stderr_path=None, output_cap=1 << 16,
    )  # fmt: skip


def test_a_setsid_grandchild_is_ended_and_counted(tmp_path):
    pid = str(tmp_path / "pid")
    outcome = _run([PY, "-c", ESCAPE, pid, pid], tmp_path)
    grandchild = read_pid(tmp_path / "pid")
    assert wait_dead(grandchild)
    assert (outcome.status, outcome.leftover_descendants) == ("ok", 1)


def test_a_double_forked_daemon_is_ended_and_counted(tmp_path):
    pid = str(tmp_path / "pid")
    outcome = _run([PY, "-c", ESCAPE, pid, pid, "double"], tmp_path)
    assert wait_dead(read_pid(tmp_path / "pid"))
    assert outcome.leftover_descendants == 1


def test_a_call_that_leaves_nothing_counts_nothing(tmp_path):
    assert _run([PY, "-c", "pass"], tmp_path).leftover_descendants == 0


def test_a_concurrent_call_keeps_its_own_children(tmp_path, monkeypatch):
    """A daemon escaping call A is ended; call B's process, still working, is not touched.

    With two calls in flight an orphan is A's only if A's /proc scan saw it while A's leader
    lived (premath.runner.descendants): A's leader leaves once that scan has happened, and B
    works until A has ended, whatever the machine's load."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    daemon = a / "pid"
    seen_by_a = threading.Event()
    observe = CallTree.observe

    def observe_and_tell(tree: CallTree) -> None:
        observe(tree)
        if daemon.exists() and int(daemon.read_text()) in tree.known:
            seen_by_a.set()

    monkeypatch.setattr(CallTree, "observe", observe_and_tell)
    outcomes: dict[str, ProcessOutcome] = {}

    def call(name: str, argv: list[str], folder: Path) -> threading.Thread:
        thread = threading.Thread(target=lambda: outcomes.update({name: _run(argv, folder)}))
        thread.start()
        return thread

    other = call("b", [PY, "-c", WORK_UNTIL, str(b / "working"), str(b / "release")], b)
    wait_for((b / "working").exists, HANG_GUARD_S, "call B's process to start")
    escaping = call("a", [PY, "-c", ESCAPE, str(daemon), str(a / "release")], a)
    assert seen_by_a.wait(HANG_GUARD_S), "call A never saw its daemon"
    (a / "release").touch()
    escaping.join()
    assert other.is_alive()  # B still in flight when A ended
    (b / "release").touch()
    other.join()
    assert wait_dead(read_pid(daemon))
    assert (outcomes["a"].leftover_descendants, outcomes["b"].leftover_descendants) == (1, 0)
    assert (outcomes["b"].status, outcomes["b"].exit_code, outcomes["b"].stdout_tail) == (
        "ok",
        0,
        "done\n",
    )


HARNESS = textwrap.dedent(
    """
    import json, os, sys, time
    if os.fork() == 0:
        os.setsid()
        open("daemon.pid.tmp", "w").write(str(os.getpid()))
        os.rename("daemon.pid.tmp", "daemon.pid")
        time.sleep(60)
        os._exit(0)
    while not os.path.exists("daemon.pid"):  # the daemon is out of our group
        time.sleep(0.01)
    json.dump({"outcome": "success"}, open(sys.argv[-1], "w"))
    """
)


def test_premath_run_ends_a_daemon_and_records_it(tmp_path):
    (tmp_path / "harness.py").write_text(HARNESS)
    (tmp_path / "task.json").write_text('{"id": "t"}')
    out = run_premath(
        "run", "--command", f"{PY} {tmp_path / 'harness.py'}", "task.json", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    document = orjson.loads(out.stdout)
    assert document["outcome"] == "success", out.stderr
    assert document["leftover_descendants"] == 1
    daemon_pid = next(tmp_path.rglob("daemon.pid"))
    assert wait_dead(int(daemon_pid.read_text()))


def test_bench_tool_ends_a_daemon(tmp_path):
    raw = live_bench_run(tmp_path / "run")
    (tmp_path / "harness.py").write_text(HARNESS)
    out = run_premath(
        "bench", "tool", "--run-dir", "run", "--json", "--", PY, "harness.py", "r.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert wait_dead(int((tmp_path / "daemon.pid").read_text()))
    events = [orjson.loads(line) for line in (raw / "events.jsonl").read_bytes().splitlines()]
    assert events[-1]["leftover_descendants"] == 1
