"""`premath bench tool -- true`: what routing one agent command through premath costs.

Every command a harness runs in a benchmark goes through this gateway (deny rules, two event
appends with fsync, the bounded spawn), so its overhead is paid per tool call. Target: under
0.25 s per call on a 2-core machine, with 30,000 events already in the run.
"""

import shutil
import tempfile
from pathlib import Path

import orjson

from benchmarks._measure import PREMATH, Row, measure_interleaved, timed_row
from premath.bench.policy import policy_digest

BASELINE = ["python3", "-I", "-c", "pass"]
# (events already in the run, runs, wall-time target in seconds)
FULL_SIZES = ((0, 15, 0.25), (30_000, 15, 0.25))
QUICK_SIZES = ((0, 3, 0.25),)
AT = "2026-03-01T10:00:00.000Z"


def live_run(folder: Path, events: int) -> Path:
    """A run folder as `bench run` leaves it while its harness runs."""
    run = folder / "run"
    for sub in ("raw/in", "raw/out", "raw/tools"):
        (run / sub).mkdir(parents=True)
    policy = orjson.dumps({"version": 1, "deny": [{"argv_prefix": ["rm", "-rf"]}]})
    (run / "raw" / "policy.json").write_bytes(policy)
    rows = [{"kind": "run.started", "at": AT, "policy_digest": policy_digest(policy)}]
    rows += [
        {"kind": "tool.call", "at": AT, "call_id": f"c{n}", "argv": ["true"]} for n in range(events)
    ]
    (run / "raw" / "events.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return run


def rows(quick: bool) -> list[Row]:
    table = []
    for events, runs, target_s in QUICK_SIZES if quick else FULL_SIZES:
        folder = Path(tempfile.mkdtemp(prefix="premath-bench-tool-"))
        try:
            run = live_run(folder, events)
            argv = [*PREMATH, "bench", "tool", "--run-dir", str(run), "--json", "--", "true"]
            ours, base = measure_interleaved(argv, BASELINE, runs, cwd=folder)
        finally:
            shutil.rmtree(folder)
        table.append(
            timed_row(
                "bench tool -- true (one gateway call)",
                f"{events:,} events in the run",
                ours,
                base,
                target=f"< {target_s:g} s",
                ok=ours.median_s < target_s,
            )
        )
    return table
