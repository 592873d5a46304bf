"""Many real processes appending to one trajectory at once: every row arrives, whole."""

import itertools
import multiprocessing
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import orjson

from premath.record.trajectory import append_step, query_trajectory

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
FORK = multiprocessing.get_context("fork")
WRITERS, APPENDS, CLI_APPENDS = 8, 200, 4


def _append_many(path: str, writer: int, barrier) -> None:
    barrier.wait()
    for n in range(APPENDS):
        append_step(
            path,
            step_id=f"w{writer}.{n}",
            action="worker.loop",
            result_class="completed" if n % 3 else "retry_needed_lease_active",
            witness_refs=[f"artifacts/w{writer}/{n}.json"] * (n % 4),
            finished_at=f"2026-02-22T00:{n // 60:02d}:{n % 60:02d}Z",
            now=NOW,
            lock_timeout=60,
        )


def test_eight_processes_and_the_cli_appending_at_once_lose_and_glue_nothing(tmp_path):
    path = str(tmp_path / "t.jsonl")
    barrier = FORK.Barrier(WRITERS + 1)
    writers = [FORK.Process(target=_append_many, args=(path, w, barrier)) for w in range(WRITERS)]
    for writer in writers:
        writer.start()
    barrier.wait()
    cli = [
        subprocess.Popen(
            [sys.executable, "-m", "premath", "harness-trajectory", "append", "--path", path,
             "--step-id", f"cli.{n}", "--action", "cli", "--result-class", "ok", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
        )
        for n in range(CLI_APPENDS)
    ]  # fmt: skip
    seen, reads = 0, 0
    while any(writer.is_alive() for writer in writers):  # readers never fail during appends
        if Path(path).exists():
            total = query_trajectory(path, "latest", 3)["totalCount"]
            assert total >= seen
            seen, reads = total, reads + 1
    for writer in writers:
        writer.join(timeout=120)
        assert writer.exitcode == 0
    for process in cli:
        stdout, stderr = process.communicate(timeout=60)
        assert (process.returncode, stderr) == (0, b"")
        assert orjson.loads(stdout)["row"]["action"] == "cli"

    lines = Path(path).read_bytes().split(b"\n")
    assert lines.pop() == b""  # the file ends with a newline
    rows = [orjson.loads(line) for line in lines]
    library_rows = [row for row in rows if row["action"] == "worker.loop"]
    assert len(library_rows) == WRITERS * APPENDS == 1600
    assert len(rows) == WRITERS * APPENDS + CLI_APPENDS
    assert len({row["stepId"] for row in rows}) == len(rows)
    for writer in range(WRITERS):  # each writer's rows in its own order
        mine = [row["stepId"] for row in library_rows if row["stepId"].startswith(f"w{writer}.")]
        assert mine == [f"w{writer}.{n}" for n in range(APPENDS)]
    writer_of = [row["stepId"].split(".")[0] for row in library_rows]
    switches = sum(a != b for a, b in itertools.pairwise(writer_of))
    assert switches > WRITERS  # the writers really ran at the same time
    projection = query_trajectory(path, "retry-needed", 5)
    assert (projection["totalCount"], projection["retryNeededCount"]) == (1604, 8 * 67)
    assert reads > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]
