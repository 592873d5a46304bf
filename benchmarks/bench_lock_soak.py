"""Soak: 16 writers mutating one 20,000-issue store at once, through the real CLI.

Each writer runs `issue update <its own ids> --notes ...` back to back; every call takes the
store's lock, so the calls queue. Printed: the worst call (wait included) against the bound the
lock should keep, writers x one solo call, and the calls that failed (`lock_busy` or any other
error). The bound is "roughly" writers x one call (issue 17): up to 1.1x passes, since the solo
call is timed alone while under the soak 16 start-ups share the machine's cores. With
PREMATH_REFERENCE_BIN the same soak runs the reference on a copy of the store.

Hand-off: 16 processes take one marker back to back, each holding it for a fixed amount of CPU
work; what the lock adds to each turn (the time between one release and the next take) and the
CPU the waiters burn meanwhile (which the holder needs, on 2 cores) are the lock's own cost.
"""

import itertools
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._installed import installed_python
from benchmarks._measure import PREMATH, Row, ms, verdict
from benchmarks.bench_issues import generate_store, open_store
from premath.store.locks import hold_marker

_TIMEOUT_ENV = {"PREMATH_LOCK_TIMEOUT_SECONDS": "60"}
ROUGHLY = 1.1


def _call(argv: list[str], cwd: Path) -> tuple[float, bool]:
    start = time.perf_counter()
    proc = subprocess.run(
        argv, cwd=cwd, capture_output=True, check=False, env={**os.environ, **_TIMEOUT_ENV}
    )
    return time.perf_counter() - start, proc.returncode == 0


def _argv(program: list[str], store: Path, issue: int) -> list[str]:
    return [*program, "issue", "update", f"bd-{issue}", "--notes", f"soak {issue}",
            "--issues", str(store), "--json"]  # fmt: skip


def soak(
    program: list[str], store: Path, writers: int, calls: int
) -> tuple[float, list[float], int]:
    """(median solo call, every call's seconds under contention, failed calls)."""
    solo = statistics.median(_call(_argv(program, store, 1), store.parent)[0] for _ in range(3))
    durations: list[float] = []
    failed = 0
    guard = threading.Lock()
    barrier = threading.Barrier(writers)

    def writer(index: int) -> None:
        nonlocal failed
        barrier.wait()
        for call in range(calls):
            elapsed, ok = _call(_argv(program, store, 2 + index * calls + call), store.parent)
            with guard:
                durations.append(elapsed)
                failed += not ok

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return solo, durations, failed


def _rows(name: str, program: list[str], source: Path, writers: int, calls: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "issues.jsonl"
        shutil.copyfile(source, store)
        solo, durations, failed = soak(program, store, writers, calls)
    worst, bound = max(durations), writers * solo
    size = f"{source.stem.rsplit('-', 1)[1]} issues, "
    size += f"{writers} writers x {calls} calls"
    return [
        Row(
            measure=f"{name} lock soak: worst call (wait included)",
            size=size,
            ours=f"{ms(worst)} (median {ms(statistics.median(durations))})",
            baseline=f"{ms(bound)} ({writers} x solo call {ms(solo)})",
            ratio=f"{worst / bound:.2f}x",
            target="<= 1.1x (roughly)",
            verdict=verdict(worst <= ROUGHLY * bound),
        ),
        Row(
            measure=f"{name} lock soak: failed calls",
            size=size,
            ours=f"{failed} of {len(durations)}",
            baseline="-",
            ratio="-",
            target="0",
            verdict=verdict(failed == 0),
        ),
    ]


def _take_turns(marker: str, turns: int, hold_cpu_s: float, barrier, results) -> None:
    barrier.wait()
    lock_cpu_s, held = 0.0, []
    for _ in range(turns):
        before = time.process_time()
        with hold_marker(marker, timeout_s=60):
            taken, start = time.monotonic(), time.process_time()
            while time.process_time() < start + hold_cpu_s:
                pass
            held.append((taken, time.monotonic()))
            lock_cpu_s -= time.process_time() - start
        lock_cpu_s += time.process_time() - before
    results.put((lock_cpu_s, held))


def _hand_off_row(processes: int, turns: int, hold_cpu_s: float) -> Row:
    fork = multiprocessing.get_context("fork")
    barrier, results = fork.Barrier(processes), fork.Queue()
    with tempfile.TemporaryDirectory() as folder:
        marker = str(Path(folder) / "x.lock")
        workers = [
            fork.Process(target=_take_turns, args=(marker, turns, hold_cpu_s, barrier, results))
            for _ in range(processes)
        ]
        for worker in workers:
            worker.start()
        outcomes = [results.get() for _ in workers]
        for worker in workers:
            worker.join()
    held = sorted(span for _, spans in outcomes for span in spans)
    gaps = [after[0] - before[1] for before, after in itertools.pairwise(held)]
    total = processes * turns
    per_turn = (held[-1][1] - held[0][0]) / total
    lock_cpu = sum(cpu for cpu, _ in outcomes) / total
    return Row(
        measure="lock hand-off: time per turn (hold + hand-off)",
        size=f"{processes} processes x {turns} turns, {ms(hold_cpu_s)} CPU held",
        ours=f"{ms(per_turn)}; hand-off median {ms(statistics.median(gaps))}, "
        f"lock CPU {ms(lock_cpu)} per turn",
        baseline=f"{ms(hold_cpu_s)} (the hold alone)",
        ratio=f"{per_turn / hold_cpu_s:.2f}x",
        target="<= 1.5x",
        verdict=verdict(per_turn <= 1.5 * hold_cpu_s),
    )


DRAIN_WALL_RATIO, DRAIN_CPU_RATIO = 2.0, 2.5


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def drain(program: list[str], store: Path, claimers: int) -> tuple[float, float, int]:
    """(wall seconds, children's CPU seconds, issues claimed) for `claimers` processes looping
    on `issue claim-next` until none is left."""
    claimed = 0
    guard = threading.Lock()
    barrier = threading.Barrier(claimers + 1)

    def claimer(name: str) -> None:
        nonlocal claimed
        argv = [*program, "issue", "claim-next", "--assignee", name, "--json",
                "--issues", str(store)]  # fmt: skip
        barrier.wait()
        while True:
            done = subprocess.run(
                argv, cwd=store.parent, capture_output=True, check=False,
                env={**os.environ, **_TIMEOUT_ENV},
            )  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"claim-next failed: {done.stderr.decode()[-500:]}")
            if b'"claimed": true' not in done.stdout:
                return
            with guard:
                claimed += 1

    threads = [threading.Thread(target=claimer, args=(f"c{n}",)) for n in range(claimers)]
    for thread in threads:
        thread.start()
    cpu_before = _children_cpu_s()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start, _children_cpu_s() - cpu_before, claimed


def _drained(program: list[str], issues: int, claimers: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds per claimed issue) of one drain of a fresh store."""
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "issues.jsonl"
        store.write_bytes(open_store(issues))
        wall, cpu, claimed = drain(program, store, claimers)
    if claimed != issues:
        raise RuntimeError(f"{claimed} claims for {issues} issues")
    return wall, cpu / claimed


def _drain_row(issues: int, claimers: int) -> Row:
    with installed_python() as python:  # as users run it: no editable finder in each claimer
        wall, cpu = _drained([python, "-m", "premath"], issues, claimers)
    measure = f"{claimers} CLI claimers drain the store (claim-next until none)"
    size = f"{issues:,} open issues"
    ours = f"{wall:.1f} s, {ms(cpu)} CPU per claim"
    target = f"<= {DRAIN_WALL_RATIO:g}x wall, <= {DRAIN_CPU_RATIO:g}x CPU per claim"
    reference = os.environ.get("PREMATH_REFERENCE_BIN")
    if not reference:
        return Row(measure, size, ours, "reference not run", "-", target, "-")
    ref_wall, ref_cpu = _drained([reference], issues, claimers)
    ok = wall <= DRAIN_WALL_RATIO * ref_wall and cpu <= DRAIN_CPU_RATIO * ref_cpu
    return Row(
        measure=measure,
        size=size,
        ours=ours,
        baseline=f"reference ran: {ref_wall:.1f} s, {ms(ref_cpu)} CPU per claim",
        ratio=f"{wall / ref_wall:.2f}x wall, {cpu / ref_cpu:.2f}x CPU",
        target=target,
        verdict=verdict(ok),
    )


def rows(quick: bool) -> list[Row]:
    count, writers, calls = (2_000, 4, 3) if quick else (20_000, 16, 20)
    source = Path(tempfile.gettempdir()) / f"premath-soak-{count}.jsonl"
    if not source.exists():
        source.write_bytes(generate_store(count))
    result = [_hand_off_row(writers, 10 if quick else 50, 0.003)]
    result += _rows("premath", list(PREMATH), source, writers, calls)
    reference = os.environ.get("PREMATH_REFERENCE_BIN")
    if reference:
        result += _rows("reference", [reference], source, writers, calls)
    result.append(_drain_row(100 if quick else 1000, 16))
    return result
