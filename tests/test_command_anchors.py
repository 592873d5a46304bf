"""The command anchors the harness contract names, run as a user runs them (a subprocess of
`python3 tools/...` in a repository holding a copy of tools/): thin scripts over premath's own
commands with the reference's flags (seed 004 §2 and §9, seed 003 §13)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.loop_support import issue_rows, make_issues, trajectory

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path):
    """A repository with a copy of tools/ and two issues, as a user's would be."""
    for part in ("harness", "ci"):
        shutil.copytree(REPO / "tools" / part, tmp_path / "tools" / part)
    shutil.copy(REPO / "tools" / "premath_command.py", tmp_path / "tools")
    make_issues(tmp_path, ["bd-1", "bd-2"])
    return tmp_path


def script(root: Path, path: str, *args: str, cwd: Path | None = None, **env: str):
    return subprocess.run(
        [sys.executable, str(root / "tools" / path), *args],
        cwd=cwd or root,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_multithread_loop_worker_drains_with_the_references_flags(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = script(
        project,
        "harness/multithread_loop.py",
        *("worker", "--worker-id", "w1", "--max-steps", "5"),
        *("--work-cmd", "true", "--verify-cmd", "true", "--worktree-root", str(project)),
        cwd=elsewhere,  # --repo-root defaults to the script's repository, as the reference's
    )
    assert result.returncode == 0, result.stderr
    assert {row["status"] for row in issue_rows(project).values()} == {"closed"}
    assert not (elsewhere / ".premath").exists()
    assert [row["stepId"] for row in trajectory(project)] == ["w1.bd-1.1", "w1.bd-2.2"]


def test_multithread_loop_coordinator_reads_worktrees_from_the_environment(project):
    for name in ("wa", "wb"):
        (project / name).mkdir()
    result = script(
        project,
        "harness/multithread_loop.py",
        *("coordinator", "--rounds", "2", "--work-cmd", "true", "--verify-cmd", "true"),
        PREMATH_WORKTREES=f"{project / 'wa'},{project / 'wb'}",
    )
    assert result.returncode == 0, result.stderr
    assert {row["status"] for row in issue_rows(project).values()} == {"closed"}


@pytest.mark.parametrize(
    "args",
    [
        ["worker", "--max-steps", "1"],  # no worker id
        ["worker", "--worker-id", "w1", "--max-steps", "0"],
        ["coordinator", "--rounds", "1"],  # no worktree
        ["sideways"],
    ],
)
def test_multithread_loop_usage_errors_exit_2_and_claim_nothing(project, args):
    result = script(project, "harness/multithread_loop.py", *args)
    assert result.returncode == 2
    assert {row["status"] for row in issue_rows(project).values()} == {"open"}


def test_benchmark_kpi_reports_json_resolving_paths_against_its_repository(project, tmp_path):
    script(project, "harness/multithread_loop.py", "worker", "--worker-id", "w1",
           "--max-steps", "5", "--work-cmd", "true", "--verify-cmd", "true")  # fmt: skip
    result = script(project, "harness/benchmark_kpi.py", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kpiKind"] == "premath.multithread.throughput.v1"
    assert (report["counts"]["completedRows"], report["counts"]["workerIds"]) == (2, ["w1"])
    text = script(project, "harness/benchmark_kpi.py", "--window-hours", "0")
    assert text.returncode == 2


def test_check_issue_graph_passes_a_clean_graph_and_fails_redundant_edges(project):
    clean = script(project, "ci/check_issue_graph.py")
    assert (clean.returncode, clean.stdout) == (
        0,
        "[issue-graph] OK (issues=2, errors=0, warnings=0)\n",
    )
    make_issues(project, ["bd-3"], blocks={"bd-3": ["bd-1", "bd-2"], "bd-2": ["bd-1"]})
    drift = script(project, "ci/check_issue_graph.py", "--repo-root", str(project))
    assert drift.returncode == 1
    assert drift.stdout.splitlines()[1:3] == [
        "[issue-graph] FAIL (compactness drift: 1 finding(s))",
        "  - issue_graph.compactness.transitive_block_edge (bd-3 -> bd-1, witness=bd-2 -> bd-1)",
    ]
    negative = script(project, "ci/check_issue_graph.py", "--note-warn-threshold", "-1")
    assert negative.returncode == 1
    assert negative.stdout == "[issue-graph] FAIL (invalid --note-warn-threshold: must be >= 0)\n"
