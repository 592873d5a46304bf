"""The merge queue behind the local coordinator (specs/remote-workers.md "Merge queue"): its
workers hold the issues file directly, yet with `--repo` each clones the bare remote into its
worktree, delivers its branch and closes an issue only once it has landed on the integration
branch. A 4-deep chain closes in order through two worktrees, each branch holding its
blockers' work; without `--land` main never moves, with it main follows the integration head."""

import subprocess
import sys
from typing import Any

import orjson
import pytest

from tests.support.remote import INTEGRATION, Project, git, issue_row, make_project

pytestmark = pytest.mark.timeout(300)

CHAIN = ("bd-2", "bd-3", "bd-4", "bd-5")
WORK = (
    "case $PREMATH_ISSUE_ID in bd-2|bd-3|bd-4|bd-5) echo $PREMATH_ISSUE_ID >> chain.txt;; "
    "*) mkdir -p out && touch out/$PREMATH_ISSUE_ID;; esac"
)


def chain_rows() -> list[dict[str, Any]]:
    """bd-2 -> bd-3 -> bd-4 -> bd-5, each green only on top of its blockers' lines; bd-9 beside
    them, so the first round runs both worktrees at once."""
    rows = []
    for at, issue_id in enumerate(CHAIN):
        needed = " && ".join(f"grep -qx {done} chain.txt" for done in CHAIN[: at + 1])
        blockers = (
            [{"issue_id": issue_id, "depends_on_id": CHAIN[at - 1], "type": "blocks"}] if at else []
        )
        rows.append(issue_row(issue_id, f"sh -c '{needed}'", dependencies=blockers))
    rows.append(issue_row("bd-9", "sh -c 'test -f out/bd-9'"))
    return rows


def coordinator(project: Project, *extra: str) -> tuple[int, dict[str, Any], str]:
    folder = project.root.parent
    for name in ("w1", "w2"):
        (folder / name).mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "premath", "harness-loop", "coordinator",
         "--worktree", str(folder / "w1"), "--worktree", str(folder / "w2"),
         "--repo", str(project.remote), "--work-cmd", WORK, "--rounds", "10", *extra, "--json"],
        cwd=project.root, capture_output=True, check=False, timeout=280,
    )  # fmt: skip
    return done.returncode, orjson.loads(done.stdout or b"{}"), done.stderr.decode()


def contains(project: Project, ancestor: str, descendant: str) -> bool:
    done = git("merge-base", "--is-ancestor", ancestor, descendant, cwd=project.remote, check=False)
    return done.returncode == 0


def test_a_chain_lands_in_order_through_two_worktrees_and_main_stays_put(tmp_path):
    project = make_project(tmp_path, chain_rows(), tokens={})
    main_before = project.refs()["main"]
    code, document, stderr = coordinator(project)
    assert code == 0, stderr
    assert document["stoppedReason"] == "no_ready_issue"
    first = document["rounds"][0]["workers"]
    assert len(first) == 2  # both worktrees worked at once, racing for the queue
    issues = project.issues
    assert {issues[i]["status"] for i in (*CHAIN, "bd-9")} == {"closed"}
    branches = project.branches()
    assert sorted(branches) == sorted(f"premath/{i}" for i in (*CHAIN, "bd-9"))
    head = project.integration()
    assert head is not None
    for at, issue_id in enumerate(CHAIN):
        commit = branches[f"premath/{issue_id}"]
        for blocker in CHAIN[:at]:
            assert contains(project, branches[f"premath/{blocker}"], commit), (blocker, issue_id)
        landed, rest = project.landed_witness(issue_id)
        assert rest == [f"git://premath/{issue_id}@{commit}"]
        assert contains(project, commit, landed)
        assert contains(project, landed, head)
    assert git("show", f"{head}:chain.txt", cwd=project.remote).stdout.split() == list(CHAIN)
    assert git("show", f"{head}:out/bd-9", cwd=project.remote).returncode == 0
    assert project.refs()["main"] == main_before  # without --land main is never touched
    # Each worktree is its worker's home: its clone and the queue's checkout; the records stay
    # with the issues file, in the project's one trajectory.
    for name in ("w1", "w2"):
        assert (tmp_path / name / "repo" / ".git").is_dir()
        assert (tmp_path / name / "integration").is_dir()
    lines = (project.root / ".premath" / "harness_trajectory.jsonl").read_bytes().splitlines()
    rows = [orjson.loads(line) for line in lines if line]
    landed_refs = {
        ref for row in rows for ref in row["witnessRefs"] if ref.startswith("merge-queue://")
    }
    expected = {f"merge-queue://landed/{INTEGRATION}@{project.landed_witness(i)[0]}" for i in CHAIN}
    assert expected <= landed_refs
    assert not (project.root / "repo").exists()


def test_land_moves_main_to_the_integration_head(tmp_path):
    project = make_project(tmp_path, [issue_row("bd-9", "sh -c 'test -f out/bd-9'")], tokens={})
    code, document, stderr = coordinator(project, "--land")
    assert code == 0, stderr
    assert document["closedCount"] == 1
    head = project.integration()
    assert head is not None
    assert project.refs()["main"] == head
    assert "landed: main" in project.issues["bd-9"]["notes"]


def snapshot_while_merged(project: Project, issue_id: str) -> str:
    """A verification that, run on the merge (in the queue's checkout), copies the issues file
    aside: what the authority holds while the queue verifies."""
    seen = project.root.parent / "seen.jsonl"
    issues = project.root / ".premath" / "issues.jsonl"
    return (
        f"sh -c 'test -f out/{issue_id} && case $PWD in */integration) cp {issues} {seen};; esac'"
    )


def queue_state_seen(project: Project, issue_id: str) -> dict[str, Any]:
    lines = (project.root.parent / "seen.jsonl").read_bytes().splitlines()
    row = next(row for row in map(orjson.loads, lines) if row and row["id"] == issue_id)
    return {"record": row["metadata"]["premathMergeQueue"], "lease": row["lease"]["lease_id"]}


def test_the_issue_shows_each_queue_state_while_the_queue_works(tmp_path):
    project = make_project(tmp_path, [], tokens={})
    row = issue_row("bd-9", snapshot_while_merged(project, "bd-9"))
    (project.root / ".premath" / "issues.jsonl").write_bytes(orjson.dumps(row) + b"\n")
    code, _, stderr = coordinator(project)
    assert code == 0, stderr
    seen = queue_state_seen(project, "bd-9")
    head = project.integration()
    assert head is not None
    onto = git("rev-parse", f"{head}^1", cwd=project.remote).stdout.strip()
    assert seen["record"] == {
        "state": "verifying",
        "branch": "premath/bd-9",
        "integrationBranch": INTEGRATION,
        "onto": onto,
        "step": seen["record"]["step"],
        "leaseId": seen["lease"],
    }
    closed = project.issues["bd-9"]
    assert "premathMergeQueue" not in closed["metadata"]  # the verdict is the note now
    lines = (project.root / ".premath" / "harness_trajectory.jsonl").read_bytes().splitlines()
    (step,) = [orjson.loads(line) for line in lines if line]
    commit = project.branches()["premath/bd-9"]
    assert [ref for ref in step["witnessRefs"] if ref.startswith("merge-queue://")] == sorted(
        [
            f"merge-queue://queued/premath/bd-9@{commit}",
            f"merge-queue://merging/main@{onto}",
            f"merge-queue://verifying/{INTEGRATION}@{head}",
            f"merge-queue://landed/{INTEGRATION}@{head}",
        ]
    )
