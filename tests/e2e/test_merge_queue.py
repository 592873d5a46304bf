"""The merge queue (specs/remote-workers.md "Merge queue") with real remote workers: each a
`premath harness-loop worker --mcp-url ... --repo ...` process claiming through a real
`mcp-serve` over loopback HTTP and delivering to a bare git remote. A dependency chain closes in
order with each branch holding its blockers' work; of two conflicting changes one lands and the
other is given back with `merge_conflict` and the path, then lands once redone on the new head;
two changes green alone and red together land only the first; `--land` moves main, and its
absence never does."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from premath.harness.retry import BUILTIN_POLICY_PATH, policy_digest
from premath.models.merge_queue import latest_queue_record
from tests.support.remote import (
    INTEGRATION,
    Project,
    fleet_tokens,
    git,
    issue_row,
    make_project,
    mcp_server,
    out_check,
    run_worker,
    worker_argv,
)

pytestmark = pytest.mark.timeout(300)

CHAIN = ("bd-2", "bd-3", "bd-4", "bd-5")
APPEND_CHAIN = "echo $PREMATH_ISSUE_ID >> chain.txt"


def chain_project(tmp_path: Path) -> Project:
    """bd-2 -> bd-3 -> bd-4 -> bd-5: each blocked by the one before, each verified by every
    line its blockers wrote (so it is green only on top of their work)."""
    rows = []
    for at, issue_id in enumerate(CHAIN):
        needed = " && ".join(f"grep -qx {done} chain.txt" for done in CHAIN[: at + 1])
        blockers = (
            [{"issue_id": issue_id, "depends_on_id": CHAIN[at - 1], "type": "blocks"}] if at else []
        )
        rows.append(issue_row(issue_id, f"sh -c '{needed}'", dependencies=blockers))
    return make_project(tmp_path, rows, tokens=fleet_tokens("w1", "w2"))


def contains(project: Project, ancestor: str, descendant: str) -> bool:
    done = git("merge-base", "--is-ancestor", ancestor, descendant, cwd=project.remote, check=False)
    return done.returncode == 0


def trajectory(project: Project) -> list[dict[str, Any]]:
    """The authority's trajectory: remote workers ship their rows there (the fleet's record)."""
    lines = (project.root / ".premath" / "harness_trajectory.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines if line]


def test_a_four_deep_chain_closes_in_order_each_branch_holding_its_blockers_work(tmp_path):
    project = chain_project(tmp_path)
    main_before = project.refs()["main"]
    with mcp_server(project, "--mutation-policy", "open") as server:
        code, document, stderr = run_worker(
            server.url, project, "w1",
            "--repo", str(project.remote), "--checkout-dir", str(tmp_path / "co"),
            "--work-cmd", APPEND_CHAIN, "--max-steps", "10",
        )  # fmt: skip
    assert code == 0, stderr
    assert document["closedIssueIds"] == list(CHAIN)
    branches = project.branches()
    assert sorted(branches) == [f"premath/{issue_id}" for issue_id in CHAIN]
    for at, issue_id in enumerate(CHAIN):
        commit = branches[f"premath/{issue_id}"]
        for blocker in CHAIN[:at]:
            assert contains(project, branches[f"premath/{blocker}"], commit), (blocker, issue_id)
        landed, rest = project.landed_witness(issue_id)
        assert rest == [f"git://premath/{issue_id}@{commit}"]
        assert contains(project, commit, landed)
        assert f"state: landed\nbranch: premath/{issue_id}" in project.issues[issue_id]["notes"]
    head = project.integration()
    assert head == project.landed_witness(CHAIN[-1])[0]
    shown = git("show", f"{head}:chain.txt", cwd=project.remote).stdout
    assert shown.split() == list(CHAIN)
    assert project.refs()["main"] == main_before  # without --land main is never touched
    rows = trajectory(project)
    for row, issue_id in zip(rows, CHAIN, strict=True):
        landed = project.landed_witness(issue_id)[0]
        assert row["resultClass"] == "completed"
        assert f"merge-queue://landed/{INTEGRATION}@{landed}" in row["witnessRefs"]
    assert "[worker:w1] merge-queue bd-3: merging premath/bd-3 onto premath/integration@" in stderr


class Racer:
    """A worker process whose work waits at a barrier folder until `width` issues have been
    worked, so the racers' changes all start from the same integration head."""

    def __init__(self, project: Project, url: str, worker_id: str, work: str, *extra: str):
        barrier = project.root.parent / "barrier"
        barrier.mkdir(exist_ok=True)
        waits = (
            f"touch {barrier}/$PREMATH_ISSUE_ID; "
            f"while [ $(ls {barrier} | wc -l) -lt 2 ]; do sleep 0.05; done"
        )
        folder = project.root.parent
        self.home = folder / "co" / worker_id
        self.stdout_path = folder / f"{worker_id}.stdout"
        self.stderr_path = folder / f"{worker_id}.stderr"
        argv = worker_argv(
            url, project, worker_id,
            "--repo", str(project.remote), "--checkout-dir", str(folder / "co"),
            "--work-cmd", f"{work} && {waits}", *extra,
        )  # fmt: skip
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(argv, cwd=folder, stdout=out, stderr=err)

    def finish(self, timeout: float = 240) -> tuple[int, dict[str, Any], str]:
        code = self.process.wait(timeout=timeout)
        return (
            code,
            orjson.loads(self.stdout_path.read_bytes() or b"{}"),
            self.stderr_path.read_text(),
        )


def race(project: Project, url: str, work: str, *extra: str) -> dict[str, tuple[int, dict, str]]:
    racers = {name: Racer(project, url, name, work, *extra) for name in ("w1", "w2")}
    return {name: racer.finish() for name, racer in racers.items()}


def steps_of(outcomes: dict[str, tuple[int, dict, str]]) -> list[dict[str, Any]]:
    return [step for _, document, _ in outcomes.values() for step in document["steps"]]


def test_conflicting_changes_one_lands_the_other_is_given_back_then_lands_redone(tmp_path):
    rows = [issue_row(issue_id, out_check(issue_id)) for issue_id in ("bd-1", "bd-2")]
    project = make_project(tmp_path, rows, tokens=fleet_tokens("w1", "w2"))
    work = "echo $PREMATH_ISSUE_ID > shared.txt && mkdir -p out && touch out/$PREMATH_ISSUE_ID"
    with mcp_server(project, "--mutation-policy", "open") as server:
        outcomes = race(project, server.url, work, "--max-steps", "3", "--continue-on-failure")
    steps = steps_of(outcomes)
    (refused,) = [step for step in steps if step["outcome"] == "failed"]
    loser = refused["issueId"]
    winner = "bd-2" if loser == "bd-1" else "bd-1"
    assert refused["resultClass"] == "failed_integration"
    assert refused["failureClasses"] == ["merge_conflict"], refused["mergeQueue"]["message"]
    assert refused["mergeQueue"]["conflictPaths"] == ["shared.txt"]
    assert refused["mergeQueue"]["state"] == "failed"
    assert refused["leaseAction"] == "issue_lease_release"  # the default policy's `stop`
    completed = [step["issueId"] for step in steps if step["outcome"] == "completed"]
    assert sorted(completed) == ["bd-1", "bd-2"]  # the loser too, redone
    issues = project.issues
    assert {issues[i]["status"] for i in ("bd-1", "bd-2")} == {"closed"}
    assert "failureClass: merge_conflict\n" in issues[loser]["notes"]
    assert "conflictPath: shared.txt" in issues[loser]["notes"]
    # What the dashboard's issue detail shows: the last verdict, landed on the redo.
    shown = latest_queue_record(issues[loser]["notes"])
    assert shown is not None
    assert (shown["state"], shown["integrationCommit"]) == ("landed", project.integration())
    # Its first branch is kept as it was; the redo went to a branch of its own, from the head
    # the winner left, and landed on top of it.
    branches = project.branches()
    assert sorted(branches) == sorted(["premath/bd-1", "premath/bd-2", f"premath/{loser}+2"])
    assert refused["delivery"]["commit"] == branches[f"premath/{loser}"]
    head = project.integration()
    assert head is not None
    assert contains(project, branches[f"premath/{winner}"], head)
    assert not contains(project, branches[f"premath/{loser}"], head)
    assert contains(project, branches[f"premath/{winner}"], branches[f"premath/{loser}+2"])
    assert git("show", f"{head}:shared.txt", cwd=project.remote).stdout == f"{loser}\n"
    assert project.landed_witness(loser)[1] == [
        f"git://premath/{loser}+2@{branches[f'premath/{loser}+2']}"
    ]
    # The refused step is a failed step of the trajectory and of the KPI.
    rows = trajectory(project)
    failed = [row for row in rows if row["resultClass"] == "failed_integration"]
    assert len(failed) == 1
    assert {"failure://merge_conflict", "merge-queue://failed/merge_conflict"} <= set(
        failed[0]["witnessRefs"]
    )
    kpi = subprocess.run(
        [sys.executable, "-m", "premath", "harness-kpi", "--trajectory-path",
         str(project.root / ".premath" / "harness_trajectory.jsonl"), "--json"],
        cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    counts = orjson.loads(kpi.stdout)["counts"]
    assert (counts["windowRows"], counts["failedRows"]) == (len(rows), 1)


def test_changes_green_alone_and_red_together_land_only_the_first(tmp_path):
    def exclusive(mine: str, theirs: str) -> str:
        return (
            f"sh -c 'test -f out/{mine} && "
            f"if test -f out/{theirs}; then echo {mine} clashes with {theirs}; exit 1; fi'"
        )

    rows = [
        issue_row("bd-1", exclusive("bd-1", "bd-2")),
        issue_row("bd-2", exclusive("bd-2", "bd-1")),
    ]
    project = make_project(tmp_path, rows, tokens=fleet_tokens("w1", "w2"))
    work = "mkdir -p out && touch out/$PREMATH_ISSUE_ID"
    with mcp_server(project, "--mutation-policy", "open") as server:
        outcomes = race(project, server.url, work, "--max-steps", "1")
    steps = steps_of(outcomes)
    (refused,) = [step for step in steps if step["outcome"] == "failed"]
    (landed,) = [step for step in steps if step["outcome"] == "completed"]
    loser, winner = refused["issueId"], landed["issueId"]
    assert refused["failureClasses"] == ["integration_verify_failed"]
    assert f"{loser} clashes with {winner}" in refused["mergeQueue"]["outputTail"]
    issues = project.issues
    assert (issues[winner]["status"], issues[loser]["status"]) == ("closed", "open")
    assert "failureClass: integration_verify_failed" in issues[loser]["notes"]
    shown = latest_queue_record(issues[loser]["notes"])
    assert shown is not None
    assert (shown["state"], shown["failureClass"]) == ("failed", "integration_verify_failed")
    branches = project.branches()
    head = project.integration()
    assert head is not None
    assert contains(project, branches[f"premath/{winner}"], head)
    assert not contains(project, branches[f"premath/{loser}"], head)  # not landed
    assert sorted(branches) == ["premath/bd-1", "premath/bd-2"]  # both kept


def test_land_fast_forwards_main_and_its_absence_never_does(tmp_path):
    rows = [issue_row(issue_id, out_check(issue_id)) for issue_id in ("bd-1", "bd-2")]
    project = make_project(tmp_path, rows, tokens=fleet_tokens("w1"))
    main_before = project.refs()["main"]
    with mcp_server(project, "--mutation-policy", "open") as server:
        common = ("--repo", str(project.remote), "--checkout-dir", str(tmp_path / "co"))
        work = ("--work-cmd", "mkdir -p out && touch out/$PREMATH_ISSUE_ID")
        code, _, stderr = run_worker(server.url, project, "w1", *common, *work, "--max-steps", "1")
        assert code == 0, stderr
        assert project.refs()["main"] == main_before
        first = project.integration()
        code, document, stderr = run_worker(
            server.url, project, "w1", *common, *work, "--max-steps", "1", "--land"
        )
    assert code == 0, stderr
    head = project.integration()
    assert head != first
    assert project.refs()["main"] == head  # fast-forwarded to the integration head
    (step,) = document["steps"]
    assert step["mergeQueue"]["landedBranch"] == "main"
    assert "landed: main" in project.issues[step["issueId"]]["notes"]


def one_worker(project: Project, tmp_path: Path, *extra: str) -> tuple[int, dict, str]:
    with mcp_server(project, "--mutation-policy", "open") as server:
        return run_worker(
            server.url, project, "w1",
            "--repo", str(project.remote), "--checkout-dir", str(tmp_path / "co"),
            "--work-cmd", "mkdir -p out && touch out/$PREMATH_ISSUE_ID", *extra,
        )  # fmt: skip


def test_a_verification_hanging_on_the_merge_meets_the_deadline(tmp_path):
    hangs_when_merged = "sh -c 'test -f out/bd-1 && case $PWD in */integration) sleep 600;; esac'"
    project = make_project(
        tmp_path, [issue_row("bd-1", hangs_when_merged)], tokens=fleet_tokens("w1")
    )
    code, document, stderr = one_worker(
        project, tmp_path, "--max-steps", "1", "--command-timeout-seconds", "3"
    )
    assert code == 1, stderr
    (step,) = document["steps"]
    assert step["failureClasses"] == ["integration_verify_failed"]
    assert "timed out" in step["mergeQueue"]["outputTail"]
    assert project.issues["bd-1"]["status"] == "open"
    assert project.integration() is None  # nothing landed: the branch was never created


def test_a_remote_refusing_the_integration_push_gives_the_issue_back(tmp_path):
    project = make_project(
        tmp_path, [issue_row("bd-1", out_check("bd-1"))], tokens=fleet_tokens("w1")
    )
    hook = project.remote / "hooks" / "update"
    hook.write_text(
        '#!/bin/sh\ncase "$1" in refs/heads/premath/integration) '
        "echo 'integration is frozen' >&2; exit 1;; esac\n"
    )
    hook.chmod(0o755)
    code, document, stderr = one_worker(project, tmp_path, "--max-steps", "1")
    assert code == 1, stderr
    (step,) = document["steps"]
    assert step["failureClasses"] == ["integration_push_refused"]
    assert "hook declined" in step["mergeQueue"]["message"]
    assert step["mergeQueue"]["races"] == 0
    issue = project.issues["bd-1"]
    assert (issue["status"], "lease" in issue) == ("open", False)
    assert "failureClass: integration_push_refused" in issue["notes"]
    assert sorted(project.branches()) == ["premath/bd-1"]  # its branch is kept
    assert project.integration() is None


def test_an_integration_branch_pushed_to_by_hand_is_built_on_never_rewritten(tmp_path):
    project = make_project(
        tmp_path, [issue_row("bd-1", out_check("bd-1"))], tokens=fleet_tokens("w1")
    )
    other = tmp_path / "other"
    git("clone", "-q", str(project.remote), str(other), cwd=tmp_path)
    (other / "hotfix").write_text("by hand\n")
    git("add", "-A", cwd=other)
    git("commit", "-qm", "hotfix", cwd=other)
    git("push", "-q", "origin", f"HEAD:refs/heads/{INTEGRATION}", cwd=other)
    by_hand = project.integration()
    assert by_hand is not None
    code, _, stderr = one_worker(project, tmp_path, "--max-steps", "1")
    assert code == 0, stderr
    head = project.integration()
    assert head == project.landed_witness("bd-1")[0]
    assert contains(project, by_hand, head)
    # The issue's work started from the integration head: its branch holds the hotfix too.
    assert contains(project, by_hand, project.branches()["premath/bd-1"])


def test_the_retry_policy_decides_a_refused_issue_blocks_under_mark_blocked(tmp_path):
    policy = orjson.loads(BUILTIN_POLICY_PATH.read_bytes())
    policy["rules"].append(
        {
            "ruleId": "merge_conflict_blocks",
            "failureClasses": ["merge_conflict"],
            "maxAttempts": 1,
            "backoffClass": "none",
            "escalationAction": "mark_blocked",
        }
    )
    policy["policyDigest"] = policy_digest(policy)
    policy_path = tmp_path / "policy.json"
    policy_path.write_bytes(orjson.dumps(policy))
    rows = [issue_row(issue_id, out_check(issue_id)) for issue_id in ("bd-1", "bd-2")]
    project = make_project(tmp_path, rows, tokens=fleet_tokens("w1", "w2"))
    work = "echo $PREMATH_ISSUE_ID > shared.txt && mkdir -p out && touch out/$PREMATH_ISSUE_ID"
    with mcp_server(project, "--mutation-policy", "open") as server:
        outcomes = race(project, server.url, work, "--max-steps", "1", "--policy", str(policy_path))
    (refused,) = [step for step in steps_of(outcomes) if step["outcome"] == "failed"]
    assert refused["failureClasses"] == ["merge_conflict"]
    assert refused["leaseAction"] == "mark_blocked"
    issue = project.issues[refused["issueId"]]
    assert (issue["status"], "lease" in issue) == ("blocked", False)
    assert "failureClass: merge_conflict" in issue["notes"]


def test_the_authority_shows_the_queue_state_a_remote_worker_reports(tmp_path):
    seen = tmp_path / "seen.jsonl"
    issues = tmp_path / "project" / ".premath" / "issues.jsonl"
    verification = (
        f"sh -c 'test -f out/bd-1 && case $PWD in */integration) cp {issues} {seen};; esac'"
    )
    project = make_project(tmp_path, [issue_row("bd-1", verification)], tokens=fleet_tokens("w1"))
    code, document, stderr = one_worker(project, tmp_path, "--max-steps", "1")
    assert code == 0, stderr
    row = next(row for row in map(orjson.loads, seen.read_bytes().splitlines()) if row)
    head = project.integration()
    assert head is not None
    onto = git("rev-parse", f"{head}^1", cwd=project.remote).stdout.strip()
    (step,) = document["steps"]
    assert row["metadata"]["premathMergeQueue"] == {
        "state": "verifying",
        "branch": "premath/bd-1",
        "integrationBranch": INTEGRATION,
        "onto": onto,
        "step": step["stepId"],
        "leaseId": row["lease"]["lease_id"],
    }
    assert "premathMergeQueue" not in project.issues["bd-1"]["metadata"]
