"""Timing and memory of real child processes, measured interleaved with a baseline.

Ratios beat absolute times on a noisy machine: each benchmark measures its baseline in the same
run, alternating runs of ours and the baseline. Peak memory comes from the child's rusage, taken
by a small launcher (`_launch.py`) so the benchmark's own size never counts.
"""

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"
PREMATH = [sys.executable, "-m", "premath"]
_LAUNCHER = Path(__file__).resolve().parent / "_launch.py"


@dataclass(frozen=True)
class Sample:
    median_s: float
    p90_s: float
    peak_rss_mb: float


@dataclass(frozen=True)
class Row:
    measure: str
    size: str
    ours: str
    baseline: str
    ratio: str
    target: str
    verdict: str


def compile_premath() -> None:
    """Compile premath's bytecode, as `pip install` does: a checkout used with
    PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every module in every child, and the
    benchmarks would measure the compiler."""
    import compileall

    import premath

    compileall.compile_dir(os.path.dirname(premath.__file__), quiet=1)


def run_once(
    argv: Sequence[str], cwd: Path | None = None, stdin: bytes | None = None
) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one run of `argv`; its output is discarded."""
    launched = _launch(argv, cwd, stdin)
    return launched.elapsed_s, launched.peak_rss_mb


def run_cpu(argv: Sequence[str], cwd: Path | None = None) -> tuple[float, float]:
    """CPU seconds (user + system, the child's and its reaped children's) and peak RSS (MB) of
    one run: on a loaded machine CPU time varies less than wall time."""
    launched = _launch(argv, cwd, None)
    return launched.cpu_s, launched.peak_rss_mb


def run_timed(argv: Sequence[str], cwd: Path | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one run."""
    launched = _launch(argv, cwd, None)
    return launched.elapsed_s, launched.cpu_s, launched.peak_rss_mb


@dataclass(frozen=True)
class _Launched:
    elapsed_s: float
    cpu_s: float
    peak_rss_mb: float


def _launch(argv: Sequence[str], cwd: Path | None, stdin: bytes | None) -> _Launched:
    """One run through `_launch.py`, so the peak memory measured is the command's own."""
    proc = subprocess.run(
        [sys.executable, "-I", "-S", os.fspath(_LAUNCHER), *argv],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark launcher failed: {proc.stderr.decode()[-2000:]}")
    report = json.loads(proc.stdout)
    if report["returncode"] != 0:
        raise RuntimeError(f"benchmark command failed ({report['returncode']}): {' '.join(argv)}")
    return _Launched(report["elapsed_s"], report["cpu_s"], report["peak_rss_mb"])


def summarise(times: list[float], peaks: list[float]) -> Sample:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return Sample(statistics.median(ordered), p90, max(peaks))


def measure(argv: Sequence[str], runs: int, cwd: Path | None = None, warmups: int = 1) -> Sample:
    for _ in range(warmups):
        run_once(argv, cwd)
    results = [run_once(argv, cwd) for _ in range(runs)]
    return summarise([t for t, _ in results], [m for _, m in results])


def measure_interleaved(
    ours: Sequence[str],
    baseline: Sequence[str],
    runs: int,
    cwd: Path | None = None,
    before: Callable[[], None] | None = None,
) -> tuple[Sample, Sample]:
    """Alternate runs of ours and the baseline so both see the same machine noise; `before`
    runs (untimed) before each of ours."""
    prepare = before or (lambda: None)
    prepare()
    run_once(ours, cwd)
    run_once(baseline, cwd)
    ours_runs, base_runs = [], []
    for _ in range(runs):
        prepare()
        ours_runs.append(run_once(ours, cwd))
        base_runs.append(run_once(baseline, cwd))
    return (
        summarise([t for t, _ in ours_runs], [m for _, m in ours_runs]),
        summarise([t for t, _ in base_runs], [m for _, m in base_runs]),
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def timed_row(measure: str, size: str, ours: Sample, base: Sample, *, target: str, ok: bool) -> Row:
    """Ours against the baseline: median, p90 and peak memory, and the ratio of the medians."""
    return Row(
        measure=measure,
        size=size,
        ours=f"{ms(ours.median_s)} (p90 {ms(ours.p90_s)}), {ours.peak_rss_mb:.0f} MB",
        baseline=f"{ms(base.median_s)}, {base.peak_rss_mb:.0f} MB",
        ratio=f"{ours.median_s / base.median_s:.1f}x",
        target=target,
        verdict=verdict(ok),
    )
