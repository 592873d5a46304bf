"""Start-up of each hot agent command against a bare interpreter (target: at most 3.5x).

Agents call these commands hundreds of times: each row is one command on a small project (a
session, a 20-row trajectory, 50 issues, one join-check turn), measured per call in a fresh
process, median of runs interleaved with `python -I -c pass` of the same interpreter. Both run
in an installed copy of premath (`_installed.py`: an editable install's finder would slow the
bare interpreter too and flatter the ratio). Times are CPU seconds of the child alone (wall
time on a shared machine mostly measures the other tenants), on compiled bytecode. Over budget,
a row names the top `-X importtime` offenders.
"""

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import orjson

from benchmarks._installed import installed_python
from benchmarks._measure import Row, Sample, ms, run_cpu, run_once, summarise, verdict
from benchmarks.bench_join_check import turn

TARGET_RATIO = 3.5
WRITE_ARGS = ["--state", "active", "--issue-id", "bd-7", "--summary", "bench"]
APPEND_ARGS = ["--step-id", "w1.bd-7.1", "--action", "run.check", "--result-class", "completed"]
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("harness-session", "read", "--json"),
    ("harness-session", "write", *WRITE_ARGS, "--json"),
    ("harness-session", "bootstrap", "--json"),
    ("harness-trajectory", "append", *APPEND_ARGS, "--json"),
    ("harness-trajectory", "query", "--json"),
    ("harness-join-check", "--input", "turn.json", "--json"),
    ("issue", "ready", "--json"),
    ("issue", "list", "--json"),
    ("issue", "show", "bd-7", "--json"),
    ("issue", "claim-next", "--assignee", "w1", "--json"),
    ("issue", "update", "bd-9", "--notes", "bench", "--json"),
)


def _project(folder: Path, premath: Sequence[str]) -> None:
    """A small project: 50 open issues, a session, 20 trajectory rows, one join-check turn."""
    premath_dir = folder / ".premath"
    premath_dir.mkdir()
    rows = [
        {"id": f"bd-{n}", "title": f"Issue {n}", "description": "Acceptance:\n- works",
         "status": "open", "priority": n % 4, "issue_type": "task",
         "created_at": "2026-02-22T00:00:00Z", "updated_at": "2026-02-22T00:00:00Z"}
        for n in range(1, 51)
    ]  # fmt: skip
    lines = sorted(orjson.dumps(row) + b"\n" for row in rows)
    (premath_dir / "issues.jsonl").write_bytes(b"".join(lines))
    (folder / "turn.json").write_bytes(orjson.dumps(turn(1)))
    run_once([*premath, "harness-session", "write", *WRITE_ARGS], cwd=folder)
    for n in range(20):
        step = ["--step-id", f"w1.bd-{n}.1", "--action", "run.check", "--result-class", "completed"]
        run_once([*premath, "harness-trajectory", "append", *step], cwd=folder)


def _offenders(argv: Sequence[str], cwd: Path, top: int = 5) -> str:
    """The `-X importtime` modules with the largest own time."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    own: list[tuple[int, str]] = []
    for line in done.stderr.decode(errors="replace").splitlines():
        parts = line.split("|")
        own_us = parts[0].removeprefix("import time:").strip()
        if len(parts) == 3 and own_us.isdigit():
            own.append((int(own_us), parts[2].strip()))
    own.sort(reverse=True)
    return ", ".join(f"{name} {micros / 1000:.1f} ms" for micros, name in own[:top])


def _interleaved(commands: dict[str, Sequence[str]], runs: int, cwd: Path) -> dict[str, Sample]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[float]] = {name: [] for name in commands}
    for round_number in range(runs + 1):
        for name, argv in commands.items():
            cpu, peak = run_cpu(argv, cwd)
            if round_number:
                times[name].append(cpu)
                peaks[name].append(peak)
    return {name: summarise(times[name], peaks[name]) for name in commands}


def rows(quick: bool) -> list[Row]:
    folder = Path(tempfile.mkdtemp(prefix="premath-bench-"))
    try:
        with installed_python() as python:
            premath = [python, "-m", "premath"]
            _project(folder, premath)
            commands: dict[str, Sequence[str]] = {"bare": [python, "-I", "-c", "pass"]}
            for argv in COMMANDS:
                commands[" ".join(argv)] = [*premath, *argv]
            return _table(_interleaved(commands, 5 if quick else 31, folder), commands, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _table(
    samples: dict[str, Sample], commands: dict[str, Sequence[str]], folder: Path
) -> list[Row]:
    bare = samples.pop("bare")
    table = []
    for name, ours in samples.items():
        ratio = ours.median_s / bare.median_s
        ok = ratio <= TARGET_RATIO
        note = "" if ok else f"; slowest imports: {_offenders(commands[name], folder)}"
        table.append(
            Row(
                measure=f"start-up: {name.removesuffix(' --json').split(' --')[0]}",
                size="per call, CPU median (p90), installed copy",
                ours=f"{ms(ours.median_s)} ({ms(ours.p90_s)}){note}",
                baseline=f"python -I -c pass {ms(bare.median_s)}",
                ratio=f"{ratio:.2f}x",
                target=f"<= {TARGET_RATIO:g}x",
                verdict=verdict(ok),
            )
        )
    return table
