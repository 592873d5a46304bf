"""`issue ready` and `issue claim-next` on generated 10k and 100k-issue stores.

Targets at 100k issues (the reference: 0.82 s and 0.73 s, 200-380 MB): claim-next under 0.8 s,
ready under 0.7 s. claim-next rewrites the store, so each run gets a fresh copy of it (the copy
is not timed); the baseline is a bare interpreter start.
"""

import random
import shutil
import sys
import tempfile
from pathlib import Path

import orjson

from benchmarks._measure import (
    CACHE,
    PREMATH,
    Row,
    measure_interleaved,
    ms,
    run_once,
    summarise,
    verdict,
)

SIZES = {"10k": 10_000, "100k": 100_000}
TARGETS_S = {("claim-next", "100k"): 0.8, ("ready", "100k"): 0.7}
BASELINE = [sys.executable, "-I", "-c", "pass"]
STATUSES = ("closed",) * 6 + ("open",) * 3 + ("in_progress",)
WORDS = [
    "lease",
    "graph",
    "worker",
    "verify",
    "close",
    "claim",
    "ready",
    "blocked",
    "store",
    "lock",
    "row",
    "edge",
]


def _stamp(rng: random.Random) -> str:
    return (
        f"2026-0{rng.randint(1, 2)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:"
        f"{rng.randint(10, 59)}:{rng.randint(10, 59)}."
        f"{rng.randint(100, 999)}{rng.randint(101, 999)}Z"  # stored form: never ends in 000
    )


def generate_store(count: int, seed: int = 7) -> bytes:
    """A realistic store: most issues closed, a third open, some leased, blocks edges backwards."""
    rng = random.Random(seed)
    lines = []
    for number in range(1, count + 1):
        status = rng.choice(STATUSES)
        row: dict[str, object] = {
            "id": f"bd-{number}",
            "title": " ".join(rng.choices(WORDS, k=6)),
            "description": "Acceptance:\n- " + " ".join(rng.choices(WORDS, k=12)),
            "status": status,
            "priority": rng.randint(0, 4),
            "issue_type": "task",
        }
        if status == "in_progress":
            owner = f"worker.{rng.randint(1, 16)}"
            row["assignee"] = owner
            row["lease"] = {
                "lease_id": f"lease1_bd-{number}_{owner.replace('.', '_')}",
                "owner": owner,
                "acquired_at": "2026-02-22T00:00:00.123456Z",
                "expires_at": rng.choice(("2000-01-01T00:00:00Z", "2099-01-01T00:00:00Z")),
            }
        row["created_at"] = _stamp(rng)
        row["updated_at"] = _stamp(rng)
        if status == "closed":
            row["closed_at"] = _stamp(rng)
        row["ephemeral"] = False
        if number > 10 and rng.random() < 0.5:
            row["dependencies"] = [
                {"issue_id": f"bd-{number}", "depends_on_id": f"bd-{target}", "type": "blocks"}
                for target in sorted(rng.sample(range(1, number), k=rng.randint(1, 2)))
            ]
        lines.append(orjson.dumps(row) + b"\n")
    return b"".join(sorted(lines))


def store_path(label: str) -> Path:
    path = CACHE / f"issues-{label}.jsonl"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        path.write_bytes(generate_store(SIZES[label]))
    return path


def _claim_next_sample(
    source: Path, runs: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Interleaved runs of claim-next (each on a fresh copy) and the baseline."""
    ours_t, ours_m, base_t, base_m = [], [], [], []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        target = work / "issues.jsonl"
        argv = [
            *PREMATH,
            "issue",
            "claim-next",
            "--assignee",
            "bench",
            "--issues",
            str(target),
            "--json",
        ]
        shutil.copyfile(source, target)
        run_once(argv, work)
        for _ in range(runs):
            shutil.copyfile(source, target)
            elapsed, peak = run_once(argv, work)
            ours_t.append(elapsed)
            ours_m.append(peak)
            elapsed, peak = run_once(BASELINE, work)
            base_t.append(elapsed)
            base_m.append(peak)
    return ours_t, ours_m, base_t, base_m


def _row(measure: str, label: str, ours, base) -> Row:  # type: ignore[no-untyped-def]
    target = TARGETS_S.get((measure, label))
    return Row(
        measure=f"issue {measure}",
        size=f"{label} issues",
        ours=f"{ms(ours.median_s)} (p90 {ms(ours.p90_s)}, {ours.peak_rss_mb:.0f} MB)",
        baseline=ms(base.median_s),
        ratio=f"{ours.median_s / base.median_s:.1f}x",
        target="-" if target is None else f"< {target * 1000:.0f} ms",
        verdict="-" if target is None else verdict(ours.median_s < target),
    )


def rows(quick: bool) -> list[Row]:
    labels = ["10k"] if quick else ["10k", "100k"]
    runs = 3 if quick else 15
    result = []
    for label in labels:
        source = store_path(label)
        ready_argv = [*PREMATH, "issue", "ready", "--issues", str(source), "--json"]
        ours, base = measure_interleaved(ready_argv, BASELINE, runs, cwd=source.parent)
        result.append(_row("ready", label, ours, base))
        ours_t, ours_m, base_t, base_m = _claim_next_sample(source, runs)
        result.append(
            _row("claim-next", label, summarise(ours_t, ours_m), summarise(base_t, base_m))
        )
    return result
