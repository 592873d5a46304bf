"""Concurrent and killed writers of the session and ledger, with real processes."""

import os
import random
from datetime import UTC, datetime

import orjson

from premath.harness.feature_ledger import load_ledger, read_prefix, write_feature
from premath.harness.session import load_session, write_session
from tests.support.cli import run_premath
from tests.support.processes import FORK, kill_when

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def _update_session(path: str, worker: int, count: int, barrier) -> None:
    barrier.wait()
    for n in range(count):
        write_session(
            path,
            now=NOW,
            lock_timeout_s=30,
            state="active",
            summary=f"w{worker}-{n}",
            witness_refs=(f"w{worker}",),
            issues_path="none.jsonl",
        )


def test_eight_processes_updating_one_session_never_corrupt_it(tmp_path):
    path = str(tmp_path / "s.json")
    write_session(path, now=NOW, lock_timeout_s=5, session_id="shared", issues_path="none.jsonl")
    barrier = FORK.Barrier(9)
    workers = [FORK.Process(target=_update_session, args=(path, w, 40, barrier)) for w in range(8)]
    for worker in workers:
        worker.start()
    barrier.wait()
    reads = 0
    while any(worker.is_alive() for worker in workers):
        session = load_session(path)
        assert session["sessionId"] == "shared"
        reads += 1
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    cli = run_premath(
        "harness-session",
        "write",
        "--path",
        path,
        "--state",
        "active",
        "--summary",
        "cli",
        "--json",
        cwd=tmp_path,
    )
    assert cli.returncode == 0, cli.stderr
    final = load_session(path)
    assert (final["sessionId"], final["summary"]) == ("shared", "cli")
    assert reads > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def _write_forever(folder: str, ready) -> None:
    ready.set()
    n = 0
    while True:
        n += 1
        write_session(
            f"{folder}/s.json",
            now=NOW,
            lock_timeout_s=30,
            state="active",
            summary="x" * (n % 5000),
            issues_path="none.jsonl",
        )
        write_feature(
            f"{folder}/l.json",
            feature_id=f"f{n % 50}",
            status="pending",
            summary="y" * (n % 3000),
            now=NOW,
            lock_timeout_s=30,
        )


def test_writers_killed_at_random_moments_never_leave_corrupt_artifacts(tmp_path):
    folder = str(tmp_path)
    rng = random.Random(7)
    kills = 0
    while kills < 200:
        changed = os.stat(folder).st_mtime_ns
        kill_when(
            _write_forever,
            (folder,),
            lambda changed=changed: os.stat(folder).st_mtime_ns != changed,  # writer at work
            rng.uniform(0, 0.02),  # from there: a loaded machine may not run it at once
        )
        kills += 1
        if (tmp_path / "s.json").exists():
            load_session(folder + "/s.json")
        if (tmp_path / "l.json").exists():
            load_ledger(folder + "/l.json", read_prefix(folder + "/l.json"))
    # The next writer recovers any lock left by the dead and sweeps its temp files.
    write_session(folder + "/s.json", now=NOW, lock_timeout_s=5, issues_path="none.jsonl")
    write_feature(
        folder + "/l.json", feature_id="last", status="pending", now=NOW, lock_timeout_s=5
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.json", "s.json"]
    orjson.loads((tmp_path / "l.json").read_bytes())
