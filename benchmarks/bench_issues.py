"""`issue ready`, `issue claim-next` and `issue replay-events` on generated stores and logs.

Two store forms at 10k and 100k issues: `canonical` (our bytes: 6-digit fractions) and `foreign`
(the same rows with Go's RFC3339Nano times, as beads and hand-written stores hold them: 1 to 9
fraction digits, trailing zeros trimmed). Targets at 100k issues, whoever wrote the store: no
slower than the reference, and claim-next at most half the reference's peak memory; without
`PREMATH_REFERENCE_BIN` the reference is not run and the canonical targets of the reference's
published figures apply to both forms (ready under 0.7 s, claim-next under 0.8 s and at most
97 MB: half the reference's 194 MB). claim-next rewrites the store, so each run gets a fresh copy
(the copy is not timed). Times are CPU seconds (the command's and its reaped children's, so our
parallel store check counts), medians of runs interleaved with the other form and the
reference, robust on a loaded machine. The replay row streams a log of
1M events (10k with --quick) into a new store: its peak memory stays bounded by the store.
"""

import os
import random
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

from benchmarks._measure import (
    CACHE,
    PREMATH,
    Row,
    Sample,
    ms,
    run_cpu,
    run_once,
    run_timed,
    summarise,
    verdict,
)

SIZES = {"10k": 10_000, "100k": 100_000}
FORMS = ("canonical", "foreign")
TARGETS_S = {("claim-next", "100k"): 0.8, ("ready", "100k"): 0.7}
BASELINE = [sys.executable, "-I", "-c", "pass"]
REFERENCE_ENV = "PREMATH_REFERENCE_BIN"
CLAIM_MEMORY_MB = {("canonical", "100k"): 97, ("foreign", "100k"): 97}
"""Half the reference's published peak for claim-next (194 MB), applied when it does not run."""
REPLAY_MEMORY_MB = 150
"""The replay's peak memory bound: the store it builds, not the log (1M events: 340 MB)."""
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
_STAMP = re.compile(rb'"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\.[0-9]+Z"')


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


def open_store(count: int) -> bytes:
    """`count` open issues, nothing else: what claimers drain."""
    rows = [
        {"id": f"bd-{n:05d}", "title": f"Issue {n}", "status": "open", "priority": 2,
         "issue_type": "task", "created_at": "2026-02-22T00:00:00Z",
         "updated_at": "2026-02-22T00:00:00Z", "ephemeral": False}
        for n in range(1, count + 1)
    ]  # fmt: skip
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def foreign_form(store: bytes, seed: int = 11) -> bytes:
    """The store with every fractional time as Go writes it: 1-9 digits, trailing zeros cut."""
    rng = random.Random(seed)

    def go_time(match: re.Match[bytes]) -> bytes:
        digits = "".join(rng.choices("0123456789", k=rng.randint(1, 9))).rstrip("0")
        return b'"' + match.group(1) + (f".{digits}" if digits else "").encode() + b'Z"'

    return _STAMP.sub(go_time, store)


def unsorted_form(store: bytes, seed: int = 13) -> bytes:
    """The store's lines in a random order, as a tool that appends or rewrites in its own order
    leaves them."""
    lines = store.splitlines(keepends=True)
    random.Random(seed).shuffle(lines)
    return b"".join(lines)


def store_path(label: str, form: str = "canonical") -> Path:
    path = CACHE / f"issues-{label}{'' if form == 'canonical' else '-' + form}.jsonl"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        data = generate_store(SIZES[label])
        forms = {"canonical": lambda: data, "foreign": lambda: foreign_form(data),
                 "unsorted": lambda: unsorted_form(data)}  # fmt: skip
        path.write_bytes(forms[form]())
    return path


def write_log(path: Path, events: int, issues: int, seed: int = 5) -> None:
    """An event log: each issue upserted once, then random upserts and edges between them.

    Written as it is generated, so the benchmark never holds a 1M-line list.
    """
    rng = random.Random(seed)
    stamp = "2026-02-22T00:00:00Z"
    with path.open("wb") as handle:
        for number in range(events):
            issue_id = f"bd-{number if number < issues else rng.randrange(issues)}"
            if number >= issues and number % 5 == 0:
                target = f"bd-{rng.randrange(issues)}"
                event = {"event_id": f"e{number}", "issue_id": issue_id, "occurred_at": stamp,
                         "action": "add_dependency", "depends_on_id": target,
                         "type": "related"}  # fmt: skip
            else:
                issue = {"id": issue_id, "title": f"update {number}", "status": "open",
                         "priority": 2, "issue_type": "task", "created_at": stamp,
                         "updated_at": stamp, "ephemeral": False}  # fmt: skip
                event = {"event_id": f"e{number}", "issue_id": issue_id, "occurred_at": stamp,
                         "action": "upsert_issue", "issue": issue}  # fmt: skip
            handle.write(orjson.dumps({"schema": "issue.event.v1", **event}) + b"\n")


def _interleaved(
    commands: dict[str, Sequence[str]], runs: int, cwd: Path, before: Callable[[str], None]
) -> dict[str, Sample]:
    """CPU time and peak memory of each command, run in turn (`before(name)` each run: e.g. a
    fresh store copy), after one warm-up round."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[float]] = {name: [] for name in commands}
    for round_number in range(runs + 1):
        for name, argv in commands.items():
            before(name)
            cpu, peak = run_cpu(argv, cwd)
            if round_number:
                times[name].append(cpu)
                peaks[name].append(peak)
    return {name: summarise(times[name], peaks[name]) for name in commands}


def _row(
    measure: str,
    size: str,
    form: str,
    samples: dict[str, Sample],
    target_s: float | None,
    memory_mb: int | None = None,
) -> Row:
    """One store form's row: against the reference when it ran, else the interpreter's start
    (and `memory_mb`, the reference's published peak halved); a foreign store also against the
    canonical one (same size, same run)."""
    ours = samples[f"ours {form}"]
    text = f"{ms(ours.median_s)} CPU (p90 {ms(ours.p90_s)}, {ours.peak_rss_mb:.0f} MB)"
    versus_canonical = ""
    if form != "canonical":
        canonical = samples["ours canonical"]
        versus_canonical = (
            f"{ours.median_s / canonical.median_s:.2f}x canonical, "
            f"{ours.peak_rss_mb / canonical.peak_rss_mb:.2f}x MB; "
        )
    reference = samples.get(f"reference {form}")
    if reference is not None:
        half_memory = measure.endswith("claim-next")
        ok = ours.median_s <= reference.median_s
        ok = ok and (not half_memory or ours.peak_rss_mb <= reference.peak_rss_mb / 2)
        return Row(
            measure=measure,
            size=size,
            ours=text,
            baseline=f"reference ran: {ms(reference.median_s)}, {reference.peak_rss_mb:.0f} MB",
            ratio=f"{versus_canonical}{ours.median_s / reference.median_s:.2f}x ref, "
            f"{ours.peak_rss_mb / reference.peak_rss_mb:.2f}x MB",
            target="<= reference" + (", <= 1/2 MB" if half_memory else ""),
            verdict=verdict(ok),
        )
    base = samples["baseline"]
    target = "-" if target_s is None else f"< {target_s * 1000:.0f} ms"
    ok = target_s is None or ours.median_s < target_s
    if memory_mb is not None:
        target = f"{target}, <= {memory_mb} MB"
        ok = ok and ours.peak_rss_mb <= memory_mb
    return Row(
        measure=measure,
        size=size,
        ours=text,
        baseline=f"{ms(base.median_s)} (python start; reference not run)",
        ratio=f"{versus_canonical}{ours.median_s / base.median_s:.1f}x",
        target=target,
        verdict="-" if target == "-" else verdict(ok),
    )


def _commands(reference: str | None, args: Callable[[str], list[str]]) -> dict[str, Sequence[str]]:
    """Ours (and the reference) on each store form, and the interpreter's start alone."""
    commands: dict[str, Sequence[str]] = {"baseline": BASELINE}
    for form in FORMS:
        commands[f"ours {form}"] = [*PREMATH, *args(form)]
        if reference:
            commands[f"reference {form}"] = [reference, *args(form)]
    return commands


def _store_rows(label: str, runs: int, reference: str | None) -> list[Row]:
    """Both store forms of one size, measured interleaved so their ratio sees one machine."""
    sources = {form: store_path(label, form) for form in FORMS}
    rows = []
    ready = _commands(
        reference, lambda form: ["issue", "ready", "--issues", str(sources[form]), "--json"]
    )
    ready_samples = _interleaved(ready, runs, CACHE, lambda name: None)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        targets = {form: work / f"issues-{form}.jsonl" for form in FORMS}

        def fresh_copy(name: str) -> None:
            form = name.rpartition(" ")[2]
            if form in targets:
                shutil.copyfile(sources[form], targets[form])

        claim_args = ["issue", "claim-next", "--assignee", "bench", "--json", "--issues"]
        claim = _commands(reference, lambda form: [*claim_args, str(targets[form])])
        claim_samples = _interleaved(claim, runs, work, fresh_copy)
    for form in FORMS:
        size = f"{label} issues, {form}"
        target = TARGETS_S.get(("ready", label))
        rows.append(_row("issue ready", size, form, ready_samples, target))
        target = TARGETS_S.get(("claim-next", label))
        memory = CLAIM_MEMORY_MB.get((form, label))
        rows.append(_row("issue claim-next", size, form, claim_samples, target, memory))
    return rows


def _replay_row(events: int, issues: int) -> Row:
    path = CACHE / f"events-{events}.jsonl"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        write_log(path, events, issues)
    with tempfile.TemporaryDirectory() as folder:
        argv = [*PREMATH, "issue", "replay-events", "--events", str(path),
                "--issues", f"{folder}/issues.jsonl"]  # fmt: skip
        elapsed, peak = run_once(argv, Path(folder))
    log_mb = path.stat().st_size / 2**20
    return Row(
        measure="issue replay-events (streamed)",
        size=f"{events:,} events, {issues:,} issues, {log_mb:.0f} MB log",
        ours=f"{ms(elapsed)}, {peak:.0f} MB",
        baseline="-",
        ratio=f"{peak / log_mb:.2f}x log size (memory)",
        target=f"< {REPLAY_MEMORY_MB} MB",
        verdict=verdict(peak < REPLAY_MEMORY_MB),
    )


SLIM_TARGETS = {
    "issue ready": (None, 0.35),
    "issue list": (0.9, 0.5),
    "dep diagnostics": (0.8, 0.5),
    "issue claim-next": (None, 0.35),
    "issue claim-next (unsorted store)": (0.8, 0.5),
}
"""(time ratio, memory ratio) against the reference in the same run: issue 26's slim reads,
issue 33's time targets."""


def _slim_rows(label: str, runs: int, reference: str | None) -> list[Row]:
    """Issue 26's slim reads at one size: peak memory (and time where it has a target) against
    the reference in the same run; ours alone when it is not given."""
    canonical, unsorted = store_path(label), store_path(label, "unsorted")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        copy = work / "issues.jsonl"
        commands = {
            "issue ready": (["issue", "ready"], canonical, False),
            "issue list": (["issue", "list"], canonical, False),
            "dep diagnostics": (["dep", "diagnostics"], canonical, False),
            "issue claim-next": (["issue", "claim-next", "--assignee", "b"], canonical, True),
            "issue claim-next (unsorted store)": (
                ["issue", "claim-next", "--assignee", "b"], unsorted, True,
            ),
        }  # fmt: skip
        for name, (args, source, writes) in commands.items():
            programs = {"ours": list(PREMATH)}
            if reference:
                programs["reference"] = [reference]
            walls: dict[str, list[float]] = {who: [] for who in programs}
            times: dict[str, list[float]] = {who: [] for who in programs}
            peaks: dict[str, list[float]] = {who: [] for who in programs}
            for round_number in range(runs + 1):
                for who, program in programs.items():
                    target = source
                    if writes:
                        shutil.copyfile(source, copy)
                        target = copy
                    argv = [*program, *args, "--issues", str(target), "--json"]
                    wall, cpu, peak = run_timed(argv, work)
                    if round_number:
                        walls[who].append(wall)
                        times[who].append(cpu)
                        peaks[who].append(peak)
            samples = {who: summarise(times[who], peaks[who]) for who in programs}
            wall_s = {who: statistics.median(walls[who]) for who in programs}
            rows.append(_slim_row(name, label, samples, wall_s, reference is not None))
    return rows


def _slim_row(
    name: str, label: str, samples: dict[str, Sample], wall_s: dict[str, float], same_run: bool
) -> Row:
    """Peak memory against the reference's; where a time target applies, wall time (ours may
    use both cores: its stored-form proof runs beside the decoding), CPU shown too."""
    ours = samples["ours"]
    time_target, memory_target = SLIM_TARGETS[name]
    target = f"<= {memory_target:g}x MB"
    if time_target is not None:
        target += f", <= {time_target:g}x time"
    measure = f"{name} (slim read)"
    size = f"{label} issues"
    ours_text = f"{ours.peak_rss_mb:.0f} MB, {ms(wall_s['ours'])} ({ms(ours.median_s)} CPU)"
    if not same_run:
        return Row(measure, size, ours_text, "reference not run", "-", target, "-")
    ref = samples["reference"]
    ref_s, ref_mb = wall_s["reference"], ref.peak_rss_mb
    memory_ratio = ours.peak_rss_mb / ref_mb
    ok = memory_ratio <= memory_target
    ratio = f"{memory_ratio:.2f}x MB"
    baseline = f"reference ran: {ref_mb:.0f} MB"
    if time_target is not None:
        ok = ok and wall_s["ours"] <= time_target * ref_s
        ratio += f", {wall_s['ours'] / ref_s:.2f}x time"
        baseline += f", {ms(ref_s)} ({ms(ref.median_s)} CPU)"
    return Row(measure, size, ours_text, baseline, ratio, target, verdict(ok))


def rows(quick: bool) -> list[Row]:
    reference = os.environ.get(REFERENCE_ENV) or None
    labels = ["10k"] if quick else ["10k", "100k"]
    runs = 3 if quick else 15
    result = []
    for label in labels:
        result.extend(_store_rows(label, runs, reference))
    result.extend(_slim_rows(labels[-1], runs, reference))
    result.append(_replay_row(10_000, 1_000) if quick else _replay_row(1_000_000, 50_000))
    return result
