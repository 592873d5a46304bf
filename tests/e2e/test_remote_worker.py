"""`premath harness-loop worker --mcp-url ...` as real processes: every issue-memory read and
mutation through a real `mcp-serve` over loopback HTTP, the work delivered as a pushed branch of
a bare git remote, under both mutation policies, and every bad input of issue 23: a server that
is unreachable, a wrong token or URL, a refused push, a branch that already exists, a server
lost mid-work (back, or gone for good), answers lost after the server applied them, and a
worker that dies holding a lease (another worker reclaims the issue once the lease is stale)."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from tests.mcp.client import server_env
from tests.support.processes import HANG_GUARD_S
from tests.support.remote import (
    WRITE_OUT,
    fleet_tokens,
    git,
    issue_row,
    make_project,
    mcp_server,
    mint_fleet_witness,
    out_check,
    run_worker,
    wait_for,
    worker_argv,
)

pytestmark = pytest.mark.timeout(300)


def three_issues(tmp_path: Path, **tokens: str):
    rows = [issue_row(f"bd-{n}", out_check(f"bd-{n}")) for n in (1, 2, 3)]
    return make_project(tmp_path, rows, tokens=tokens or fleet_tokens("w1", "w2"))


def test_a_remote_worker_drains_through_mcp_and_delivers_each_issue_as_a_branch(tmp_path):
    project = three_issues(tmp_path)
    committed = (project.root / ".premath" / "issues.jsonl").read_bytes()
    with mcp_server(project, "--mutation-policy", "open") as server:
        code, document, stderr = run_worker(
            server.url,
            project,
            "w1",
            "--repo", str(project.remote), "--checkout-dir", str(tmp_path / "co"),
            "--work-cmd", WRITE_OUT, "--max-steps", "10",
        )  # fmt: skip
        callers = {line["caller"] for line in server.access_lines() if line["event"] == "tool"}
    assert code == 0, stderr
    assert document["closedIssueIds"] == ["bd-1", "bd-2", "bd-3"]
    assert document["stoppedReason"] == "no_ready_issue"
    assert "[worker:w1] claimed bd-1 (lease lease1_w1_" in stderr
    assert callers == {"w1"}  # the token line named after the worker
    branches = project.branches()
    assert sorted(branches) == ["premath/bd-1", "premath/bd-2", "premath/bd-3"]
    issues = project.issues
    for issue_id in ("bd-1", "bd-2", "bd-3"):
        issue = issues[issue_id]
        commit = branches[f"premath/{issue_id}"]
        assert (issue["status"], issue["assignee"], "lease" in issue) == ("closed", "w1", False)
        assert project.landed_witness(issue_id)[1] == [f"git://premath/{issue_id}@{commit}"]
        assert issue["metadata"]["premathWriteWitness"]["action"] == "issue.lease_finish"
        assert f"branch: premath/{issue_id}\ncommit: {commit}" in issue["notes"]
        checked = project.verify_branch(issue_id, tmp_path / f"check-{issue_id}")
        assert checked.returncode == 0, checked.stderr
        message = git("log", "-1", "--format=%B%an", commit, cwd=project.remote).stdout
        assert f"Premath-Issue: {issue_id}\nPremath-Worker: w1" in message
        assert message.endswith("premath w1\n")
    # The worker's records live in its home, beside its clone; the clone's copy of the issue
    # memory was never written (it is no authority).
    home = tmp_path / "co" / "w1"
    assert (home / "repo" / ".premath" / "issues.jsonl").read_bytes() == committed
    session = orjson.loads((home / ".premath" / "harness_session.json").read_bytes())
    assert session["issuesPath"] == server.url
    assert "issuesSnapshotRef" not in session or session["issuesSnapshotRef"] is None
    # Its step rows are in the authority's trajectory (specs/remote-workers.md "The fleet's
    # record"), none in a trajectory of its own; its outbox holds them, all delivered.
    rows = [
        orjson.loads(line)
        for line in (project.root / ".premath/harness_trajectory.jsonl").read_bytes().splitlines()
    ]
    assert [row["resultClass"] for row in rows] == ["completed"] * 3
    assert [row["stepId"] for row in rows] == ["w1.bd-1.1", "w1.bd-2.2", "w1.bd-3.3"]
    assert f"git://premath/bd-3@{branches['premath/bd-3']}" in rows[2]["witnessRefs"]
    assert not (home / ".premath/harness_trajectory.jsonl").exists()
    outbox = home / ".premath/harness_outbox.w1.jsonl"
    assert len(outbox.read_bytes().splitlines()) == 3
    assert Path(f"{outbox}.delivered").read_bytes() == b"3\n"
    # Each step's record (the bounded tails of its output) resolves at the authority.
    verify_out = ".premath/harness_steps/w1.bd-2.2/attempt-1/verify.stdout"
    assert (project.root / verify_out).is_file()


def test_the_default_policy_needs_the_fleets_instruction_witness(tmp_path):
    project = three_issues(tmp_path)
    before = (project.root / ".premath" / "issues.jsonl").read_bytes()
    with mcp_server(project) as server:  # --mutation-policy instruction-linked, the default
        code, document, stderr = run_worker(server.url, project, "w1", "--max-steps", "3")
        assert code == 1
        assert document["error"]["code"] == "authority_refused"
        assert "requires `instruction_id` on mutation tools" in document["error"]["message"]
        assert "--instruction-id" in document["error"]["message"]
        assert (project.root / ".premath" / "issues.jsonl").read_bytes() == before
        fleet = mint_fleet_witness(project)
        scoped = mint_fleet_witness(project, "only-bd-2", scope={"kind": "issue", "target": "bd-2"})
        code, document, stderr = run_worker(
            server.url, project, "w2", "--instruction-id", scoped, "--max-steps", "3",
            "--work-cmd", WRITE_OUT,
        )  # fmt: skip
        assert code == 0, stderr
        assert document["closedIssueIds"] == ["bd-2"]  # the witness's scope is all it may claim
        code, document, stderr = run_worker(
            server.url, project, "w1", "--instruction-id", fleet, "--max-steps", "3",
            "--work-cmd", WRITE_OUT,
        )  # fmt: skip
    assert code == 0, stderr
    assert document["closedIssueIds"] == ["bd-1", "bd-3"]
    written = project.issues["bd-1"]["metadata"]["premathWriteWitness"]
    assert written["instruction"]["instructionId"] == fleet
    assert written["mutationPolicy"] == "instruction-linked"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_bad_inputs_are_refused_before_anything_is_claimed(tmp_path):
    project = three_issues(tmp_path)
    before = (project.root / ".premath" / "issues.jsonl").read_bytes()
    wrong = tmp_path / "wrong-tokens"
    wrong.write_text("w1 " + "x" * 40 + "\n")
    wrong.chmod(0o600)
    with mcp_server(project, "--mutation-policy", "open") as server:
        closed_port = f"http://127.0.0.1:{_free_port()}/mcp"
        cases = {
            "unreachable": (closed_port, ["--mcp-retry-seconds", "1"]),
            "wrong token": (server.url, ["--token-file", str(wrong)]),
            "not mcp": (server.url.replace("/mcp", "/nope"), []),
            "bad repo": (server.url, ["--repo", str(tmp_path / "nothing.git")]),
        }
        outcomes = {}
        for name, (url, extra) in cases.items():
            argv = worker_argv(url, project, "w1", *extra)
            if "--token-file" in extra:  # the given file wins: drop the project's
                at = argv.index("--token-file")
                del argv[at : at + 2]
            started = time.monotonic()
            done = subprocess.run(argv, cwd=tmp_path, capture_output=True, check=False, timeout=120)
            outcomes[name] = (
                done.returncode,
                orjson.loads(done.stdout)["error"],
                time.monotonic() - started,
            )
    assert outcomes["unreachable"][0] == 1
    assert outcomes["unreachable"][1]["code"] == "authority_unreachable"
    assert "could not be reached" in outcomes["unreachable"][1]["message"]
    assert outcomes["wrong token"][:2] == (
        1,
        {
            "code": "authority_refused",
            "message": f"the MCP server at {server.url} refused our bearer token (HTTP 401): "
            "check --token-file (or PREMATH_MCP_TOKEN) against the server's token file",
        },
    )
    assert outcomes["not mcp"][1]["code"] == "authority_refused"
    assert "is not an MCP endpoint" in outcomes["not mcp"][1]["message"]
    assert outcomes["bad repo"][0] == 1
    assert "git clone failed" in outcomes["bad repo"][1]["message"]
    assert (project.root / ".premath" / "issues.jsonl").read_bytes() == before
    usage = {
        "no token": ["--worker-id", "w1", "--mcp-url", "http://127.0.0.1:9/mcp"],
        "repo alone": ["--worker-id", "w1", "--repo", str(project.remote)],
        "repo and worktree": [
            "--worker-id", "w1", "--mcp-url", "http://127.0.0.1:9/mcp",
            "--token-file", str(project.tokens), "--repo", str(project.remote),
            "--worktree-root", str(tmp_path),
        ],
        "not a url": ["--worker-id", "w1", "--mcp-url", "127.0.0.1:9"],
    }  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PREMATH_MCP_TOKEN"}
    for name, args in usage.items():
        done = subprocess.run(
            [sys.executable, "-m", "premath", "harness-loop", "worker", *args, "--json"],
            cwd=tmp_path, env=env, capture_output=True, check=False, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, (name, done.stderr)
        assert orjson.loads(done.stdout)["error"]["code"] == "usage_error", name


def one_issue(tmp_path: Path):
    return make_project(tmp_path, [issue_row("bd-1", out_check("bd-1"))], tokens=fleet_tokens("w1"))


def deliver_one(project, tmp_path: Path) -> tuple[int, dict, str]:
    """One worker with `--repo` against an open server: (exit code, document, stderr)."""
    with mcp_server(project, "--mutation-policy", "open") as server:
        return run_worker(
            server.url, project, "w1", "--repo", str(project.remote),
            "--checkout-dir", str(tmp_path / "co"), "--work-cmd", WRITE_OUT,
        )  # fmt: skip


def test_a_refused_push_gives_the_issue_back_with_its_failure_class(tmp_path):
    project = one_issue(tmp_path)
    hook = project.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are frozen' >&2\nexit 1\n")
    hook.chmod(0o755)
    code, document, stderr = deliver_one(project, tmp_path)
    assert code == 1, stderr
    (step,) = document["steps"]
    assert (step["outcome"], step["resultClass"]) == ("failed", "failed_delivery")
    assert step["failureClasses"] == ["delivery_push_refused"]
    assert step["delivery"]["outcome"] == "delivery_push_refused"
    assert "pre-receive hook declined" in step["delivery"]["message"]
    issue = project.issues["bd-1"]
    assert (issue["status"], "lease" in issue, "assignee" in issue) == ("open", False, False)
    assert "failureClass: delivery_push_refused" in issue["notes"]
    assert project.branches() == {}


def test_a_bare_remote_whose_head_names_no_branch_uses_its_only_branch(tmp_path):
    """Issue 35: `git init --bare` names `master`; someone pushed only `main`."""
    project = one_issue(tmp_path)
    git("symbolic-ref", "HEAD", "refs/heads/master", cwd=project.remote)
    code, document, stderr = deliver_one(project, tmp_path)
    assert code == 0, stderr
    assert (
        f"[worker:w1] the HEAD of {project.remote} names no branch; using its only branch main "
        "(pass --base-ref BRANCH to choose)"
    ) in stderr.splitlines()
    assert document["closedIssueIds"] == ["bd-1"]
    assert list(project.branches()) == ["premath/bd-1"]


def test_premath_branches_on_a_headless_remote_leave_its_one_base_branch(tmp_path):
    """The delivered and integration branches a first run pushed are no candidates for the base
    of the next run (nor is the clone's missing HEAD a start for the merge worktree)."""
    project = make_project(
        tmp_path,
        [issue_row("bd-1", out_check("bd-1")), issue_row("bd-2", out_check("bd-2"))],
        tokens=fleet_tokens("w1"),
    )
    git("symbolic-ref", "HEAD", "refs/heads/master", cwd=project.remote)
    with mcp_server(project, "--mutation-policy", "open") as server:
        for run in ("first", "second"):
            code, _document, stderr = run_worker(
                server.url, project, "w1", "--repo", str(project.remote), "--max-steps", "1",
                "--checkout-dir", str(tmp_path / run), "--work-cmd", WRITE_OUT,
            )  # fmt: skip
            assert code == 0, stderr
            assert "using its only branch main" in stderr
    assert sorted(project.branches()) == ["premath/bd-1", "premath/bd-2"]
    assert project.issues["bd-1"]["status"] == project.issues["bd-2"]["status"] == "closed"


def test_an_existing_branch_is_never_overwritten(tmp_path):
    project = one_issue(tmp_path)
    other = tmp_path / "other"
    git("clone", "-q", str(project.remote), str(other), cwd=tmp_path)
    (other / "theirs").write_text("someone else's work\n")
    git("add", "-A", cwd=other)
    git("commit", "-qm", "theirs", cwd=other)
    git("push", "-q", "origin", "HEAD:refs/heads/premath/bd-1", cwd=other)
    theirs = project.branches()["premath/bd-1"]
    code, document, stderr = deliver_one(project, tmp_path)
    assert code == 1, stderr
    (step,) = document["steps"]
    assert step["failureClasses"] == ["delivery_branch_exists"]
    assert project.branches() == {"premath/bd-1": theirs}
    issue = project.issues["bd-1"]
    assert (issue["status"], "lease" in issue) == ("blocked", False)
    assert f"already exists on the remote at {theirs}" in issue["notes"]


def _restart_on(project, port: int) -> subprocess.Popen[bytes]:
    with (project.root.parent / f"restarted-{port}.stderr").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
             "--bind", f"127.0.0.1:{port}", "--token-file", str(project.tokens),
             "--mutation-policy", "open"],
            cwd=project.root, env=server_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip


class Worker:
    """A remote worker process whose work waits for the test: it creates `marker`, then works
    until the test removes it. Its streams go to files the test can read while it runs."""

    def __init__(self, project, url: str, marker: Path, *extra: str, worker_id: str = "w1"):
        work = f"touch {marker}; while [ -e {marker} ]; do sleep 0.05; done; {WRITE_OUT}"
        folder = project.root.parent
        self.stdout_path = folder / f"{worker_id}.stdout"
        self.stderr_path = folder / f"{worker_id}.stderr"
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                worker_argv(url, project, worker_id, "--work-cmd", work, *extra),
                cwd=folder, stdout=out, stderr=err,
            )  # fmt: skip

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def finish(self, timeout: float) -> tuple[int, dict, str]:
        code = self.process.wait(timeout=timeout)
        return code, orjson.loads(self.stdout_path.read_bytes() or b"{}"), self.stderr()


def test_a_server_lost_mid_work_is_retried_and_the_step_completes_when_it_is_back(tmp_path):
    project = one_issue(tmp_path)
    marker = tmp_path / "working"
    with mcp_server(project, "--mutation-policy", "open") as server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        worker = Worker(project, server.url, marker, "--mcp-retry-seconds", "120")
        wait_for(marker.exists, 60, "the work to start")
        server.process.kill()
        server.process.wait()
        marker.unlink()  # the work ends while the server is gone; the close must wait for it
        wait_for(lambda: "lost the MCP server" in worker.stderr(), 60, "the worker to miss it")
    restarted = _restart_on(project, port)
    try:
        code, document, stderr = worker.finish(timeout=180)
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(timeout=60)
    assert code == 0, stderr
    assert document["closedIssueIds"] == ["bd-1"]
    assert "answers again" in stderr
    assert project.issues["bd-1"]["status"] == "closed"
    assert [row["stepId"] for row in authority_rows(project)] == ["w1.bd-1.1"]


def test_a_server_gone_for_good_is_given_up_on_after_the_bound(tmp_path):
    project = one_issue(tmp_path)
    marker = tmp_path / "working"
    with mcp_server(project, "--mutation-policy", "open") as server:
        worker = Worker(project, server.url, marker, "--mcp-retry-seconds", "3")
        wait_for(marker.exists, 60, "the work to start")
        server.process.kill()
        server.process.wait()
        marker.unlink()
        started = time.monotonic()
        code, document, stderr = worker.finish(timeout=120)
    assert code == 1, stderr
    error = document["error"]
    assert error["code"] == "authority_unreachable"
    assert "gave up (--mcp-retry-seconds 3)" in error["message"]
    assert time.monotonic() - started < 60
    # Nothing local stood in for the authority: the issue is still held, its lease will go stale.
    issue = project.issues["bd-1"]
    assert (issue["status"], issue["lease"]["owner"]) == ("in_progress", "w1")
    # Its row waits in its outbox, said so; its next run delivers it before claiming.
    assert "1 step row(s) not delivered to the authority" in stderr
    assert "the next run of worker w1 delivers them" in stderr
    with mcp_server(project, "--mutation-policy", "open") as server:
        code, document, stderr = run_worker(server.url, project, "w1", "--max-steps", "1")
    assert code == 0, stderr
    assert "[worker:w1] delivered an earlier run's step rows (0 left)" in stderr
    (row,) = authority_rows(project)
    assert (row["stepId"], row["resultClass"]) == ("w1.runtime.1", "failed_runtime_error")


def authority_rows(project) -> list[dict]:
    return project.trajectory_rows()


class DroppingProxy:
    """A loopback HTTP proxy in front of the server that, for the first request naming `tool`,
    forwards it, lets the server answer, and closes the client's connection without the answer
    (a response lost after the server applied the call)."""

    def __init__(self, upstream_port: int, tool: str) -> None:
        self.upstream_port, self.tool = upstream_port, tool.encode()
        self.dropped = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.threads = [threading.Thread(target=self._serve, daemon=True)]
        self.threads[0].start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            relay = threading.Thread(target=self._relay, args=(client,), daemon=True)
            self.threads.append(relay)
            relay.start()

    @staticmethod
    def _message(conn: socket.socket, buffer: bytes) -> tuple[bytes, bytes] | None:
        while b"\r\n\r\n" not in buffer:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buffer += chunk
        head, rest = buffer.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            rest += chunk
        return head + b"\r\n\r\n" + rest[:length], rest[length:]

    def _relay(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        pending, answers = b"", b""
        with client, upstream:
            while True:
                request = self._message(client, pending)
                if request is None:
                    return
                message, pending = request
                upstream.sendall(message)
                response = self._message(upstream, answers)
                if response is None:
                    return
                answer, answers = response
                if self.tool in message and self.dropped == 0:
                    self.dropped += 1
                    return  # the server applied it; the client never hears
                client.sendall(answer)

    def close(self) -> None:
        """Stop accepting and wait for every thread to end (the client is gone, so each relay
        sees its connection close): none may outlive the test, as a leaked thread keeps later
        tests' forked helpers from forking."""
        # Closing alone does not wake a thread blocked in accept(); shutting the socket down does.
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for thread in self.threads:
            thread.join(HANG_GUARD_S)
        assert not any(thread.is_alive() for thread in self.threads), "a proxy thread hangs"


@pytest.mark.parametrize("tool", ["issue_claim_next", "issue_lease_finish"])
def test_an_answer_lost_after_the_server_applied_it_is_found_not_repeated(tmp_path, tool):
    project = three_issues(tmp_path)
    with mcp_server(project, "--mutation-policy", "open") as server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        proxy = DroppingProxy(port, tool)
        try:
            code, document, stderr = run_worker(
                f"http://127.0.0.1:{proxy.port}/mcp", project, "w1", "--max-steps", "10",
                "--work-cmd", WRITE_OUT,
            )  # fmt: skip
        finally:
            proxy.close()
    assert proxy.dropped == 1
    assert code == 0, stderr
    assert document["closedIssueIds"] == ["bd-1", "bd-2", "bd-3"]
    assert [step["resultClass"] for step in document["steps"]] == ["completed"] * 3
    assert {row["status"] for row in project.issues.values()} == {"closed"}


@pytest.mark.slow
def test_a_dead_workers_issue_is_reclaimed_by_a_draining_worker_once_its_lease_is_stale(tmp_path):
    project = make_project(
        tmp_path,
        [issue_row("bd-1", out_check("bd-1")), issue_row("bd-2", out_check("bd-2"))],
        tokens=fleet_tokens("w1", "w2"),
    )
    marker = tmp_path / "working"
    with mcp_server(project, "--mutation-policy", "open") as server:
        doomed = Worker(project, server.url, marker, "--lease-ttl-seconds", "30")
        wait_for(marker.exists, 60, "the first worker's work to start")
        held = project.issues["bd-1"]["lease"]
        doomed.process.kill()  # no clean-up: its lease stays until it goes stale
        doomed.process.wait()
        marker.unlink()
        own = tmp_path / "w2-worktree"  # its own records, beside the dead worker's
        own.mkdir()
        code, document, stderr = run_worker(
            server.url, project, "w2", "--drain", "--lease-ttl-seconds", "30",
            "--max-steps", "10", "--work-cmd", WRITE_OUT, "--repo-root", str(own),
            "--worktree-root", str(own),
        )  # fmt: skip
    assert code == 0, stderr
    assert sorted(document["closedIssueIds"]) == ["bd-1", "bd-2"]
    assert document["stoppedReason"] == "drained"
    assert "waiting while 1 issue(s) are held (bd-1)" in stderr
    issue = project.issues["bd-1"]
    assert (issue["status"], issue["assignee"]) == ("closed", "w2")
    assert held["owner"] == "w1"


def test_the_dashboard_shows_a_remote_workers_lease_like_a_local_one(tmp_path):
    from tests.support.serve import EventStream, observe_serve

    project = three_issues(tmp_path)
    marker = tmp_path / "working"
    local = subprocess.run(
        [sys.executable, "-m", "premath", "issue", "claim", "bd-3", "--assignee", "local-agent",
         "--json"],
        cwd=project.root, capture_output=True, check=False,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    with mcp_server(project, "--mutation-policy", "open") as server:
        worker = Worker(project, server.url, marker)
        try:
            wait_for(marker.exists, 60, "the remote worker's work to start")
            with observe_serve(project.root, "--live") as running:
                stream = EventStream(running.port)
                name, snapshot = stream.next_event()
                stream.close()
        finally:
            marker.unlink()
            code, _, stderr = worker.finish(timeout=120)
    assert code == 0, stderr
    assert name == "snapshot"
    rows = {row["id"]: row for row in snapshot["issues"]}
    remote, held_here = rows["bd-1"], rows["bd-3"]
    assert (remote["column"], held_here["column"]) == ("in_progress", "in_progress")
    assert remote["lease"]["owner"] == "w1"
    assert held_here["lease"]["owner"] == "local-agent"
    assert sorted(remote["lease"]) == sorted(held_here["lease"])  # the same view of a lease
    assert remote["lease"]["leaseId"].startswith("lease1_w1_")


def test_an_agent_drives_boot_claim_complete_and_stop_through_the_server(tmp_path):
    project = three_issues(tmp_path)
    agent = tmp_path / "agent"
    agent.mkdir()

    def harness(*args: str) -> tuple[int, dict]:
        done = subprocess.run(
            [sys.executable, "-m", "premath", "harness", *args, "--mcp-url", server.url,
             "--token-file", str(project.tokens), "--repo-root", str(agent), "--json"],
            cwd=agent, capture_output=True, check=False, timeout=120,
        )  # fmt: skip
        return done.returncode, orjson.loads(done.stdout)

    with mcp_server(project, "--mutation-policy", "open") as server:
        booted = harness("boot")
        claimed = harness("claim", "--worker-id", "w1")
        stopped = harness("stop", "--worker-id", "w1")
        completed = harness("complete", "--worker-id", "w1", "--verify-cmd", "true")
        rebooted = harness("boot")
    assert booted[0] == 0, booted
    roots = booted[1]["memoryRoots"]
    assert (roots["issuesPath"], roots["roots"][0]["state"]) == (server.url, "present")
    assert booted[1]["readyIssueIds"] == ["bd-1", "bd-2", "bd-3"]
    assert booted[1]["nextTarget"]["issue"]["description"].startswith("Do bd-1.")
    assert booted[1]["issuesSnapshotRef"] is None  # no bytes of the store on this side
    assert (claimed[0], claimed[1].get("issueId")) == (0, "bd-1"), claimed
    assert (stopped[0], stopped[1]["leaseOutcome"]) == (0, "renewed")
    assert (completed[0], completed[1]["outcome"]) == (0, "completed")
    assert project.issues["bd-1"]["status"] == "closed"
    assert rebooted[1]["readyIssueIds"] == ["bd-2", "bd-3"]
    session = orjson.loads((agent / ".premath" / "harness_session.json").read_bytes())
    assert session["issuesPath"] == server.url


def _renewals(server) -> list[str]:
    return [
        line["outcome"]
        for line in server.access_lines()
        if line["event"] == "tool" and line["tool"] == "issue_lease_renew"
    ]


def test_the_heartbeat_and_lease_recovery_go_through_the_server(tmp_path):
    project = make_project(
        tmp_path,
        [issue_row("bd-1", out_check("bd-1")), issue_row("bd-2", out_check("bd-2"))],
        tokens=fleet_tokens("w1"),
    )
    with mcp_server(project, "--mutation-policy", "open") as server:
        code, document, stderr = run_worker(
            server.url, project, "w1", "--lease-ttl-seconds", "30",
            "--work-cmd", f"sleep 11 && {WRITE_OUT}",
        )  # fmt: skip
        beats = _renewals(server)
        assert code == 0, stderr
        assert document["closedIssueIds"] == ["bd-1"]
        assert set(beats) == {"ok"}  # a beat every TTL/3 (10 s) while the work ran
        code, document, stderr = run_worker(
            server.url, project, "w1", "--host-action-transport", "mcp", "--output-cap-bytes",
            "100", "--work-cmd", "python3 -c \"print('x' * 5000)\"",
        )  # fmt: skip
        recovered = _renewals(server)[len(beats) :]
    (step,) = document["steps"]
    # The join gate refused the step (truncated output); the lease is renewed through the
    # MCP lease tool and recorded with the transport's own ref, as a local worker records it.
    assert step["resultClass"] == "retry_needed_lease_active_transport_dispatched"
    assert recovered == ["ok"]
    assert project.issues["bd-2"]["lease"]["owner"] == "w1"


def test_a_failed_verification_retries_and_escalates_through_the_server(tmp_path):
    project = three_issues(tmp_path)
    with mcp_server(project) as server:  # the default policy: the fleet's witness covers it
        fleet = mint_fleet_witness(project)
        code, document, stderr = run_worker(
            server.url, project, "w1", "--instruction-id", fleet, "--work-cmd", WRITE_OUT,
            "--verify-witness", "never-written.json", "--backoff-scale", "0",
        )  # fmt: skip
    assert code == 1
    (step,) = document["steps"]
    assert step["attempts"] == 2  # operational_retry: one retry, then its escalation
    assert "[worker:w1] retry 1/2 for bd-1" in stderr
    escalation = step["escalation"]
    assert (escalation["action"], escalation["outcome"]) == ("issue_discover", "applied")
    assert step["resultClass"] == "escalated_issue_discover"
    created = escalation["createdIssueId"]
    issues = project.issues
    assert issues["bd-1"]["status"] == "blocked"
    assert issues["bd-1"]["notes"].endswith(f"discoveredIssue: {created}")
    assert issues[created]["dependencies"][0]["depends_on_id"] == "bd-1"
    for issue_id in ("bd-1", created):
        witness = issues[issue_id]["metadata"]["premathWriteWitness"]
        assert (witness["action"], witness["instruction"]["instructionId"]) == (
            "issue.lease_finish",
            fleet,
        )
