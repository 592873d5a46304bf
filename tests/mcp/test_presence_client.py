"""`McpPresence` (premath/mcp/presence.py), the worker's side, against a real `mcp-serve` over
loopback HTTP: phases changed faster than the server stores beats still end as the last one
(a beat answered `stored: false` is sent again), a registry that forgot the worker gets a new
registration, and stop deregisters with the reason."""

import signal
import time

import orjson

from premath.mcp.presence import McpPresence
from premath.mcp.remote import McpAuthority
from tests.cli.test_issue import row, seed
from tests.mcp.client import http_server, new_token, start_http_server, token_file
from tests.support.remote import wait_for


def entry(workdir) -> dict:
    path = workdir / ".premath" / "harness_workers.json"
    return orjson.loads(path.read_bytes())["workers"]["fleet.1"] if path.exists() else {}


def test_the_last_phase_lands_even_when_beats_come_faster_than_the_server_stores(workdir):
    seed(workdir, row("bd-1"))
    token = new_token()
    path = token_file(workdir, fleet=token)
    lines: list[str] = []
    with (
        http_server(workdir, "--token-file", str(path)) as server,
        McpAuthority(server.url, token, retry_s=30) as authority,
    ):
        presence = McpPresence(authority, "fleet.1", node="n1", heartbeat_s=60, report=lines.append)
        presence.start()
        for attempt in range(1, 13):  # far over the bucket: 4 at once, then one a second
            presence.phase("working", "bd-1", attempt, 12)
            time.sleep(0.01)
        presence.phase("verifying", "bd-1", 12, 12)
        wait_for(lambda: entry(workdir).get("phase") == "verifying", 30, "the last phase")
        kept = entry(workdir)
        assert (kept["issueId"], kept["attempt"], kept["maxAttempts"]) == ("bd-1", 12, 12)
        assert kept["heartbeatCount"] < 13  # not every beat was stored

        # The registry forgets the worker (restored from a backup, say): the next beat registers
        # it again instead of failing.
        (workdir / ".premath" / "harness_workers.json").unlink()
        presence.phase("closing", "bd-1", 12, 12)
        wait_for(lambda: entry(workdir).get("phase") == "closing", 30, "a new registration")
        presence.stop("drained")
        gone = entry(workdir)
    assert (gone["state"], gone["goneReason"], gone["node"]) == ("gone", "drained", "n1")
    assert lines[0] == "[worker:fleet.1] registered with the authority (heartbeat every 60 s)"
    assert "[worker:fleet.1] registered again with the authority (heartbeat every 60 s)" in lines
    assert lines[-1] == "[worker:fleet.1] deregistered (drained)"


def test_a_server_restarted_within_one_beat_gets_the_worker_registered_again(workdir):
    """The restarted server still reads the worker as running from its registry file, and a
    beat's own retries (its patience is one interval) get over the outage: the presence must
    notice the new connection and register again, not just heartbeat on."""
    seed(workdir, row("bd-1"))
    token = new_token()
    path = token_file(workdir, fleet=token)
    lines: list[str] = []
    server = start_http_server(workdir, "--token-file", str(path))
    port = server.url.rsplit(":", 1)[1].split("/")[0]
    try:
        with McpAuthority(server.url, token, retry_s=120, report=lines.append) as authority:
            presence = McpPresence(authority, "fleet.1", heartbeat_s=60, report=lines.append)
            presence.start()
            server.stop(signal.SIGKILL)
            presence.phase("working", "bd-1", 1, 3)  # this beat waits up to 60 s for a server
            wait_for(lambda: any("lost the MCP server" in line for line in lines), 60, "the loss")
            server = start_http_server(
                workdir, "--token-file", str(path), "--bind", f"127.0.0.1:{port}"
            )
            wait_for(
                lambda: entry(workdir).get("registrations") == 2,
                60,
                "the worker to register again",
                details=lambda: "\n".join(lines),
            )
            again = entry(workdir)
            presence.stop("drained")
    finally:
        server.stop(signal.SIGKILL)
    assert (again["state"], again["phase"], again["issueId"]) == ("running", "working", "bd-1")
    assert "[worker:fleet.1] registered again with the authority (heartbeat every 60 s)" in lines
    assert lines[-1] == "[worker:fleet.1] deregistered (drained)"
