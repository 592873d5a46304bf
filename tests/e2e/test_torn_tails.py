"""A torn trajectory tail never becomes permanent: SIGKILL mid-append, a short write (issue 17)."""

import os
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson

from premath.record.trajectory import append_step, query_trajectory
from tests.support.cli import run_premath
from tests.support.processes import HANG_GUARD_S, kill_when

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
BIG = 64 * 1024


def _append_big_rows_forever(path: str, generation: int, ready) -> None:
    ready.set()
    n = 0
    while True:
        append_step(
            path, step_id=f"g{generation}.{n}", action="a", result_class="completed",
            witness_refs=["w" * BIG], now=NOW, lock_timeout=30,
        )  # fmt: skip
        n += 1


def _quarantined(folder: Path) -> list[Path]:
    return sorted(folder.glob("t.jsonl.torn.*"))


def test_sigkill_mid_append_of_64k_rows_never_leaves_a_permanent_torn_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.touch()
    rng = random.Random(17)
    torn_seen = checked = generation = 0
    deadline = time.monotonic() + 3 * HANG_GUARD_S  # a kill lands inside a write now and then
    with path.open("rb") as file:  # appends never replace the file: one descriptor sees all
        while torn_seen < 3:
            assert time.monotonic() < deadline, f"{generation} kills, {torn_seen} inside a write"
            before = os.fstat(file.fileno()).st_size
            kill_when(
                _append_big_rows_forever,
                (str(path), generation),
                lambda before=before: os.fstat(file.fileno()).st_size != before,  # writer at work
                rng.uniform(0, 0.01),  # a few rows' time, measured from there
            )
            generation += 1
            (tmp_path / "t.jsonl.lock").unlink(missing_ok=True)  # the killed writer's own marker
            file.seek(checked)
            fresh = file.read()  # every byte before `checked` ended a row already checked
            # A new torn tail: a writer killed before it moved the last one aside left that one.
            torn_seen += (
                bool(fresh) and not fresh.endswith(b"\n") and checked + len(fresh) != before
            )
            # Every line ended since the last look is a whole row: no tail was ever glued on.
            assert all(orjson.loads(line) for line in fresh[: fresh.rfind(b"\n") + 1].splitlines())
            checked += fresh.rfind(b"\n") + 1
    # Readers skip the torn tail; the next append moves it aside and its row lands whole.
    assert query_trajectory(str(path), "latest", 1)["totalCount"] == path.read_bytes().count(b"\n")
    outcome = run_premath(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "after",
        "--action", "a", "--result-class", "ok", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert outcome.returncode == 0, outcome.stderr
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert rows[-1]["stepId"] == "after"
    assert all(row["witnessRefs"] == ["w" * BIG] for row in rows[:-1])
    query = run_premath("harness-trajectory", "query", "--path", "t.jsonl", "--json", cwd=tmp_path)
    assert query.returncode == 0, query.stderr
    assert orjson.loads(query.stdout)["totalCount"] == len(rows)
    assert len(_quarantined(tmp_path)) >= 1
    assert all(not q.read_bytes().endswith(b"\n") for q in _quarantined(tmp_path))


def test_an_unparseable_tail_is_quarantined_with_a_warning_and_never_glued(tmp_path):
    path = tmp_path / "t.jsonl"
    append_step(path, step_id="s1", action="a", result_class="ok", now=NOW, lock_timeout=1)
    good = path.read_bytes()
    path.write_bytes(good + b'{"schema":1,"stepKi')
    outcome = run_premath(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s2",
        "--action", "a", "--result-class", "ok", cwd=tmp_path,
    )  # fmt: skip
    assert outcome.returncode == 0
    [quarantine] = _quarantined(tmp_path)
    assert quarantine.read_bytes() == b'{"schema":1,"stepKi'
    assert outcome.stderr.decode() == (
        f"warning: t.jsonl: an incomplete last line (19 bytes, left by an interrupted writer) "
        f"was moved to {quarantine.name}\n"
    )
    lines = path.read_bytes().splitlines()
    assert [orjson.loads(line)["stepId"] for line in lines] == ["s1", "s2"]


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_short_write_under_rlimit_fsize_is_rolled_back(tmp_path):
    path = tmp_path / "t.jsonl"
    append_step(path, step_id="s1", action="a", result_class="ok", now=NOW, lock_timeout=1)
    before = path.read_bytes()
    argv = [
        sys.executable, "-m", "premath", "harness-trajectory", "append", "--path", "t.jsonl",
        "--step-id", "big", "--action", "a", "--result-class", "ok",
        "--witness-ref", "w" * BIG, "--json",
    ]  # fmt: skip
    limited = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, check=False,
        preexec_fn=_limit_file_size(len(before) + 4096),  # room for 4 KiB of the 64 KiB row
    )  # fmt: skip
    assert limited.returncode == 1
    error = orjson.loads(limited.stdout)["error"]
    assert error["code"] == "io_error"
    assert "File too large" in error["message"]
    assert path.read_bytes() == before  # the first 4 KiB written were truncated away
    again = run_premath(
        "harness-trajectory", "append", "--path", "t.jsonl", "--step-id", "s2",
        "--action", "a", "--result-class", "ok", cwd=tmp_path,
    )  # fmt: skip
    assert (again.returncode, again.stderr) == (0, b"")
    assert [orjson.loads(x)["stepId"] for x in path.read_bytes().splitlines()] == ["s1", "s2"]
