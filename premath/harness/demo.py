"""`premath demo`: two parallel workers drain built-in sample issues, then the KPI report.

Everything happens in a temporary folder that is removed afterwards: sample issues with
dependencies (each with acceptance criteria and a verification command, so `issue check`
accepts them), two worktrees, a coordinator running one worker process per worktree, a work
command that writes a file per issue and a verify command that checks it.
"""

import shlex
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from premath.models.vocabulary import DEFAULT_ISSUES_PATH

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


def run_demo(now: Callable[[], datetime], lock_timeout_s: float) -> dict[str, Any]:
    """Run the sample coordinator in a temporary folder; return its summary and the KPI."""
    from premath.harness.coordinator import CoordinatorConfig, run_coordinator
    from premath.harness.kpi import kpi_report
    from premath.issues.memory import check

    python = shlex.quote(sys.executable)
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="premath-demo-") as folder:
        root = Path(folder)
        issues = str(root / DEFAULT_ISSUES_PATH)
        count = write_sample_issues(issues, now(), lock_timeout_s)
        worktrees = []
        for name in ("w1", "w2"):
            (root / name).mkdir()
            worktrees.append(str(root / name))
        work_cmd = f"{python} -c {shlex.quote(WORK_SNIPPET)}"
        verify_cmd = f"{python} -c {shlex.quote(VERIFY_SNIPPET)}"
        cfg = CoordinatorConfig(
            repo_root=folder,
            issues_path=issues,
            session_path=str(root / ".premath" / "harness_session.json"),
            ledger_path=str(root / ".premath" / "harness_feature_ledger.json"),
            trajectory_path=str(root / ".premath" / "harness_trajectory.jsonl"),
            worktrees=tuple(worktrees),
            rounds=len(SAMPLE_ISSUES),
            worker_prefix="worker",
            max_steps_per_worker=len(SAMPLE_ISSUES),
            worker_options=("--work-cmd", work_cmd, "--verify-cmd", verify_cmd),
        )
        outcome = run_coordinator(cfg, now=now, report=lines.append)
        kpi = kpi_report(
            trajectory_path=cfg.trajectory_path,
            session_path=cfg.session_path,
            issues_path=issues,
        )
        graph = check(issues, now=now(), note_warn_threshold=2000)
    coordinator = outcome.to_document()
    coordinator.pop("rounds")
    return {
        "action": "demo",
        "sampleIssueCount": count,
        "workerCount": len(worktrees),
        "coordinator": coordinator,
        "issueCheck": "accepted" if graph.accepted else "rejected",
        "progress": lines,
        "kpi": kpi,
    }


def demo_text(document: dict[str, Any]) -> str:
    from premath.harness.kpi import kpi_text

    coordinator = document["coordinator"]
    head = [
        f"premath demo: {document['workerCount']} workers, {document['sampleIssueCount']} sample "
        f"issues, in a temporary folder",
        *document["progress"],
        f"[coordinator] rounds={coordinator['roundCount']} closed={coordinator['closedCount']} "
        f"failed={coordinator['failedCount']}; issue check: {document['issueCheck']}",
    ]
    return "\n".join([*head, kpi_text(document["kpi"])])
