"""Start-up cost of a hot command against a bare interpreter (target: at most 4x)."""

import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks._measure import PREMATH, Row, measure_interleaved, ms, run_once, verdict

TARGET_RATIO = 4.0


def rows(quick: bool) -> list[Row]:
    folder = Path(tempfile.mkdtemp(prefix="premath-bench-"))
    try:
        run_once(
            [*PREMATH, "harness-session", "write", "--state", "active", "--summary", "bench"],
            cwd=folder,
        )
        ours, base = measure_interleaved(
            [*PREMATH, "harness-session", "read", "--json"],
            [sys.executable, "-I", "-c", "pass"],
            runs=5 if quick else 21,
            cwd=folder,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    ratio = ours.median_s / base.median_s
    return [
        Row(
            measure="harness-session read --json (median; p90)",
            size="1 session",
            ours=f"{ms(ours.median_s)}; {ms(ours.p90_s)}",
            baseline=f"python3 -I -c pass {ms(base.median_s)}",
            ratio=f"{ratio:.2f}x",
            target=f"<= {TARGET_RATIO:g}x",
            verdict=verdict(ratio <= TARGET_RATIO),
        )
    ]
