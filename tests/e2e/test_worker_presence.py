"""Remote workers seen from the authority (specs/remote-workers.md "Workers"), as real
processes: a worker registers, heartbeats its phase and deregisters with its reason; one killed
turns silent and becomes an attention reason; one whose token may not act as its id is refused
before it claims; after the authority is killed and restarted the worker registers again.
`harness-loop status` reads it all, at the authority's project and through `--mcp-url`."""

import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from tests.e2e.test_remote_worker import Worker
from tests.mcp.client import server_env
from tests.support.remote import (
    fleet_tokens,
    issue_row,
    make_project,
    mcp_server,
    out_check,
    run_worker,
    wait_for,
)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(autouse=True)
def quick_heartbeats(monkeypatch):
    monkeypatch.setenv("PREMATH_WORKER_HEARTBEAT_SECONDS", "1")


def two_token_project(tmp_path: Path):
    """One issue; two tokens, so each token acts only as its own worker ids."""
    return make_project(
        tmp_path, [issue_row("bd-1", out_check("bd-1"))], tokens=fleet_tokens("w1", "w2")
    )


def status(project, *where: str) -> tuple[int, dict, str]:
    done = subprocess.run(
        [sys.executable, "-m", "premath", "harness-loop", "status", *where, "--json"],
        cwd=project.root, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    return done.returncode, orjson.loads(done.stdout or b"{}"), done.stderr.decode()


def remote_status(project, url: str) -> dict:
    code, document, stderr = status(project, "--mcp-url", url, "--token-file", str(project.tokens))
    assert code == 0, stderr
    return document


def worker_in(document: dict, worker_id: str) -> dict | None:
    return next((w for w in document["workers"] if w["workerId"] == worker_id), None)


def test_a_worker_reports_its_phase_and_is_gone_with_its_reason_when_it_exits(tmp_path):
    project = two_token_project(tmp_path)
    marker = tmp_path / "working"
    with mcp_server(project, "--mutation-policy", "open") as server:
        worker = Worker(project, server.url, marker)
        wait_for(marker.exists, 60, "the work to start")

        def working() -> dict | None:
            found = worker_in(remote_status(project, server.url), "w1")
            return found if found and found["phase"] == "working" else None

        seen = wait_for(working, 60, "the worker's working phase at the authority")
        marker.unlink()
        code, _, stderr = worker.finish(timeout=180)
        after = remote_status(project, server.url)
        tools = {line["tool"] for line in server.access_lines() if line["event"] == "tool"}
    assert code == 0, stderr
    assert (seen["status"], seen["issueId"], seen["attempt"], seen["pid"]) == (
        "running",
        "bd-1",
        1,
        worker.process.pid,
    )
    assert seen["premathVersion"] == "0.1.0"
    assert "[worker:w1] registered with the authority (heartbeat every 1 s)" in stderr
    assert "[worker:w1] deregistered (max_steps)" in stderr
    gone = worker_in(after, "w1")
    assert (gone["status"], gone["goneReason"], gone["phase"]) == ("gone", "max_steps", "idle")
    assert gone["heartbeatCount"] >= 2
    assert {"harness_worker_register", "harness_worker_heartbeat"} <= tools
    # The same view at the authority's own project, as text.
    code, local, _ = status(project)
    assert (code, local["workers"][0]["workerId"], local["workers"][0]["status"]) == (
        0,
        "w1",
        "gone",
    )
    text = subprocess.run(
        [sys.executable, "-m", "premath", "harness-loop", "status"],
        cwd=project.root, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    assert text.startswith("[harness-loop status] workers: running=0 silent=0 gone=1\n")
    assert "  w1      gone (max_steps)" in text


def test_a_killed_worker_turns_silent_and_needs_attention(tmp_path):
    project = two_token_project(tmp_path)
    marker = tmp_path / "working"
    with mcp_server(project, "--mutation-policy", "open") as server:
        worker = Worker(project, server.url, marker)
        wait_for(marker.exists, 60, "the work to start")
        wait_for(
            lambda: (
                (worker_in(remote_status(project, server.url), "w1") or {}).get("phase")
                == "working"
            ),
            60,
            "the working phase",
        )
        worker.process.kill()
        worker.process.wait()

        def silent() -> dict | None:
            document = remote_status(project, server.url)
            return document if worker_in(document, "w1")["status"] == "silent" else None

        document = wait_for(silent, 60, "the killed worker to turn silent")
    (reason,) = document["attentionReasons"]
    assert reason.startswith("worker w1 is silent (no heartbeat for ")
    assert reason.endswith(" s; last working on bd-1)")
    assert document["counts"] == {"running": 0, "silent": 1, "gone": 0}
    built = subprocess.run(
        [sys.executable, "-m", "premath", "observe-build", "--live-attention", "--json"],
        cwd=project.root, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr.decode()
    live = orjson.loads(built.stdout)["summary"]["live"]
    assert "workers_silent" in live["attentionReasons"]
    assert live["silentWorkerIds"] == ["w1"]


def test_a_worker_whose_token_may_not_act_as_its_id_is_refused_before_it_claims(tmp_path):
    project = two_token_project(tmp_path)
    w1_only = tmp_path / "w1-tokens"
    w1_line = next(
        line for line in project.tokens.read_text().splitlines() if line.startswith("w1 ")
    )
    w1_only.write_text(w1_line + "\n")
    w1_only.chmod(0o600)
    before = (project.root / ".premath" / "issues.jsonl").read_bytes()
    with mcp_server(project, "--mutation-policy", "open") as server:
        holding_w1s_token = replace(project, tokens=w1_only)
        code, document, stderr = run_worker(
            server.url, holding_w1s_token, "w2", "--work-cmd", "true"
        )
    assert code == 1, stderr
    assert document["error"]["code"] == "authority_refused"
    assert (
        "[failureClass=worker.identity_refused] the token `w1` may not act as worker w2"
        in (document["error"]["message"])
    )
    assert (project.root / ".premath" / "issues.jsonl").read_bytes() == before
    assert not (project.root / ".premath" / "harness_workers.json").exists()


def test_a_worker_registers_again_after_the_authority_is_killed_and_restarted(tmp_path):
    project = two_token_project(tmp_path)
    marker = tmp_path / "working"
    with mcp_server(project, "--mutation-policy", "open") as server:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        worker = Worker(project, server.url, marker, "--mcp-retry-seconds", "120")
        wait_for(marker.exists, 60, "the work to start")
        wait_for(lambda: "registered with the authority" in worker.stderr(), 60, "registration")
        server.process.kill()
        server.process.wait()
        wait_for(lambda: "lost the MCP server" in worker.stderr(), 60, "the worker to miss it")
    with (tmp_path / "restarted.stderr").open("wb") as log:
        restarted = subprocess.Popen(
            [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
             "--bind", f"127.0.0.1:{port}", "--token-file", str(project.tokens),
             "--mutation-policy", "open"],
            cwd=project.root, env=server_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    try:

        def registered_again() -> bool:
            log = (tmp_path / "restarted.stderr").read_text()
            assert restarted.poll() is None, f"the restarted server exited: {log}"
            return "[worker:w1] registered again with the authority" in worker.stderr()

        wait_for(
            registered_again,
            120,
            "the worker to register again",
            details=lambda: f"the worker's stderr:\n{worker.stderr()}",
        )
        url = f"http://127.0.0.1:{port}/mcp"
        again = worker_in(remote_status(project, url), "w1")
        marker.unlink()
        code, _, stderr = worker.finish(timeout=180)
        final = worker_in(remote_status(project, url), "w1")
    finally:
        if worker.process.poll() is None:  # a failed wait leaves it working on the marker
            worker.process.kill()
            worker.process.wait()
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(timeout=60)
    assert code == 0, stderr
    assert (again["status"], again["registrations"]) == ("running", 2)
    assert (final["status"], final["goneReason"]) == ("gone", "max_steps")
