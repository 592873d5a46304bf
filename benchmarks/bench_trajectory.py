"""`harness-trajectory query --mode latest --limit 20` on large trajectories.

The reference needs 11-13 s and 1.5 GB for 1M rows (it loads and sorts every row); ours streams
the file keeping `limit` rows, in two processes when the file is large and a second core is free
(specs/harness-trajectory.md). Targets: 1M rows under 4 s and 150 MB on a 2-core machine. Files
come from a seeded generator and are cached under benchmarks/.cache (git-ignored).
"""

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from benchmarks._measure import CACHE, PREMATH, Row, measure_interleaved, timed_row

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


def rows(quick: bool) -> list[Row]:
    table = []
    for count, runs, target_s, target_mb in QUICK_SIZES if quick else FULL_SIZES:
        path = trajectory_file(count)
        argv = [*PREMATH, "harness-trajectory", "query", "--mode", "latest", "--limit", "20"]
        ours, base = measure_interleaved([*argv, "--path", str(path), "--json"], BASELINE, runs)
        ok = ours.median_s < target_s and ours.peak_rss_mb < target_mb
        table.append(
            timed_row(
                "trajectory query latest --limit 20",
                f"{count:,} rows",
                ours,
                base,
                target=f"< {target_s:g} s, < {target_mb:g} MB",
                ok=ok,
            )
        )
    return table
