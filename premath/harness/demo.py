"""`premath demo`: two parallel workers drain built-in sample issues, then the KPI report.

Everything happens in a temporary folder that is removed afterwards: sample issues with
dependencies (each with acceptance criteria and a verification command, so `issue check`
accepts them), two worktrees, a coordinator running one worker process per worktree, a work
command that writes a file per issue and a verify command that checks it.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from premath.errors import InvalidUsage
from premath.harness.coordinator import WorkerCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SAMPLE_ISSUES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("demo-1", "Parse the configuration file", ()),
    ("demo-2", "Validate configuration values", ("demo-1",)),
    ("demo-3", "Render the status page", ()),
    ("demo-4", "Add the status page route", ("demo-3",)),
    ("demo-5", "Write the changelog entry", ()),
    ("demo-6", "Package the release", ("demo-2", "demo-4")),
)
WORK_SNIPPET = (
    "import os,pathlib; i=os.environ['PREMATH_ISSUE_ID']; "
    "w=os.environ['PREMATH_WORKER_ID']; "
    "pathlib.Path(f'done-{i}.txt').write_text(f'{i} done by {w}\\n')"
)
VERIFY_SNIPPET = (
    "import os,pathlib,sys; i=os.environ['PREMATH_ISSUE_ID']; "
    "sys.exit(0 if pathlib.Path(f'done-{i}.txt').is_file() else 'check_failed: no output file')"
)


def _description(title: str) -> str:
    return (
        f"{title}.\n\nAcceptance:\n- the work file exists\n\n"
        "Verification commands:\n- `premath issue check`"
    )


def write_sample_issues(issues_path: str, now: datetime, timeout_s: float) -> int:
    from premath.issues.memory import add_issue, dep_add

    for issue_id, title, _ in SAMPLE_ISSUES:
        add_issue(
            issues_path,
            title,
            issue_id=issue_id,
            description=_description(title),
            now=now,
            timeout_s=timeout_s,
        )
    for issue_id, _, blockers in SAMPLE_ISSUES:
        for blocker in blockers:
            dep_add(
                issues_path,
                issue_id,
                blocker,
                kind="blocks",
                created_by="demo",
                now=now,
                timeout_s=timeout_s,
            )
    return len(SAMPLE_ISSUES)


def run_demo(
    now: Callable[[], datetime],
    lock_timeout_s: float,
    worker_command: WorkerCommand,
    keep: str | None = None,
) -> dict[str, Any]:
    """Run the sample coordinator in a temporary folder (or `keep`, left in place afterwards);
    return its summary and the KPI."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="premath-demo-") as folder:
            return _run_in(Path(folder), now, lock_timeout_s, worker_command, kept=False)
    kept = Path(keep)
    if kept.exists() and any(kept.iterdir()):
        raise InvalidUsage(f"--keep {keep}: the folder must be new or empty")
    kept.mkdir(parents=True, exist_ok=True)
    return _run_in(kept.resolve(), now, lock_timeout_s, worker_command, kept=True)


def _run_in(
    root: Path,
    now: Callable[[], datetime],
    lock_timeout_s: float,
    worker_command: WorkerCommand,
    *,
    kept: bool,
) -> dict[str, Any]:
    from premath.harness.coordinator import CoordinatorConfig, run_coordinator
    from premath.harness.loop_config import WorkerSettings
    from premath.harness.loop_paths import LoopPaths
    from premath.issues.memory import check
    from premath.record.kpi import kpi_report

    python = shlex.quote(sys.executable)
    lines: list[str] = []
    paths = LoopPaths.resolve(str(root))
    count = write_sample_issues(paths.issues, now(), lock_timeout_s)
    worktrees = []
    for name in ("w1", "w2"):
        (root / name).mkdir()
        worktrees.append(str(root / name))
    settings = WorkerSettings(
        paths=paths,
        work_cmd=f"{python} -c {shlex.quote(WORK_SNIPPET)}",
        verify_cmd=f"{python} -c {shlex.quote(VERIFY_SNIPPET)}",
    )
    cfg = CoordinatorConfig(
        settings=settings,
        worktrees=tuple(worktrees),
        worker_command=worker_command,
        rounds=len(SAMPLE_ISSUES),
        max_steps_per_worker=len(SAMPLE_ISSUES),
    )
    outcome = run_coordinator(cfg, now=now, report=lines.append, lock_timeout_s=lock_timeout_s)
    kpi = kpi_report(
        trajectory_path=paths.trajectory, session_path=paths.session, issues_path=paths.issues
    )
    graph = check(paths.issues, now=now(), note_warn_threshold=2000)
    coordinator = outcome.to_document()
    coordinator.pop("rounds")
    return {
        "action": "demo",
        "sampleIssueCount": count,
        "workerCount": len(worktrees),
        "folder": str(root) if kept else None,
        "coordinator": coordinator,
        "issueCheck": "accepted" if graph.accepted else "rejected",
        "progress": lines,
        "kpi": kpi,
    }


_INTERNAL_LINES = ("[coordinator] worker logs: ",)


def demo_text(document: dict[str, Any], verbose: bool = False) -> str:
    """What happened, in words; the KPI explained; what to try next (divergence-free: ours)."""
    from premath.record.kpi import kpi_text
    from premath.terminal import counted, terminal_width, wrap

    coordinator, kpi = document["coordinator"], document["kpi"]
    ratios, counts = kpi["ratios"], kpi["counts"]
    progress = [
        line
        for line in document["progress"]
        if verbose or not any(marker in line for marker in _INTERNAL_LINES)
    ]
    where = f"in {document['folder']} (kept)" if document["folder"] else "in a temporary folder"
    lines = [
        f"premath demo: {counted(document['sampleIssueCount'], 'sample issue')} with "
        f"dependencies, {counted(document['workerCount'], 'worker')} running in parallel, {where}.",
        "Each worker claims a ready issue under a lease, runs a work command and a verify "
        "command, passes the join gate, then closes the issue; blocked issues wait for their "
        "blockers.",
        "",
        *progress,
        "",
        f"Result: {coordinator['closedCount']} of {document['sampleIssueCount']} issues closed, "
        f"{coordinator['failedCount']} failed, in {counted(coordinator['roundCount'], 'round')} "
        f"(stopped: {coordinator['stoppedReason']}); the issue graph check says "
        f"{document['issueCheck']}.",
        "",
        kpi_text(kpi),
        "",
        "What the KPI numbers mean:",
        f"  rows={counts['windowRows']} issue steps and failures in the trajectory, "
        f"completed={counts['completedRows']} of them closed their issue, "
        f"workers={counts['activeWorkers']} distinct workers.",
        f"  pass_rate={ratios['gatePassRate']}: the share of steps that passed verification "
        "and the gate.",
        f"  throughput_per_worker_day={ratios['throughputPerWorkerPerDay']}: issues closed per "
        "worker per day of the window.",
        f"  kpi={ratios['kpi']}: throughput per worker-day times the pass rate; at or above "
        f"target={kpi['thresholds']['targetKpi']} the decision is pass, below "
        f"rollback={kpi['thresholds']['rollbackKpi']} rollback, in between watch "
        f"(here: {kpi['decision']['state']}).",
        "",
        "Try it in your own repository:",
    ]
    if document["folder"]:
        lines.append(f"The demo's files are in {document['folder']} (.premath/ holds the record).")
    elif not verbose:
        lines.append("Run `premath demo -v` for every line, `--keep DIR` to keep the files.")
    # Prose is fitted to the terminal; the commands to copy are already short lines.
    width = terminal_width()
    fitted = [
        part
        for line in lines
        for part in (
            line.splitlines() or [""]
            if line.startswith("[") or "\n" in line  # progress lines, the KPI's own lines
            else wrap(line.lstrip(), width, indent=line[: len(line) - len(line.lstrip())])
        )
    ]
    commands = [
        '  premath issue add "Fix the parser" \\',
        "    --description $'Acceptance:\\n- parses\\nVerification: `pytest -q`'",
        "  premath harness step --worker-id me --work-cmd 'your fix command' --json",
        "  premath harness-loop coordinator --worktree . --rounds 5 --work-cmd '...'",
    ]
    at = fitted.index("Try it in your own repository:") + 1
    return "\n".join([*fitted[:at], *commands, *fitted[at:]])
