"""Ctrl-C or SIGTERM while a writer waits for the issues lock: a clear error, nothing written."""

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from tests.harness.loop_support import make_issues

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_lock_wait_exits_1_and_leaves_the_store_alone(tmp_path, signum):
    make_issues(tmp_path, ["bd-1"])
    store = tmp_path / ".premath" / "issues.jsonl"
    before = store.read_bytes()
    marker = tmp_path / ".premath" / "issues.jsonl.lock"
    marker.write_text(f"pid={os.getpid()}\nutc=2026-03-01T00:00:00Z\n")  # held by a live process
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "premath",
            "issue",
            "update",
            "bd-1",
            "--status",
            "closed",
            "--json",
        ],
        cwd=tmp_path,
        env={**os.environ, "PREMATH_LOCK_TIMEOUT_SECONDS": "30"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_as_a_foreground_job,
    )
    _wait_until_queued(store.parent, proc)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert orjson.loads(stdout)["error"]["code"] == "interrupted"
    assert b"error: interrupted (Ctrl-C or SIGTERM) before the command finished" in stderr
    assert store.read_bytes() == before
    assert marker.read_text().startswith(f"pid={os.getpid()}\n")  # the holder's lock untouched
    assert sorted(p.name for p in store.parent.iterdir()) == ["issues.jsonl", "issues.jsonl.lock"]


def _wait_until_queued(folder, proc) -> None:
    """Until the writer's own files beside the marker show it waiting: a fixed sleep is too
    short on a loaded machine, where start-up alone can take seconds."""
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".issues.jsonl.lock.") for p in folder.iterdir()):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the writer never queued for the lock"
        time.sleep(0.02)


def _as_a_foreground_job() -> None:
    """Ctrl-C reaches a terminal's foreground job: SIGINT at its default even when this suite was
    started in the background of a script (where SIGINT is ignored, and a child inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
