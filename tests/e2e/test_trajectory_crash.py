"""A trajectory writer killed at random moments leaves whole rows, at most a torn tail that
readers skip and the next append quarantines, and a recoverable lock.

A torn tail is possible: Linux lets SIGKILL end a `write(2)` between pages, so a row crossing a
page boundary can be cut. What must hold is that no reader ever sees a broken row and nothing
already written is lost."""

import random
from datetime import UTC, datetime
from pathlib import Path

import orjson

from premath.record.trajectory import append_step, query_trajectory
from premath.record.trajectory_index import index_path
from tests.support.cli import run_premath
from tests.support.markers import marker_of
from tests.support.processes import kill_when

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
KILLS = 200


def _append_forever(path: str, generation: int, ready) -> None:
    ready.set()
    n = 0
    while True:
        append_step(
            path,
            step_id=f"g{generation}.{n}",
            action="worker.loop",
            result_class="completed",
            witness_refs=["w" * (n % 3000)],  # rows from 80 bytes to 3 kB
            now=NOW,
            lock_timeout=30,
        )
        n += 1


def test_writers_killed_at_random_moments_leave_whole_rows_and_a_recoverable_lock(tmp_path):
    path = tmp_path / "t.jsonl"
    lock = tmp_path / "t.jsonl.lock"
    rng = random.Random(20260222)
    locks_left = rows_before = writing_generations = 0
    for generation in range(KILLS):
        size = path.stat().st_size if path.exists() else 0
        kill_when(
            _append_forever,
            (str(path), generation),
            lambda size=size: path.exists() and path.stat().st_size != size,  # writer at work
            rng.uniform(0, 0.04),  # from there: a loaded machine may not run it at once
        )
        locks_left += lock.exists()
        data = path.read_bytes() if path.exists() else b""
        rows = [orjson.loads(line) for line in _whole_rows(data)]
        assert len(rows) >= rows_before  # rows are only ever added
        writing_generations += len(rows) > rows_before
        rows_before = len(rows)
        assert query_trajectory(str(path), "latest", 1)["totalCount"] == len(rows)

    assert writing_generations >= 3  # writers got to write before being killed
    assert locks_left > 0  # some kills hit a writer holding the lock...
    lock.write_text(marker_of(999999999))  # ...and one surely did
    outcome = run_premath(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "after",
        "--action", "a", "--result-class", "ok", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert outcome.returncode == 0, outcome.stderr
    assert b"removed stale lock" in outcome.stderr
    assert orjson.loads(path.read_bytes().splitlines()[-1])["stepId"] == "after"
    index = Path(index_path(str(path))).name  # the queries' own cache past 1 MiB (D26-3)
    left = sorted(p.name for p in Path(tmp_path).iterdir() if p.name != index)
    assert [name for name in left if not name.startswith("t.jsonl.torn.")] == ["t.jsonl"]
    for name in left[1:]:  # quarantined tails: cut rows, never whole ones
        assert not (tmp_path / name).read_bytes().endswith(b"\n")


def _whole_rows(data: bytes) -> list[bytes]:
    """The rows a reader sees: every line but an unterminated last one that does not parse."""
    lines = data.splitlines()
    if data and not data.endswith(b"\n"):
        try:
            orjson.loads(lines[-1])
        except orjson.JSONDecodeError:
            lines.pop()
    return lines
