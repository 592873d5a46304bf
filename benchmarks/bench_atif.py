"""`premath atif validate` and `premath atif export` on long runs.

A benchmark run of a strong agent has hundreds of turns; a long one a few thousand. Targets
(2-core machine): a 10,000-step trajectory validates, and 20,000 events export, in under 2 s.
Files come from a seeded generator and are cached under benchmarks/.cache (git-ignored).
"""

import random
from pathlib import Path

import orjson

from benchmarks._measure import (
    CACHE,
    PREMATH,
    Row,
    Sample,
    measure_interleaved,
    timed_row,
)

BASELINE = ["python3", "-I", "-c", "pass"]
# (turns, runs, wall-time target in seconds); each turn is a row, a call and its result.
FULL_SIZES = ((1_000, 15, 1.0), (10_000, 15, 2.0))
QUICK_SIZES = ((1_000, 3, 1.0),)
AT = "2026-03-01T10:00:00.000Z"


def events(turns: int, seed: int = 20260301) -> bytes:
    rng = random.Random(seed)
    lines = [{"kind": "task.instruction", "at": AT, "text": "Fix the failing test."}]
    for turn in range(turns):
        usage = {"prompt_tokens": rng.randint(100, 9000), "completion_tokens": rng.randint(5, 400)}
        lines.append(
            {
                "kind": "harness.row",
                "at": AT,
                "row": {"source": "agent", "message": f"turn {turn}", "metrics": usage},
            }
        )
        call_id = f"call_{turn + 1}"
        lines.append(
            {
                "kind": "tool.call",
                "at": AT,
                "call_id": call_id,
                "argv": ["sh", "-c", f"grep -n x file{turn}.py"],
                "function_name": "exec",
            }
        )
        lines.append(
            {
                "kind": "tool.result",
                "at": AT,
                "call_id": call_id,
                "status": "ok",
                "exit_code": 0,
                "output": "x" * rng.randint(10, 2000),
            }
        )
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def cached(name: str, make) -> Path:
    path = CACHE / name
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        temp.write_bytes(make())
        temp.replace(path)
    return path


def _row(measure: str, size: str, ours: Sample, base: Sample, target_s: float) -> Row:
    return timed_row(
        measure, size, ours, base, target=f"< {target_s:g} s", ok=ours.median_s < target_s
    )


def rows(quick: bool) -> list[Row]:
    from premath.atif.export import ExportContext, export_trajectory
    from premath.store.canonical import document_bytes

    table = []
    for turns, runs, target_s in QUICK_SIZES if quick else FULL_SIZES:
        events_path = cached(f"atif-events-{turns}.jsonl", lambda t=turns: events(t))
        size = f"{turns:,} turns ({3 * turns + 1:,} events)"

        def trajectory(path=events_path) -> bytes:
            parsed = [orjson.loads(line) for line in path.read_bytes().splitlines()]
            context = ExportContext("bench", "premath", "0.1.0", None)
            return document_bytes(export_trajectory(parsed, context).document)

        trajectory_path = cached(f"atif-trajectory-{turns}.json", trajectory)
        export = [*PREMATH, "atif", "export", str(events_path)]
        ours, base = measure_interleaved(export, BASELINE, runs)
        table.append(_row("atif export (stdout)", size, ours, base, target_s))
        validate = [*PREMATH, "atif", "validate", str(trajectory_path), "--json"]
        ours, base = measure_interleaved(validate, BASELINE, runs)
        table.append(_row("atif validate", f"{turns + 1:,} steps", ours, base, target_s))
    return table
