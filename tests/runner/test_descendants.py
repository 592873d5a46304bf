"""Descendants that leave the process group (setsid, double fork) do not outlive the call."""

import sys
import textwrap
import threading

import orjson

from premath.runner.process import allowlisted_env, run_bounded
from tests.support.bench_runs import live_bench_run
from tests.support.cli import run_premath
from tests.support.processes import read_pid, wait_dead

PY = sys.executable

ESCAPE = textwrap.dedent(
    """
    import os, sys, time
    if os.fork() == 0:
        if len(sys.argv) > 2 and os.fork() != 0:  # double fork: the middle process leaves
            os._exit(0)
        os.setsid()
        open(sys.argv[1], "w").write(str(os.getpid()))
        time.sleep(60)
        os._exit(0)
    time.sleep(0.3)
    """
)


def _run(argv, tmp_path):
    return run_bounded(
        argv, cwd=tmp_path, env=allowlisted_env(), timeout_s=20, stdout_path=None,
        stderr_path=None, output_cap=1 << 16,
    )  # fmt: skip


def test_a_setsid_grandchild_is_ended_and_counted(tmp_path):
    outcome = _run([PY, "-c", ESCAPE, str(tmp_path / "pid")], tmp_path)
    grandchild = read_pid(tmp_path / "pid")
    assert wait_dead(grandchild, within_s=2)
    assert (outcome.status, outcome.leftover_descendants) == ("ok", 1)


def test_a_double_forked_daemon_is_ended_and_counted(tmp_path):
    outcome = _run([PY, "-c", ESCAPE, str(tmp_path / "pid"), "double"], tmp_path)
    assert wait_dead(read_pid(tmp_path / "pid"), within_s=2)
    assert outcome.leftover_descendants == 1


def test_a_call_that_leaves_nothing_counts_nothing(tmp_path):
    assert _run([PY, "-c", "pass"], tmp_path).leftover_descendants == 0


def test_a_concurrent_call_keeps_its_own_children(tmp_path):
    """A daemon escaping call A is ended; call B's process, still working, is not touched."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    slow: list = []
    other = threading.Thread(
        target=lambda: slow.append(
            _run([PY, "-c", "import time; time.sleep(1.5); print('done')"], tmp_path / "b")
        )
    )
    other.start()
    outcome = _run([PY, "-c", ESCAPE, str(tmp_path / "a" / "pid")], tmp_path / "a")
    other.join()
    assert wait_dead(read_pid(tmp_path / "a" / "pid"), within_s=2)
    assert outcome.leftover_descendants == 1
    assert (slow[0].status, slow[0].exit_code) == ("ok", 0)


HARNESS = textwrap.dedent(
    """
    import json, os, sys, time
    if os.fork() == 0:
        os.setsid()
        open("daemon.pid", "w").write(str(os.getpid()))
        time.sleep(60)
        os._exit(0)
    time.sleep(0.3)
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
    assert wait_dead(int(daemon_pid.read_text()), within_s=2)


def test_bench_tool_ends_a_daemon(tmp_path):
    raw = live_bench_run(tmp_path / "run")
    (tmp_path / "harness.py").write_text(HARNESS)
    out = run_premath(
        "bench", "tool", "--run-dir", "run", "--json", "--", PY, "harness.py", "r.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert wait_dead(int((tmp_path / "daemon.pid").read_text()), within_s=2)
    events = [orjson.loads(line) for line in (raw / "events.jsonl").read_bytes().splitlines()]
    assert events[-1]["leftover_descendants"] == 1
