"""`harness-trajectory query --mode latest --limit 20` on large trajectories.

The reference loads and sorts every row; ours streams the file keeping `limit` rows, in two
processes when the file is large and a second core is free (specs/harness-trajectory.md), and
keeps a side index so a later query reads only what was appended (D26-3). Rows:
- each size, first query (no index): under 4 s and 150 MB;
- 1M rows (100k with --quick), issue 26: the first query's CPU (every process's) at most the
  reference's and its peak memory at most 0.1x; the same query repeated on the unchanged file
  at most 0.05x the reference's time; after 100 appended rows at most 0.1x.
With PREMATH_REFERENCE_BIN the reference runs on the same file in the same run; without it
these rows give our figures alone (no ratio, no verdict). Files come from a seeded generator and are
cached under benchmarks/.cache (git-ignored); each run queries a copy, so its index is fresh.
"""

import functools
import os
import random
import shutil
import statistics
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from benchmarks._measure import (
    CACHE,
    PREMATH,
    Row,
    measure_interleaved,
    ms,
    run_cpu,
    run_once,
    timed_row,
    verdict,
)

REFERENCE = os.environ.get("PREMATH_REFERENCE_BIN")
APPENDED = 100

BASELINE = ["python3", "-I", "-c", "pass"]
# (rows, runs, wall-time target in seconds, peak-memory target in MB)
FULL_SIZES = ((100_000, 15, 0.6, 150.0), (1_000_000, 15, 4.0, 150.0))
QUICK_SIZES = ((10_000, 3, 0.5, 150.0),)
RESULT_CLASSES = (
    ("completed", 60),
    ("retry_needed_lease_active", 8),
    ("retry_needed_lease_stale", 4),
    ("failed_issue_closed", 6),
    ("transient_failure", 6),
    ("policy_reject", 6),
    ("accepted", 6),
    ("Rate-Limit", 4),
)
ACTIONS = ("worker.loop", "run.check", "apply.patch", "gate.verify")
START = datetime(2026, 2, 22, tzinfo=UTC)


def _time(moment: datetime, rng: random.Random) -> str:
    """Mostly our own `...Z` shape; a few fractions and offsets, as other writers produce."""
    roll = rng.random()
    if roll < 0.95:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if roll < 0.98:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return (moment + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S+01:00")


def generate(rows: int, seed: int = 20260222) -> bytes:
    """A deterministic trajectory of `rows` worker-loop steps, about 250 bytes a row."""
    rng = random.Random(seed)
    classes = [name for name, _ in RESULT_CLASSES]
    weights = [weight for _, weight in RESULT_CLASSES]
    lines = []
    moment = START
    for index in range(rows):
        moment += timedelta(seconds=rng.randint(0, 3))
        worker, issue = rng.randint(1, 8), rng.randint(1, 5000)
        row: dict[str, object] = {
            "schema": 1,
            "stepKind": "premath.harness.step.v1",
            "stepId": f"worker-{worker}.bd-{issue}.{index}",
            "issueId": f"bd-{issue}",
            "action": rng.choice(ACTIONS),
            "resultClass": rng.choices(classes, weights)[0],
            "witnessRefs": [f"artifacts/ciwitness/w{index}.json"],
        }
        if rng.random() < 0.3:
            row["lineageRefs"] = [f"ctx://issue/bd-{issue}/{rng.getrandbits(64):016x}"]
        if rng.random() < 0.5:
            row["startedAt"] = _time(moment - timedelta(seconds=1), rng)
        row["finishedAt"] = _time(moment, rng)
        lines.append(orjson.dumps(row))
    return b"\n".join(lines) + b"\n"


def trajectory_file(rows: int) -> Path:
    path = CACHE / f"trajectory-{rows}.jsonl"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        temp.write_bytes(generate(rows))
        temp.replace(path)
    return path


def _query(program: list[str], path: Path) -> list[str]:
    return [*program, "harness-trajectory", "query", "--mode", "latest", "--limit", "20",
            "--path", str(path), "--json"]  # fmt: skip


def _append(path: Path, count: int) -> None:
    """`count` rows appended as the loop appends them (one whole line each)."""
    moment = START + timedelta(days=400)
    with open(path, "ab") as handle:
        for n in range(count):
            step = {
                "schema": 1,
                "stepKind": "premath.harness.step.v1",
                "stepId": f"late.{n}",
                "issueId": "bd-1",
                "action": "worker.loop",
                "resultClass": "completed",
                "finishedAt": (moment + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            handle.write(orjson.dumps(step) + b"\n")  # fmt: skip


def _incremental(program: list[str], source: Path, runs: int) -> dict[str, float]:
    """First query (CPU, peak), then the same query repeated (median wall), then one after
    `APPENDED` appended rows (median wall, a fresh append before each run), on a copy."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        shutil.copyfile(source, path)
        first_cpu, first_peak = run_cpu(_query(program, path))
        repeated = statistics.median(run_once(_query(program, path))[0] for _ in range(runs))
        after = []
        for _ in range(runs):
            _append(path, APPENDED)
            after.append(run_once(_query(program, path))[0])
    return {"cpu_s": first_cpu, "peak_mb": first_peak, "repeat_s": repeated,
            "after_s": statistics.median(after)}  # fmt: skip


def _index_rows(count: int, runs: int) -> list[Row]:
    source = trajectory_file(count)
    ours = _incremental(list(PREMATH), source, runs)
    size = f"{count:,} rows"
    measures = (
        ("trajectory query, first (no index): CPU, peak memory", "<= 1x CPU, <= 0.1x MB"),
        ("trajectory query repeated, file unchanged (index)", "<= 0.05x"),
        (f"trajectory query after {APPENDED} appended rows (index)", "<= 0.1x"),
    )
    texts = (
        f"{ms(ours['cpu_s'])} CPU, {ours['peak_mb']:.0f} MB",
        ms(ours["repeat_s"]),
        ms(ours["after_s"]),
    )
    if not REFERENCE:
        return [
            Row(measure, size, text, "reference not run", "-", target, "-")
            for (measure, target), text in zip(measures, texts, strict=True)
        ]
    ref = _incremental([REFERENCE], source, runs)
    cpu_ratio, peak_ratio = ours["cpu_s"] / ref["cpu_s"], ours["peak_mb"] / ref["peak_mb"]
    repeat_ratio, after_ratio = ours["repeat_s"] / ref["repeat_s"], ours["after_s"] / ref["after_s"]
    baselines = (
        f"reference ran: {ms(ref['cpu_s'])} CPU, {ref['peak_mb']:.0f} MB",
        f"reference ran: {ms(ref['repeat_s'])}",
        f"reference ran: {ms(ref['after_s'])}",
    )
    ratios = (
        f"{cpu_ratio:.2f}x CPU, {peak_ratio:.3f}x MB",
        f"{repeat_ratio:.3f}x",
        f"{after_ratio:.3f}x",
    )
    oks = (cpu_ratio <= 1.0 and peak_ratio <= 0.1, repeat_ratio <= 0.05, after_ratio <= 0.1)
    return [
        Row(measure, size, text, baseline, ratio, target, verdict(ok))
        for (measure, target), text, baseline, ratio, ok in zip(
            measures, texts, baselines, ratios, oks, strict=True
        )
    ]


def rows(quick: bool) -> list[Row]:
    table = []
    for count, runs, target_s, target_mb in QUICK_SIZES if quick else FULL_SIZES:
        with tempfile.TemporaryDirectory() as folder:  # a copy: no index from an earlier run
            path = Path(folder) / "t.jsonl"
            shutil.copyfile(trajectory_file(count), path)
            argv = [*PREMATH, "harness-trajectory", "query", "--mode", "latest", "--limit", "20"]
            index = Path(folder) / ".t.jsonl.tmp.query-index"
            ours, base = measure_interleaved(
                [*argv, "--path", str(path), "--json"],
                BASELINE,
                runs,
                before=functools.partial(index.unlink, missing_ok=True),
            )
        ok = ours.median_s < target_s and ours.peak_rss_mb < target_mb
        table.append(
            timed_row(
                "trajectory query latest --limit 20 (no index)",
                f"{count:,} rows",
                ours,
                base,
                target=f"< {target_s:g} s, < {target_mb:g} MB",
                ok=ok,
            )
        )
    table += _index_rows(100_000 if quick else 1_000_000, 3 if quick else 9)
    return table
