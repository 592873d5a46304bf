"""The dashboard's data: board columns, leases by the clock, the bottleneck, what a refresh
re-reads, and the run folders it may serve."""

import os
from datetime import UTC, datetime

import pytest

from premath.clock import FrozenClock
from premath.errors import InputInvalid
from premath.observe.board import issue_board
from premath.observe.builder import BuildPaths
from premath.observe.dashboard import Dashboard, DashboardSources
from premath.observe.facts import issue_facts
from premath.observe.runs import run_entry
from tests.support.observation import (
    blocks,
    issue,
    lease,
    sample_issues,
    seed_project,
    write_issues,
)

NOW = (datetime(2026, 3, 1, tzinfo=UTC).timestamp().__int__(), 0)


def test_columns_leases_and_the_bottleneck():
    rows = [
        issue(
            "a",
            "root blocker",
            "in_progress",
            assignee="w",
            lease=lease("a", "w", "2026-02-01T00:00:00Z"),
        ),
        issue("b", "waits on a", dependencies=[blocks("b", "a")]),
        issue("c", "waits on b", dependencies=[blocks("c", "b")]),
        issue("d", "waits on a too", dependencies=[blocks("d", "a")]),
        issue("e", "waits on closed f", dependencies=[blocks("e", "f")]),
        issue("f", "done", "closed"),
        issue("g", "odd status", "someday"),
        issue("h", "related only", dependencies=[{"depends_on_id": "b", "type": "related"}]),
        issue("i", "live lease", lease=lease("i", "x", "2099-01-01T00:00:00Z")),
    ]
    board = issue_board([issue_facts(row["id"], row) for row in rows], NOW)
    columns = {key: row["column"] for key, row in board.issues.items()}
    assert columns == {
        "a": "in_progress",
        "b": "blocked",
        "c": "blocked",
        "d": "blocked",
        "e": "ready",
        "f": "closed",
        "g": "blocked",
        "h": "ready",
        "i": "ready",
    }
    assert board.issues["a"]["downstream"] == 3  # b, d, and c through b
    assert board.bottleneck == "a"
    assert board.issues["a"]["lease"]["state"] == "stale"
    assert board.issues["i"]["lease"]["state"] == "active"
    assert board.issues["c"]["blockers"] == ["b"]


def test_blockers_and_dependencies_are_in_natural_order():
    """Issue 35: `bd-5, bd-9, bd-11`, as issue listings order ids, not `bd-11, bd-5, bd-9`."""
    ids = ["bd-11", "bd-5", "bd-9"]
    rows = [
        issue("bd-1", "waits", dependencies=[blocks("bd-1", target) for target in ids]),
        *(issue(target, "open") for target in ids),
    ]
    board = issue_board([issue_facts(row["id"], row) for row in rows], NOW)
    assert board.issues["bd-1"]["blockers"] == ["bd-5", "bd-9", "bd-11"]
    assert board.issues["bd-1"]["dependsOn"] == ["bd-5", "bd-9", "bd-11"]


def test_a_cycle_does_not_hang_the_downstream_count():
    rows = [
        issue("a", "x", dependencies=[blocks("a", "b")]),
        issue("b", "y", dependencies=[blocks("b", "a")]),
    ]
    board = issue_board([issue_facts(row["id"], row) for row in rows], NOW)
    assert {row["column"] for row in board.issues.values()} == {"blocked"}


def test_a_refresh_reads_only_what_changed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seed_project(tmp_path)
    paths = BuildPaths.resolve(os.fspath(tmp_path))
    sources = DashboardSources(
        "artifacts/observation/latest.json",
        live=paths,
        trajectory_path=os.fspath(tmp_path / ".premath" / "harness_trajectory.jsonl"),
        runs_dir=os.fspath(tmp_path / ".premath" / "runs"),
    )
    dashboard = Dashboard(sources, FrozenClock(datetime(2026, 3, 1, tzinfo=UTC)))
    first = dashboard.refresh()
    assert first is not None
    assert {"surface", "issues", "bottleneck", "trajectory", "kpi", "runs"} <= set(first)
    reads = dashboard._reader.reads
    assert dashboard.refresh() is None
    assert dashboard.refresh() is None
    assert dashboard._reader.reads == reads  # nothing changed, nothing read
    rows = sample_issues()
    rows[0]["title"] = "Renamed"
    write_issues(tmp_path, rows)
    update = dashboard.refresh()
    assert update is not None
    assert [row["id"] for row in update["issues"]["upsert"]] == ["bd-1"]
    assert update["issues"]["remove"] == []
    assert dashboard._reader.reads == reads + 1  # the issues file alone
    assert dashboard.snapshot()["version"] == update["version"] == 2


def test_run_files_stay_inside_their_run(tmp_path):
    runs = tmp_path / "runs"
    (runs / "r1" / "trials" / "t1").mkdir(parents=True)
    (runs / "r1" / "run.json").write_text("{}")
    (runs / "r1" / "trials" / "t1" / "stdout.txt").write_text("hello")
    (tmp_path / "secret.txt").write_text("secret")
    (runs / "r1" / "link").symlink_to(tmp_path / "secret.txt")
    (runs / "r2").symlink_to(tmp_path)
    assert run_entry(os.fspath(runs), "r1", "trials/t1/stdout.txt").data == b"hello"
    assert run_entry(os.fspath(runs), "r1", "trials").names == ("t1/",)
    for run_id, inner in [
        ("r1", "../../secret.txt"),
        ("r1", "link"),
        ("..", "secret.txt"),
        ("r2", "secret.txt"),
        ("r1/../..", "secret.txt"),
        ("missing", "x"),
    ]:
        with pytest.raises(InputInvalid):
            run_entry(os.fspath(runs), run_id, inner)
