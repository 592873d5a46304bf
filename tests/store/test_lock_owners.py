"""Lock markers judged across PID namespaces, zombies and reused pids; the timeout setting."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from premath.errors import InvalidUsage
from premath.store import markers
from premath.store.locks import LOCK_TIMEOUT_ENV, lock_timeout_from_env
from premath.store.markers import marker_owner
from premath.store.owners import owner_state, this_process
from tests.support import optional_tools
from tests.support.cli import run_premath
from tests.support.markers import REFERENCE_MARKER, marker_of
from tests.support.processes import HANG_GUARD_S

ISSUES = ".premath/issues.jsonl"
ROW = {
    "id": "bd-1", "title": "one", "status": "open", "priority": 2, "issue_type": "task",
    "created_at": "2026-02-22T00:00:00Z", "updated_at": "2026-02-22T00:00:00Z",
    "ephemeral": False,
}  # fmt: skip


def _seed(folder: Path) -> None:
    (folder / ".premath").mkdir()
    (folder / ISSUES).write_bytes(orjson.dumps(ROW) + b"\n")


def _ids(folder: Path) -> list[str]:
    return sorted(orjson.loads(line)["id"] for line in (folder / ISSUES).read_bytes().splitlines())


_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from datetime import UTC, datetime
    from pathlib import Path
    from premath.store.issues_file import mutate_store

    def add_theirs(issues):
        Path("held").write_text(str(os.getpid()))
        time.sleep(2.0)
        issues["bd-ns"] = {**issues["bd-1"], "id": "bd-ns", "title": "theirs"}
        return None, True

    mutate_store(sys.argv[1], add_theirs, now=datetime.now(UTC), timeout_s=10)
    """
)


def _pid_free_here() -> int:
    """A pid number no process of our namespace holds (the other writer will get it there)."""
    return next(pid for pid in range(400, 30000) if not Path(f"/proc/{pid}").exists())


def test_a_live_writer_in_another_pid_namespace_is_waited_for_not_broken(tmp_path):
    mode = optional_tools.require(optional_tools.pid_namespaces())
    _seed(tmp_path)
    # Inside the new namespace, burn pids so the writer's pid is one no process has here: the
    # old judgement (`kill(pid, 0)` in our namespace) called such a live writer dead.
    target = _pid_free_here()
    burn = f"i=2; while [ $i -lt {target} ]; do /bin/true; i=$((i+1)); done"
    user = ["--user", "--map-root-user"] if mode == "user" else []
    prefix = ["unshare", *user, "--pid", "--fork"]
    writer = subprocess.Popen(
        [*prefix, "--mount-proc", "sh", "-c", f'{burn}; "$0" -c "$1" "$2"', sys.executable,
         _WRITER, ISSUES],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    held = tmp_path / "held"
    deadline = time.monotonic() + 60
    while not held.exists() and writer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert held.exists(), "the namespaced writer never took the lock"
    owner = marker_owner(tmp_path / f"{ISSUES}.lock")
    assert owner is not None
    assert owner.pidns != this_process().pidns
    assert owner_state(owner) == "unknown"
    ours = run_premath(
        "issue", "add", "Ours", "--id", "bd-ours", "--json", cwd=tmp_path,
        env={LOCK_TIMEOUT_ENV: "30"},
    )  # fmt: skip
    assert writer.wait(60) == 0
    assert ours.returncode == 0, ours.stderr
    assert b"removed stale lock" not in ours.stderr
    assert _ids(tmp_path) == ["bd-1", "bd-ns", "bd-ours"]  # neither write was lost


def test_a_reference_marker_is_waited_on_then_refused_with_how_to_remove_it(tmp_path):
    _seed(tmp_path)
    lock = tmp_path / f"{ISSUES}.lock"
    lock.write_text(REFERENCE_MARKER.format(pid=999999999))  # dead here, maybe alive elsewhere
    out = run_premath("issue", "add", "Ours", "--json", cwd=tmp_path, env={LOCK_TIMEOUT_ENV: "0.3"})
    assert out.returncode == 1
    assert orjson.loads(out.stdout)["error"] == {
        "code": "lock_busy",
        "message": f"issue-memory lock busy: {ISSUES}.lock; the lock was taken by a writer that "
        "did not record its host and PID namespace (the reference, or an older premath), which "
        f"cannot be checked from here: if no process uses this store any more, remove "
        f"{ISSUES}.lock by hand",
    }
    assert lock.exists()
    assert _ids(tmp_path) == ["bd-1"]


def test_a_zombie_owner_counts_as_dead(tmp_path):
    _seed(tmp_path)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    lock = tmp_path / f"{ISSUES}.lock"
    lock.write_text(marker_of(owner.pid))
    owner.kill()  # killed, not reaped: `kill(pid, 0)` still succeeds on a zombie
    deadline = time.monotonic() + HANG_GUARD_S
    while Path(f"/proc/{owner.pid}/stat").read_text().split(") ")[1][0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        out = run_premath("issue", "add", "Ours", "--json", cwd=tmp_path)
    finally:
        owner.wait()
    assert out.returncode == 0, out.stderr
    assert f"left by process {owner.pid} that is no longer running".encode() in out.stderr
    assert _ids(tmp_path) == ["bd-1", "bd-2"]


def test_a_reused_pid_does_not_keep_a_marker_alive():

    reused = this_process()._replace(pid=1, start="-1")  # pid 1 started otherwise
    assert owner_state(reused) == "dead"
    assert owner_state(this_process()) == "alive"
    elsewhere = this_process()._replace(pidns="pid:[1]")
    assert owner_state(elsewhere) == "unknown"


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "abc", "-1", "1e999"])
def test_a_lock_timeout_that_is_not_a_finite_number_is_refused(monkeypatch, raw):
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, raw)
    with pytest.raises(InvalidUsage, match="must be a finite number of seconds"):
        lock_timeout_from_env()


def test_a_bad_lock_timeout_is_a_usage_error_at_the_cli(tmp_path):
    _seed(tmp_path)
    out = run_premath("issue", "add", "x", "--json", cwd=tmp_path, env={LOCK_TIMEOUT_ENV: "nan"})
    assert out.returncode == 2
    assert orjson.loads(out.stdout)["error"]["code"] == "usage_error"
    assert _ids(tmp_path) == ["bd-1"]


def test_an_interrupt_while_the_claim_file_is_written_leaves_no_file(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM (a KeyboardInterrupt) that lands while a claim's private file is being
    written: the file is gone when the interrupt leaves `claim` (a loaded run once left
    `.issues.jsonl.lock.<pid>.<ns>.claim` behind a SIGTERMed `issue update`)."""

    def interrupted_write(fd: int, data: bytes) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(markers, "write_all", interrupted_write)
    with pytest.raises(KeyboardInterrupt), markers.claim(str(tmp_path / "issues.jsonl.lock")):
        pass
    assert list(tmp_path.iterdir()) == []
