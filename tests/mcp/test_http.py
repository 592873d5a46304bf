"""`premath mcp-serve --transport streamable-http` as a real process on a loopback ephemeral
port, driven by the MCP SDK's own streamable HTTP client: every tool gated and ungated, token
refusals, each hole of issue 22 refused with the store's bytes unchanged and the next call
answered within a second, body caps, slow clients, disconnects, deadlines and SIGTERM."""

import contextlib
import itertools
import os
import signal
import socket
import ssl
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx2
import orjson
import pytest

from premath.store.issues_file import encode_store
from premath.store.locks import hold_marker
from tests.cli.test_issue import ISSUES, row, seed, stored
from tests.mcp.client import (
    REPO_ROOT,
    HttpServer,
    call,
    http_server,
    http_session,
    new_token,
    server_env,
    start_http_server,
    token_file,
    witness,
)
from tests.support.observation import minimal_surface
from tests.support.processes import HANG_GUARD_S
from tests.support.remote import wait_for

TOOLS_READ = [
    ("issue_ready", {}),
    ("issue_list", {}),
    ("issue_check", {}),
    ("issue_blocked", {}),
    ("issue_lease_projection", {}),
    ("dep_diagnostics", {}),
    ("observe_latest", {}),
    ("observe_needs_attention", {}),
    ("observe_instruction", {"instructionId": "i-1"}),
    ("observe_projection", {"projectionDigest": "ev1_x"}),
    ("instruction_check", {"instructionPath": "instructions/20260301T000000Z-x.json"}),
]


def mutations(gate: dict) -> list[tuple[str, dict]]:
    """Every mutating tool once, in an order that succeeds on the seeded store."""
    return [
        ("issue_add", {"title": "New", "id": "bd-3", **gate}),
        ("issue_claim", {"id": "bd-1", "assignee": "a", **gate}),
        ("issue_lease_renew", {"id": "bd-1", "assignee": "a", "leaseId": "lease1_bd-1_a", **gate}),
        ("issue_lease_release", {"id": "bd-1", **gate}),
        ("issue_claim_next", {"assignee": "b", **gate}),
        ("issue_discover", {"parentIssueId": "bd-2", "title": "Found", **gate}),
        ("issue_update", {"id": "bd-2", "notes": "n", **gate}),
        ("dep_add", {"issueId": "bd-2", "dependsOnId": "bd-3", **gate}),
        ("dep_replace", {"issueId": "bd-2", "dependsOnId": "bd-3", "toDepType": "related", **gate}),
        ("dep_remove", {"issueId": "bd-2", "dependsOnId": "bd-3", "depType": "related", **gate}),
        ("init_tool", {"rootPath": "sub"}),
    ]


def seeded(workdir) -> bytes:
    (workdir / "artifacts" / "observation").mkdir(parents=True)
    (workdir / "artifacts" / "observation" / "latest.json").write_bytes(
        orjson.dumps(minimal_surface())
    )
    return seed(workdir, row("bd-1"), row("bd-2"))


def tokens(workdir, **extra) -> tuple[str, str]:
    token = new_token()
    return token, str(token_file(workdir.parent, w1=token, **extra))


def post(url: str, token: str | None, body: bytes, timeout: float = 30) -> httpx2.Response:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(url, content=body, headers=headers, timeout=timeout)


def rpc(name: str, arguments: dict, request_id: int = 1) -> bytes:
    params = {"name": name, "arguments": arguments}
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def tool_text(response: httpx2.Response) -> tuple[bool, str]:
    result = response.json()["result"]
    return bool(result.get("isError")), result["content"][0]["text"]


def test_every_tool_gated_and_ungated_over_http(workdir):
    seeded(workdir)
    token, path = tokens(workdir)
    witness(workdir, "i-all", joinClosed=True)

    async def scenario(url: str, gate: dict) -> dict[str, tuple[bool, str]]:
        outcomes = {}
        async with http_session(url, token) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            assert len(listed) == 31
            for name, arguments in [*TOOLS_READ, *mutations(gate)]:
                error, document = await call(client, name, arguments)
                outcomes[name] = (error, document)
            outcomes["issue_backend_status"] = await call(client, "issue_backend_status")
            outcomes["instruction_run"] = await call(
                client, "instruction_run", {"instructionPath": "instructions/x.json", **gate}
            )
        return outcomes

    with http_server(workdir, "--token-file", path) as server:
        refused = anyio.run(scenario, server.url, {})
        gated = anyio.run(scenario, server.url, {"instructionId": "i-all"})
    for name, _ in TOOLS_READ:
        assert refused[name][0] is False, (name, refused[name])
    linked = "mutation policy `instruction-linked` requires `instruction_id` on mutation tools"
    for name, _ in mutations({})[:-1]:
        assert refused[name] == (True, linked), name
    assert refused["instruction_run"] == (True, linked)
    for name, _ in mutations({}):
        assert gated[name][0] is False, (name, gated[name])
        if name != "init_tool":
            assert gated[name][1]["instruction"]["instructionId"] == "i-all"
    assert gated["instruction_run"][1]["exitCode"] == 2  # no such envelope: a reject witness
    assert refused["issue_backend_status"][0] is True
    rows = stored(workdir)
    assert (
        rows["bd-2"]["metadata"]["premathWriteWitness"]["instruction"]["instructionId"] == "i-all"
    )
    assert rows["bd-4"]["title"] == "Found"

    # ungated: the same mutations with no instruction id under --mutation-policy open
    (workdir / ISSUES).unlink()
    seeded_again = seed(workdir, row("bd-1"), row("bd-2"))
    assert seeded_again
    with http_server(workdir, "--token-file", path, "--mutation-policy", "open") as server:
        ungated = anyio.run(scenario, server.url, {})
    for name, _ in mutations({}):
        assert ungated[name][0] is False, (name, ungated[name])
        if name != "init_tool":
            assert ungated[name][1]["instruction"] is None


def test_tokens_missing_wrong_and_from_another_server_are_refused(workdir):
    before = seeded(workdir)
    token, path = tokens(workdir)
    other_token, other_path = tokens(workdir)
    with (
        http_server(workdir, "--token-file", path) as server,
        http_server(workdir, "--token-file", other_path) as other,
    ):
        body = rpc("issue_add", {"title": "x"})
        for presented in (None, "x" * 40, other_token, f"{token}x", token[:-1]):
            answer = post(server.url, presented, body)
            assert answer.status_code == 401, presented
            assert answer.headers["www-authenticate"].startswith('Bearer realm="premath"')
        assert post(server.base + "/anything", None, b"").status_code == 401
        assert post(other.url, token, body).status_code == 401
        basic = httpx2.post(server.url, content=body, headers={"Authorization": f"Basic {token}"})
        assert basic.status_code == 401
        assert httpx2.get(server.base + "/healthz").json() == {"status": "ok"}
        # stateless: no GET stream to hold open
        auth = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        assert httpx2.get(server.url, headers=auth).status_code == 405

        async def sdk_refused() -> None:
            with pytest.raises(ExceptionGroup) as failed:
                async with http_session(server.url, other_token) as client:
                    await client.list_tools()
            assert "Server returned an error response" in repr(failed.value)

        anyio.run(sdk_refused)
        assert post(server.url, token, rpc("issue_ready", {})).status_code == 200
        assert (workdir / ISSUES).read_bytes() == before
        log = server.stderr()
    assert token not in log
    assert other_token not in log
    refusals = [line for line in server.access_lines() if line.get("status") == 401]
    assert {line["caller"] for line in server.access_lines() if line.get("status") == 200} == {
        "w1",
        None,  # /healthz needs no token
    }
    assert len(refusals) >= 8
    assert all(line["caller"] is None for line in refusals)
    callers = {line["caller"] for line in server.access_lines() if line.get("path") == "/mcp"}
    assert callers == {"w1", None}


def test_each_hole_is_refused_and_the_next_call_answers_within_a_second(workdir, tmp_path_factory):
    before = seeded(workdir)
    token, path = tokens(workdir)
    outside = tmp_path_factory.mktemp("outside")
    os.mkfifo(workdir / "fifo.json")
    os.mkfifo(workdir / "instructions-fifo.json")
    (workdir / "instructions").mkdir()
    os.mkfifo(workdir / "instructions" / "20260301T000000Z-fifo.json")
    # witnesses: hand-written, edited, symlinked, scoped to bd-1, expired, a FIFO
    witness(workdir, "forged", signed=False)
    edited = witness(workdir, "edited", capabilityClaims=["capabilities.change_morphisms"])
    edited.write_text(
        edited.read_text().replace(
            '"capabilities.change_morphisms"',
            '"capabilities.change_morphisms", "capabilities.change_morphisms.all"',
        )
    )
    real = witness(outside, "linked")
    (workdir / "artifacts" / "ciwitness" / "linked.json").symlink_to(real)
    (workdir / "artifacts" / "ciwitness" / "linked.json.mac").write_bytes(
        (outside / "artifacts" / "ciwitness" / "linked.json.mac").read_bytes()
    )
    witness(workdir, "scoped", scope={"kind": "issue", "target": "bd-1"}, joinClosed=True)
    witness(workdir, "old", runFinishedAt="2026-01-01T00:00:00Z")
    os.mkfifo(workdir / "artifacts" / "ciwitness" / "fifo-witness.json")
    accepted = witness(workdir, "20260301T000000Z-done")
    accepted_bytes = accepted.read_bytes()
    (workdir / "instructions" / "20260301T000000Z-done.json").write_text("{}")
    witness(
        workdir,
        "runner",
        capabilityClaims=[
            "capabilities.change_morphisms",
            "capabilities.change_morphisms.instruction_run",
        ],
    )
    holes = [
        (
            "observe_latest",
            {"surfacePath": "fifo.json"},
            "[failureClass=path.not_regular_file] surfacePath `fifo.json` is a FIFO",
        ),
        (
            "observe_needs_attention",
            {"surfacePath": "/dev/zero"},
            "[failureClass=path.outside_root] surfacePath `/dev/zero` resolves to /dev/zero",
        ),
        (
            "instruction_check",
            {"instructionPath": "/dev/zero"},
            "[failureClass=path.outside_root] instructionPath `/dev/zero`",
        ),
        (
            "instruction_check",
            {"instructionPath": "instructions-fifo.json"},
            "[failureClass=path.not_regular_file] instructionPath",
        ),
        (
            "instruction_run",
            {
                "instructionPath": "instructions/20260301T000000Z-fifo.json",
                "instructionId": "runner",
            },
            "[failureClass=path.not_regular_file] instructionPath",
        ),
        (
            "issue_add",
            {"title": "x", "issuesPath": str(outside / "issues.jsonl"), "instructionId": "runner"},
            "[failureClass=path.outside_root] issuesPath",
        ),
        (
            "issue_ready",
            {"issuesPath": "../../etc/passwd"},
            "[failureClass=path.outside_root] issuesPath",
        ),
        (
            "init_tool",
            {"rootPath": str(outside / "new")},
            "[failureClass=path.outside_root] rootPath",
        ),
        (
            "issue_add",
            {"title": "x", "instructionId": "forged"},
            "[failureClass=witness.mac_missing] instruction witness `forged` has no MAC",
        ),
        (
            "issue_update",
            {"id": "bd-1", "notes": "n", "instructionId": "edited"},
            "[failureClass=witness.mac_mismatch] the MAC of instruction witness `edited` "
            "does not verify",
        ),
        (
            "issue_claim",
            {"id": "bd-1", "assignee": "a", "instructionId": "linked"},
            "[failureClass=witness.symlink] instruction witness ",
        ),
        (
            "issue_update",
            {"id": "bd-2", "notes": "n", "instructionId": "scoped"},
            "[failureClass=witness.scope_mismatch] instruction `scoped` is scoped to bd-1; "
            "mutation action `issue.update` would change bd-2",
        ),
        (
            "issue_add",
            {"title": "x", "instructionId": "scoped"},
            "[failureClass=witness.scope_mismatch] instruction `scoped` is scoped to bd-1; "
            "mutation action `issue.add` would change bd-3",
        ),
        (
            "issue_claim",
            {"id": "bd-1", "assignee": "a", "instructionId": "old"},
            "[failureClass=witness.expired] instruction witness `old` is from a run that "
            "finished at 2026-01-01T00:00:00Z",
        ),
        (
            "issue_claim",
            {"id": "bd-1", "assignee": "a", "instructionId": "fifo-witness"},
            "failed to read ",
        ),
        (
            "instruction_run",
            {"instructionPath": "instructions/20260301T000000Z-done.json"},
            "mutation policy `instruction-linked` requires `instruction_id` on mutation tools",
        ),
        (
            "instruction_run",
            {
                "instructionPath": "instructions/20260301T000000Z-done.json",
                "instructionId": "forged",
            },
            "[failureClass=witness.mac_missing] ",
        ),
        (
            "instruction_run",
            {
                "instructionPath": "instructions/20260301T000000Z-done.json",
                "instructionId": "runner",
            },
            "[failureClass=witness.overwrite_refused] "
            "artifacts/ciwitness/20260301T000000Z-done.json already holds the accepted witness "
            "of another run",
        ),
    ]

    async def scenario(url: str) -> list[tuple[str, float]]:
        answers = []
        async with http_session(url, token) as client:
            for name, arguments, expected in holes:
                with anyio.fail_after(10):
                    error, text = await call(client, name, arguments)
                assert error, (name, arguments, text)
                assert text.startswith(expected), (name, text)
                assert (workdir / ISSUES).read_bytes() == before, name
                started = time.monotonic()
                with anyio.fail_after(1):
                    error, _ = await call(client, "issue_ready")
                assert not error
                answers.append((name, time.monotonic() - started))
            # scoped claim-next chooses only among the scope's issues
            error, claimed = await call(
                client, "issue_claim_next", {"assignee": "z", "instructionId": "scoped"}
            )
            assert (error, claimed["issue"]["id"]) == (False, "bd-1")
            error, none_left = await call(
                client, "issue_claim_next", {"assignee": "y", "instructionId": "scoped"}
            )
            assert (error, "issue" in none_left) == (False, False)
        return answers

    with http_server(workdir, "--token-file", path, "--witness-max-age", "1h") as server:
        answers = anyio.run(scenario, server.url)
    assert len(answers) == len(holes)
    assert accepted.read_bytes() == accepted_bytes
    assert not (outside / "issues.jsonl").exists()
    assert not (outside / "new").exists()
    assert stored(workdir)["bd-2"].get("assignee") is None


def test_an_oversized_body_is_413_and_the_server_keeps_serving(workdir):
    seeded(workdir)
    token, path = tokens(workdir)
    with http_server(workdir, "--token-file", path, "--max-body-bytes", "65536") as server:
        big = rpc("issue_add", {"title": "x" * 70_000})
        assert post(server.url, token, big).status_code == 413

        def chunks():
            yield big[:1000]
            yield big[1000:]

        streamed = httpx2.post(
            server.url,
            content=chunks(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        assert streamed.status_code == 413
        assert post(server.url, None, big).status_code == 401  # the token is checked first
        assert post(server.url, token, rpc("issue_ready", {})).status_code == 200


def _raw(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before closing the connection (it must close within `seconds`)."""
    sock.settimeout(seconds)
    received = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return received
        received += chunk


def test_slow_and_idle_clients_are_cut_off_and_never_block_others(workdir):
    """The refusal reaches a client that is still writing (the server lingers instead of
    resetting the connection, which would discard the 408 before the client reads it)."""
    seeded(workdir)
    token, path = tokens(workdir)
    with (
        http_server(workdir, "--token-file", path, "--client-timeout", "1") as server,
        contextlib.ExitStack() as sockets,
    ):
        port = int(server.base.rsplit(":", 1)[1])
        idle = sockets.enter_context(_raw(port))  # connects, sends nothing
        trickle = sockets.enter_context(_raw(port))  # a request head one byte at a time
        slow_body = sockets.enter_context(_raw(port))  # a complete head, then half a body
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        ).encode()
        slow_body.sendall(head + b"{" * 10)
        stop = threading.Event()

        def drip() -> None:
            for byte in itertools.cycle(b"POST /mcp HTTP/1.1\r\nHost: x\r\n"):
                if stop.wait(0.05):
                    return
                try:
                    trickle.send(bytes([byte]))
                except OSError:
                    return

        dripper = threading.Thread(target=drip)
        dripper.start()
        sockets.callback(dripper.join)
        sockets.callback(stop.set)
        for _ in range(3):  # others are served meanwhile
            assert post(server.url, token, rpc("issue_ready", {}), timeout=5).status_code == 200
        too_slow = b"request line and headers too slow"
        for sock in (idle, trickle):  # the one server guard's answer (observe-serve's too)
            answer = _closed_within(sock, HANG_GUARD_S)
            assert answer.startswith(b"HTTP/1.1 408 "), answer
            assert orjson.loads(answer.partition(b"\r\n\r\n")[2]) == {"error": too_slow.decode()}
        idle.sendall(b"late")  # the server lingers, dropping late bytes: no reset
        time.sleep(0.2)
        idle.sendall(b"later")
        body_late = _closed_within(slow_body, HANG_GUARD_S)
        assert body_late.startswith(b"HTTP/1.1 408 ")
        assert orjson.loads(body_late.partition(b"\r\n\r\n")[2]) == {
            "error": "request body not received in time"
        }
        assert post(server.url, token, rpc("issue_ready", {})).status_code == 200


def test_a_thousand_concurrent_connections_are_all_answered(workdir):
    seeded(workdir)
    token, path = tokens(workdir)
    count = 1000

    async def one(port: int, index: int, gate: anyio.Event, answers: list[bytes]) -> None:
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await gate.wait()
            body = rpc("issue_lease_projection", {}, index)
            await stream.send(
                b"POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                + f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n".encode()
                + b"Accept: application/json, text/event-stream\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            received = b""
            with anyio.fail_after(120):
                while True:
                    try:
                        received += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        break
            answers.append(received)

    async def everyone(port: int) -> list[bytes]:
        answers: list[bytes] = []
        gate = anyio.Event()
        async with anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(one, port, index, gate, answers)
            await anyio.sleep(1)  # every connection open before any request is sent
            gate.set()
        return answers

    with http_server(workdir, "--token-file", path) as server:
        port = int(server.base.rsplit(":", 1)[1])
        answers = anyio.run(everyone, port)
        assert post(server.url, token, rpc("issue_ready", {})).status_code == 200
    assert len(answers) == count
    ids = set()
    for answer in answers:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 "), answer[:200]
        document = orjson.loads(body)
        assert document["result"]["isError"] is False
        ids.add(document["id"])
    assert ids == set(range(count))


def _hold_store_lock(
    workdir, seconds: float, release: threading.Event | None = None
) -> threading.Thread:
    """Hold `<issues>.lock` for `seconds` (or until `release` is set) from a thread of this
    process (a live writer)."""
    ready = threading.Event()

    def hold() -> None:
        with hold_marker(str(workdir / ISSUES) + ".lock", timeout_s=5):
            ready.set()
            (release or threading.Event()).wait(seconds)

    holder = threading.Thread(target=hold)
    holder.start()
    ready.wait(HANG_GUARD_S)
    return holder


def _wait_for_lock_waiter(workdir, server: HttpServer) -> None:
    """Until one of the server's calls queues for the issues lock (it publishes a ticket naming
    the server's pid beside the lock): a write in flight, whatever the machine's load."""
    ticket = f".{server.process.pid}.wait"
    wait_for(
        lambda: any(name.endswith(ticket) for name in os.listdir(workdir / ".premath")),
        HANG_GUARD_S,
        "a call to wait for the issues lock",
    )


def _accepted_connections(server: HttpServer) -> int:
    """Established connections the server process has accepted on its port (Linux /proc)."""
    pid, port = server.process.pid, int(server.base.rsplit(":", 1)[1])
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    count = 0
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, state, inode = int(fields[1].split(":")[1], 16), fields[3], fields[9]
        count += local_port == port and state == "01" and inode in inodes
    return count


def test_a_slow_write_delays_only_itself_and_gives_up_by_its_deadline(workdir):
    before = seeded(workdir)
    token, path = tokens(workdir)
    options = ("--token-file", path, "--call-timeout", "1", "--mutation-policy", "open")
    with http_server(workdir, *options) as server:
        release = threading.Event()
        holder = _hold_store_lock(workdir, HANG_GUARD_S, release)
        results: dict[str, httpx2.Response] = {}
        claim = threading.Thread(
            target=lambda: results.update(
                claim=post(server.url, token, rpc("issue_claim", {"id": "bd-1", "assignee": "a"}))
            )
        )
        claim.start()
        _wait_for_lock_waiter(workdir, server)
        for _ in range(3):  # reads are answered while the write waits for the lock
            read = post(server.url, token, rpc("issue_ready", {}), timeout=5)
            assert tool_text(read)[0] is False
        claim.join()
        # answered by its deadline while the lock was still held: the write never started
        assert holder.is_alive()
        error, text = tool_text(results["claim"])
        assert error
        assert text.startswith(
            "[failureClass=lease_mutation_lock_busy] issue-memory lock busy: "
            ".premath/issues.jsonl.lock"
        )
        release.set()
        holder.join()
        time.sleep(0.5)
        assert (workdir / ISSUES).read_bytes() == before
        claimed = post(server.url, token, rpc("issue_claim", {"id": "bd-1", "assignee": "a"}))
        assert tool_text(claimed)[0] is False


def test_a_call_past_its_deadline_is_a_tool_error_and_its_thread_finishes():
    """A call that cannot be cut short (a stand-in tool that sleeps) is answered at its
    deadline; the server waits for the thread before it would exit."""
    from premath.clock import SystemClock
    from premath.mcp.access_log import AccessLog
    from premath.mcp.http import build_http_app
    from premath.mcp.server import CallLimits, InFlight, build_server
    from premath.mcp.tools import ServerConfig, ToolService
    from premath.web.tokens import parse_token_file

    class SlowService(ToolService):
        def issue_ready(self, args):
            time.sleep(1.5)
            return super().issue_ready(args)

    token = new_token()
    lines: list[str] = []

    class Lines:
        def write(self, text: str) -> None:
            lines.append(text)

        def flush(self) -> None:
            return None

    in_flight = InFlight()
    server = build_server(
        SlowService(ServerConfig(), SystemClock()),
        "premath-mcp",
        "0",
        limits=CallLimits(call_timeout_s=0.5),
        log=AccessLog(Lines()),
        in_flight=in_flight,
    )
    app = build_http_app(server, parse_token_file("t", f"w1 {token}\n"), log=AccessLog(None))

    async def scenario() -> httpx2.Response:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://t") as client:
                return await client.post(
                    "/mcp",
                    content=rpc("issue_ready", {}),
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                    },
                )

    answer = anyio.run(scenario)
    error, text = tool_text(answer)
    assert error
    assert text.startswith(
        "[failureClass=tool.deadline_exceeded] issue_ready did not finish within 0.5 s"
    )
    assert in_flight.wait_idle(10)
    logged = orjson.loads(lines[0])
    assert (logged["tool"], logged["caller"], logged["outcome"]) == (
        "issue_ready",
        "w1",
        "deadline",
    )
    assert logged["failureClass"] == "tool.deadline_exceeded"


def test_a_client_that_disconnects_mid_call_leaves_the_store_whole(workdir):
    seeded(workdir)
    token, path = tokens(workdir)
    with http_server(workdir, "--token-file", path, "--mutation-policy", "open") as server:
        port = int(server.base.rsplit(":", 1)[1])
        release = threading.Event()
        holder = _hold_store_lock(workdir, HANG_GUARD_S, release)
        body = rpc("issue_claim_next", {"assignee": "gone"})
        sock = _raw(port)
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n".encode()
            + b"Accept: application/json, text/event-stream\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        _wait_for_lock_waiter(workdir, server)
        sock.close()  # gone while its claim waits for the store
        release.set()
        holder.join()
        assert tool_text(post(server.url, token, rpc("issue_ready", {})))[0] is False
        lock = workdir / ".premath" / "issues.jsonl.lock"
        wait_for(lambda: not lock.exists(), HANG_GUARD_S, "the claim to give the lock back")
        data = (workdir / ISSUES).read_bytes()
        rows = stored(workdir)
        assert encode_store(rows) == data
        assert rows["bd-1"].get("assignee") in (None, "gone")


def test_sigterm_finishes_in_flight_writes_then_exits(workdir):
    seed(workdir, *(row(f"bd-{n}") for n in range(1, 4)))
    token, path = tokens(workdir)
    server = start_http_server(workdir, "--token-file", path, "--mutation-policy", "open")
    try:
        release = threading.Event()
        holder = _hold_store_lock(workdir, HANG_GUARD_S, release)
        results: list[httpx2.Response] = []
        calls = [
            threading.Thread(
                target=lambda n=n: results.append(
                    post(
                        server.url,
                        token,
                        rpc("issue_claim", {"id": f"bd-{n}", "assignee": f"w{n}"}),
                    )
                )
            )
            for n in range(1, 4)
        ]
        for thread in calls:
            thread.start()
        # every call in flight: one queued for the lock, the others taken in (one writer of a
        # server at a time waits for the first in the server itself, unseen from here)
        _wait_for_lock_waiter(workdir, server)
        wait_for(lambda: _accepted_connections(server) >= 3, HANG_GUARD_S, "3 calls taken in")
        server.process.send_signal(signal.SIGTERM)
        release.set()
        holder.join()
        for thread in calls:
            thread.join()
        assert server.process.wait(timeout=30) == 0
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)
    assert [tool_text(answer)[0] for answer in results] == [False, False, False]
    rows = stored(workdir)
    assert {rows[f"bd-{n}"]["assignee"] for n in range(1, 4)} == {"w1", "w2", "w3"}
    assert server.stderr().rstrip().endswith("premath mcp-serve: stopped")
    with pytest.raises(httpx2.HTTPError):
        httpx2.get(server.base + "/healthz", timeout=2)


def test_access_log_names_tool_caller_outcome_and_duration_but_no_arguments(workdir):
    seeded(workdir)
    token, path = tokens(workdir, w2=new_token())
    secret_title = "title-that-must-not-be-logged"

    async def scenario(url: str) -> None:
        async with http_session(url, token) as client:
            await call(client, "issue_add", {"title": secret_title})
            await call(client, "issue_claim", {"id": "bd-9", "assignee": "a"})

    with http_server(workdir, "--token-file", path, "--mutation-policy", "open") as server:
        anyio.run(scenario, server.url)
        lines = server.access_lines()
        log = server.stderr()
    tools = [line for line in lines if line["event"] == "tool"]
    assert [(t["tool"], t["caller"], t["outcome"]) for t in tools] == [
        ("issue_add", "w1", "ok"),
        ("issue_claim", "w1", "tool_error"),
    ]
    assert tools[1]["failureClass"] == "lease_not_found"
    assert all(isinstance(t["durationMs"], float) for t in tools)
    assert secret_title not in log
    assert token not in log
    assert {line["event"] for line in lines} == {"http", "tool"}


def test_loopback_without_a_token_generates_a_private_token_file(workdir, tmp_path_factory):
    seeded(workdir)
    config = tmp_path_factory.mktemp("config")
    env = server_env(XDG_CONFIG_HOME=str(config))
    with http_server(workdir, env=env) as server:
        token_path = config / "premath" / "mcp-serve.tokens"
        assert f"token file: {token_path} (generated;" in server.stderr()
        assert stat.S_IMODE(token_path.stat().st_mode) == 0o600
        token = token_path.read_text().split("local ", 1)[1].split()[0]
        assert post(server.url, token, rpc("issue_ready", {})).status_code == 200
        assert token not in server.stderr()
    with http_server(workdir, env=env) as again:
        assert f"token file: {token_path} (using;" in again.stderr()
        assert post(again.url, token, rpc("issue_ready", {})).status_code == 200


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--bind", "0.0.0.0:0"], "refusing to serve 0.0.0.0:0 without a bearer token"),
        (["--bind", "nonsense"], "--bind must be HOST:PORT"),
        (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["--witness-max-age", "soon"], "--witness-max-age must be a positive duration"),
    ],
)
def test_unsafe_or_bad_starts_are_refused(workdir, options, message):
    done = subprocess.run(
        [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http", *options],
        cwd=workdir,
        env=server_env(XDG_CONFIG_HOME=str(workdir / "cfg")),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr.decode()


@pytest.mark.parametrize(
    ("content", "mode", "message"),
    [
        ("w1 short\n", 0o600, "a token must be at least 32 characters"),
        (f"w1 {'a' * 40}\n", 0o644, "is open to other users (mode 0644)"),
        (f"w1 {'a' * 40}\nw1 {'b' * 40}\n", 0o600, "token id and token must each be unique"),
        ("# nothing\n", 0o600, "holds no token"),
    ],
)
def test_bad_token_files_are_refused(workdir, content, mode, message):
    path = workdir / "tokens"
    path.write_text(content)
    path.chmod(mode)
    done = subprocess.run(
        [sys.executable, "-m", "premath", "mcp-serve", "--transport", "streamable-http",
         "--bind", "127.0.0.1:0", "--token-file", str(path)],
        cwd=workdir, env=server_env(), capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr.decode()


def test_token_from_the_environment(workdir):
    seeded(workdir)
    token = new_token()
    with http_server(workdir, env=server_env(PREMATH_MCP_TOKEN=token)) as server:
        assert "tokens: 1 from $PREMATH_MCP_TOKEN" in server.stderr()
        assert post(server.url, token, rpc("issue_ready", {})).status_code == 200
        assert post(server.url, new_token(), rpc("issue_ready", {})).status_code == 401


def test_tls(workdir):
    seeded(workdir)
    token, path = tokens(workdir)
    cert, key = workdir.parent / "cert.pem", workdir.parent / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    with http_server(
        workdir, "--token-file", path, "--tls-cert", str(cert), "--tls-key", str(key)
    ) as server:
        assert server.url.startswith("https://127.0.0.1:")
        answer = httpx2.post(
            server.url,
            content=rpc("issue_ready", {}),
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
            verify=ssl.create_default_context(cafile=str(cert)),
        )
        assert answer.status_code == 200
        with pytest.raises(httpx2.HTTPError):
            httpx2.get(server.base.replace("https", "http") + "/healthz", timeout=5)


def test_the_stdio_server_does_not_load_the_http_face():
    """(The SDK's own server module already imports starlette; our HTTP face loads only for
    `--transport streamable-http`.)"""
    code = (
        "import sys; import premath.mcp.server, premath.mcp.tools; "
        "faces = ('premath.mcp.http', 'premath.web.tokens', 'premath.web.server'); "
        "print(sorted(m for m in faces if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=REPO_ROOT, check=True
    )
    assert done.stdout == b"[]\n"


def test_what_the_stdio_server_survives_it_survives_over_http(workdir):
    """The stdio server's bad-input table (tests/mcp/test_server.py) over HTTP: the same typed
    refusals, and a broken store reported, then served again once repaired."""
    from tests.mcp.test_server import BAD_CALLS

    before = seed(workdir, row("bd-1"))
    token, path = tokens(workdir)

    async def scenario(url: str) -> None:
        async with http_session(url, token) as client:
            for name, arguments, message in BAD_CALLS:
                assert await call(client, name, arguments) == (True, message)
            assert (workdir / ISSUES).read_bytes() == before
            (workdir / ISSUES).write_bytes(b"{corrupt\n" + before)
            error, text = await call(client, "issue_ready")
            assert (error, text.startswith(f"failed to load {ISSUES}: line 1: ")) == (True, True)
            seed(workdir, row("bd-7"))
            assert (await call(client, "issue_ready"))[1]["items"][0]["id"] == "bd-7"

    with http_server(workdir, "--token-file", path, "--mutation-policy", "open") as server:
        anyio.run(scenario, server.url)
        garbage = post(server.url, token, b"this is not json")
        assert garbage.status_code == 400
        assert garbage.json()["error"]["code"] == -32700  # JSON-RPC parse error
        assert post(server.url, token, rpc("issue_ready", {})).status_code == 200


def test_extra_routes_are_served_beside_mcp_behind_the_same_token():
    """`build_http_app(..., extra_routes=...)`: where the observation routes will mount."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from premath.clock import SystemClock
    from premath.mcp.access_log import AccessLog
    from premath.mcp.http import build_http_app
    from premath.mcp.server import build_server
    from premath.mcp.tools import ServerConfig, ToolService
    from premath.web.tokens import parse_token_file

    token = new_token()
    service = ToolService(ServerConfig(mutation_policy="open"), SystemClock())
    app = build_http_app(
        build_server(service, "premath-mcp", "0"),
        parse_token_file("tokens", f"viewer {token}\n"),
        log=AccessLog(None),
        extra_routes=[Route("/api/hello", lambda request: JSONResponse({"hello": "world"}))],
    )

    async def scenario() -> list[int]:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            refused = await client.get("/api/hello")
            assert refused.headers["www-authenticate"] == 'Bearer realm="premath"'
            served = await client.get("/api/hello", headers={"Authorization": f"Bearer {token}"})
            assert served.json() == {"hello": "world"}
            health = await client.get("/healthz")
            return [refused.status_code, served.status_code, health.status_code]

    assert anyio.run(scenario) == [401, 200, 200]


def test_allow_path_widens_the_roots_and_the_file_rule_still_holds(workdir, tmp_path_factory):
    seeded(workdir)
    token, path = tokens(workdir)
    shared = tmp_path_factory.mktemp("shared")
    (shared / "surface.json").write_bytes(orjson.dumps(minimal_surface()))

    async def scenario(url: str) -> list[tuple[bool, object]]:
        async with http_session(url, token) as client:
            return [
                await call(client, "observe_latest", {"surfacePath": str(shared / "surface.json")}),
                await call(client, "observe_latest", {"surfacePath": "/dev/zero"}),
            ]

    with http_server(workdir, "--token-file", path) as server:
        outside, _ = anyio.run(scenario, server.url)
    assert outside[0] is True
    assert outside[1].startswith("[failureClass=path.outside_root] surfacePath ")
    options = ("--token-file", path, "--allow-path", str(shared), "--allow-path", "/dev")
    with http_server(workdir, *options) as server:
        allowed, device = anyio.run(scenario, server.url)
    assert allowed[0] is False
    assert allowed[1]["view"]["summary"] == minimal_surface()["summary"]
    assert device == (
        True,
        "[failureClass=path.not_regular_file] surfacePath `/dev/zero` is a device, not a "
        "regular file; name a file",
    )
