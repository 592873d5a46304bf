"""One process for agents and people: `mcp-serve --transport streamable-http --observe --live`
as a real subprocess on an ephemeral loopback port. Agents use the MCP tools with a bearer
token (the SDK's client); people log in through the one-time link the server prints and read
the observation API, the dashboard and its event stream with a session cookie that can never
drive a tool. Nothing secret reaches the log; the one server guard answers slow, idle and
oversized clients; SIGTERM ends the event streams and exits 0. (The browser side of the same
server: tests/web/test_dashboard_browser.py.)"""

import html
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx2
import orjson
import pytest

from premath.store.canonical import response_bytes
from tests.mcp.client import (
    HttpServer,
    call,
    http_server,
    http_session,
    new_token,
    server_env,
    start_http_server,
    token_file,
)
from tests.support.cli import run_premath
from tests.support.observation import seed_project
from tests.support.processes import HANG_GUARD_S
from tests.support.remote import wait_for
from tests.support.serve import PUSH_BOUND_S, EventStream, observe_serve

pytestmark = pytest.mark.timeout(180)

COMBINED = ("--observe", "--live", "--mutation-policy", "open")


def login_url(server: HttpServer) -> str:
    found = re.search(r"  login: (\S+/login\?code=\S+) ", server.stderr())
    assert found, server.stderr()
    return found.group(1)


def port_of(server: HttpServer) -> int:
    return int(server.base.rsplit(":", 1)[1])


def cookie_of(response: httpx2.Response) -> str:
    """`name=value` of the session cookie a login answer sets."""
    (header,) = response.headers.get_list("set-cookie")
    return header.split(";", 1)[0]


def get(server: HttpServer, path: str, **headers: str) -> httpx2.Response:
    return httpx2.get(server.base + path, headers=headers, timeout=10)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("coordinator")
    seed_project(root)
    return root


@pytest.fixture(scope="module")
def token(project) -> str:
    return new_token()


@pytest.fixture(scope="module")
def server(project, token):
    path = token_file(project.parent, w1=token)
    options = ("--token-file", str(path), "--client-timeout", "2", *COMBINED)
    with http_server(project, *options) as running:
        yield running


def test_the_banner_names_the_dashboard_and_a_one_time_login_link(server):
    lines = server.stderr().splitlines()
    assert f"  dashboard: {server.base}/dashboard" in lines
    url = login_url(server)
    assert url.startswith(f"{server.base}/login?code=")
    assert len(url.rsplit("=", 1)[1]) >= 43  # 32 random bytes


def test_agents_call_tools_with_the_bearer_token_beside_the_dashboard(server, project, token):
    async def scenario() -> tuple[int, object]:
        async with http_session(server.url, token) as client:
            tools = (await client.list_tools()).tools
            error, ready = await call(client, "issue_ready")
            assert error is False
            return len(tools), sorted(item["id"] for item in ready["items"])

    count, ready = anyio.run(scenario)
    assert (count, ready) == (31, ["bd-1"])
    latest = get(server, "/latest", **bearer(token))
    assert latest.status_code == 200
    view = run_premath("observe", "--json", cwd=project)
    assert latest.content == response_bytes(orjson.loads(view.stdout))
    assert get(server, "/healthz").json() == {"status": "ok"}  # the MCP server's probe, public


@pytest.mark.parametrize(
    "path",
    ["/", "/latest", "/needs-attention", "/events", "/dashboard/dashboard.js", "/runs/x/report"],
)
def test_without_a_token_or_login_nothing_is_served(server, path):
    answer = get(server, path)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer realm="premath"'
    assert answer.json()["error"] == "unauthorized"


def test_a_browser_without_a_login_gets_a_page_saying_how_to_log_in(server):
    answer = get(server, "/dashboard", Accept="text/html,application/xhtml+xml")
    assert answer.status_code == 401
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    page = answer.text
    assert "Log in to the premath dashboard" in page
    assert "<code>premath mcp-serve</code> printed when it started" in page
    assert '<form method="post" action="/login">' in page
    assert "<script" not in page
    assert "Wire the observation dashboard" not in page  # no data from the store
    assert "script-src" not in answer.headers["content-security-policy"]


def test_the_login_link_works_once_and_sets_a_strict_http_only_cookie(server):
    url = login_url(server)
    assert httpx2.head(url, timeout=10).status_code == 200  # a link checker spends nothing
    first = httpx2.get(url, timeout=10)
    assert first.status_code == 200
    assert '<meta http-equiv="refresh" content="0;url=/dashboard">' in first.text
    header = first.headers["set-cookie"]
    name, _, rest = header.partition("=")
    assert name == f"premath_session_{port_of(server)}"
    attributes = {part.strip().lower() for part in rest.split(";")[1:]}
    assert attributes == {"httponly", "max-age=43200", "path=/", "samesite=strict"}
    again = httpx2.get(url, timeout=10)
    assert again.status_code == 401
    assert "This login link has been used or has expired." in again.text
    assert "set-cookie" not in again.headers

    cookie = {"Cookie": cookie_of(first)}
    page = get(server, "/dashboard", **cookie)
    assert (page.status_code, page.headers["content-type"]) == (200, "text/html; charset=utf-8")
    assert b"dashboard/dashboard.js" in page.content
    assert get(server, "/latest", **cookie).status_code == 200
    stream = EventStream(port_of(server), headers=cookie)
    name, snapshot = stream.next_event()
    stream.close()
    assert name == "snapshot"
    assert snapshot["viewer"] == {"caller": "@console", "via": "session"}
    assert {row["id"] for row in snapshot["issues"]} >= {"bd-1", "bd-2", "bd-3", "bd-4"}


def _logged_in(server: HttpServer, token: str) -> dict[str, str]:
    answer = httpx2.post(server.base + "/login", data={"token": token}, timeout=10)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/dashboard"
    return {"Cookie": cookie_of(answer)}


def test_a_cookie_never_drives_a_tool_mints_a_login_or_writes(server, token):
    cookie = _logged_in(server, token)
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    json_headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    for method, path in (
        ("POST", "/mcp"),
        ("GET", "/mcp"),
        ("POST", "/login/code"),
        ("POST", "/latest"),
    ):
        answer = httpx2.request(
            method, server.base + path, content=body, headers={**cookie, **json_headers}, timeout=10
        )
        assert answer.status_code == 401, (method, path)
    # a wrong bearer token next to a good cookie is still refused
    assert get(server, "/latest", **cookie, Authorization="Bearer " + "x" * 43).status_code == 401
    # a request from another site carries no SameSite=Strict cookie; were it forged, the form
    # posts are refused by Sec-Fetch-Site
    forged = httpx2.post(
        server.base + "/login",
        data={"token": token},
        headers={"Sec-Fetch-Site": "cross-site"},
        timeout=10,
    )
    assert forged.status_code == 403


def _drain(stream: EventStream) -> None:
    while True:
        stream.next_event()


def test_a_pasted_token_logs_in_and_logout_ends_the_session_and_its_streams(server, token):
    wrong = httpx2.post(server.base + "/login", data={"token": "nope"}, timeout=10)
    assert wrong.status_code == 401
    assert html.escape("That is not one of this server's tokens.") in wrong.text
    cookie = _logged_in(server, token)
    stream = EventStream(port_of(server), headers=cookie)
    name, snapshot = stream.next_event()
    assert (name, snapshot["viewer"]) == ("snapshot", {"caller": "w1", "via": "session"})
    out = httpx2.post(server.base + "/logout", headers=cookie, timeout=10)
    assert (out.status_code, out.headers["location"]) == (303, "/login")
    assert "max-age=0" in out.headers["set-cookie"].lower()
    stream.sock.settimeout(PUSH_BOUND_S)
    with pytest.raises(ConnectionError):  # the stream ends with its session
        _drain(stream)
    stream.close()
    assert get(server, "/latest", **cookie).status_code == 401


def test_wrong_methods_are_named(server, token):
    for path, allowed in (("/login/code", "POST"), ("/mcp", "POST"), ("/healthz", "GET")):
        answer = httpx2.put(server.base + path, headers=bearer(token), timeout=10)
        assert (answer.status_code, answer.json()) == (
            405,
            {"error": f"method not allowed; use {allowed}"},
        )


def test_a_bearer_token_asks_for_a_new_login_link(server, token):
    minted = httpx2.post(server.base + "/login/code", headers=bearer(token), timeout=10)
    assert minted.status_code == 200
    document = minted.json()
    assert document["expiresInSeconds"] == 600
    assert document["url"].startswith(f"{server.base}/login?code=")
    opened = httpx2.get(document["url"], timeout=10)
    assert opened.status_code == 200
    assert get(server, "/needs-attention", Cookie=cookie_of(opened)).status_code == 200
    assert httpx2.get(document["url"], timeout=10).status_code == 401


def test_the_event_stream_pushes_a_change_an_agent_makes(server, token):
    cookie = _logged_in(server, token)
    stream = EventStream(port_of(server), headers=cookie)
    assert stream.next_event()[0] == "snapshot"

    async def add() -> dict:
        async with http_session(server.url, token) as client:
            error, added = await call(client, "issue_add", {"title": "Added by an agent"})
            assert error is False, added
            return added

    added = anyio.run(add)
    written = time.monotonic()
    delta = stream.delta_with("issues", PUSH_BOUND_S)
    assert time.monotonic() - written < PUSH_BOUND_S
    upserted = {row["id"]: row["title"] for row in delta["issues"]["upsert"]}
    assert upserted[added["issue"]["id"]] == "Added by an agent"
    stream.close()


def test_the_dashboard_keeps_its_host_check_on_loopback(server, token):
    cookie = _logged_in(server, token)
    foreign = {"Host": "attacker.example"}
    refused = get(server, "/dashboard", **cookie, **foreign)
    assert (refused.status_code, refused.json()) == (
        403,
        {"error": "host not allowed: attacker.example"},
    )
    assert get(server, "/login", **foreign).status_code == 403
    assert get(server, "/latest", **bearer(token), **foreign).status_code == 200  # the API


def test_no_token_login_code_or_cookie_reaches_the_log(server, token):
    cookie = _logged_in(server, token)
    assert get(server, "/dashboard", **cookie).status_code == 200
    minted = httpx2.post(server.base + "/login/code", headers=bearer(token), timeout=10).json()
    code = minted["url"].rsplit("=", 1)[1]
    assert httpx2.get(minted["url"], timeout=10).status_code == 200
    log = server.stderr()
    session = cookie["Cookie"].split("=", 1)[1]
    for secret in (token, session, code):
        assert secret not in log
    startup = login_url(server).rsplit("=", 1)[1]
    assert log.count(startup) == 1  # the banner's line, nothing else
    lines = server.access_lines()
    assert not any("code=" in orjson.dumps(line).decode() for line in lines)
    logins = [
        line for line in lines if line.get("path") == "/login" and line["status"] in (200, 303)
    ]
    assert "w1" in {line["caller"] for line in logins}
    pages = {line["caller"] for line in lines if line.get("path") == "/dashboard"}
    assert "w1" in pages


def test_the_guard_answers_slow_idle_and_oversized_clients(server, token):
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=30) as idle:
        idle.settimeout(30)
        received = b""
        while chunk := idle.recv(4096):
            received += chunk
    assert received.startswith(b"HTTP/1.1 408 ")  # after --client-timeout
    big = b"x" * (4 * 1024 * 1024 + 1)
    assert httpx2.post(server.url, content=big, timeout=30).status_code == 401  # token first
    oversized = httpx2.post(server.url, content=big, headers=bearer(token), timeout=30)
    assert (oversized.status_code, oversized.json()) == (413, {"error": "request body too large"})


def test_sigterm_ends_streams_and_exits_0(project, token):
    path = token_file(project.parent, w1=token)
    server = start_http_server(project, "--token-file", str(path), *COMBINED)
    try:
        cookie = _logged_in(server, token)
        streams = [EventStream(port_of(server), headers=cookie) for _ in range(3)]
        assert all(stream.next_event()[0] == "snapshot" for stream in streams)
        assert server.stop(signal.SIGTERM, timeout=HANG_GUARD_S) == 0  # streams open or not
        for stream in streams:
            stream.close()
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)
    log = server.stderr()
    assert log.rstrip().endswith("premath mcp-serve: stopped")
    assert "Traceback" not in log


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def test_over_tls_the_cookie_is_secure_and_host_only(project, token, certificate):
    cert, key = certificate
    path = token_file(project.parent, w1=token)
    tls = ("--tls-cert", str(cert), "--tls-key", str(key))
    with http_server(project, "--token-file", str(path), *COMBINED, *tls) as server:
        trusted = ssl.create_default_context(cafile=str(cert))
        assert login_url(server).startswith("https://127.0.0.1:")
        opened = httpx2.get(login_url(server), verify=trusted, timeout=10)
        header = opened.headers["set-cookie"]
        assert header.startswith(f"__Host-premath_session_{port_of(server)}=")
        assert "secure" in {part.strip().lower() for part in header.split(";")}
        page = httpx2.get(
            server.base + "/dashboard", headers={"Cookie": cookie_of(opened)}, verify=trusted
        )
        assert page.status_code == 200


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--observe"], "--observe serves the dashboard over HTTP: add --transport"),
        (["--live"], "--live rebuilds the surface the dashboard shows: add --observe"),
    ],
)
def test_observe_needs_http_and_live_needs_observe(tmp_path, options, message):
    done = subprocess.run(
        [sys.executable, "-m", "premath", "mcp-serve", *options],
        cwd=tmp_path,
        env=server_env(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert message in done.stderr.decode()


def test_in_a_subfolder_the_project_root_is_found(project, token):
    sub = project / "sub"
    sub.mkdir(exist_ok=True)
    path = token_file(project.parent, w1=token)
    with http_server(sub, "--token-file", str(path), *COMBINED) as server:
        assert "  repo root: ../.\n" in server.stderr()
        assert "  default issues path: ../.premath/issues.jsonl\n" in server.stderr()
        stream = EventStream(port_of(server), headers=_logged_in(server, token))
        _, snapshot = stream.next_event()
        stream.close()
        assert {row["id"] for row in snapshot["issues"]} >= {"bd-1", "bd-4"}


def test_a_public_bind_without_tls_is_said_aloud(tmp_path, token):
    path = token_file(tmp_path.parent, w1=token)
    with http_server(tmp_path, "--token-file", str(path), "--bind", "0.0.0.0:0") as server:
        warning = next(line for line in server.stderr().splitlines() if "warning" in line)
        assert warning.startswith("warning: mcp-serve listens on 0.0.0.0:")
        assert "over plain HTTP: bearer tokens and session cookies cross the network" in warning


@pytest.mark.parametrize("bind", ["localhost:0", "[::1]:0"])
def test_mcp_serve_takes_the_same_binds_as_observe_serve(tmp_path, bind):
    if bind.startswith("[") and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    token = new_token()
    path = token_file(tmp_path.parent, w1=token)
    with http_server(tmp_path, "--token-file", str(path), "--bind", bind) as server:
        host = "127.0.0.1" if bind.startswith("localhost") else "[::1]"
        assert re.fullmatch(rf"http://{re.escape(host)}:\d+/mcp", server.url)
        assert get(server, "/latest", **bearer(token)).status_code == 404  # no --observe


def test_observe_serve_with_a_token_file_asks_for_it(project, token):
    path = token_file(project.parent, viewer=token)
    with observe_serve(project, "--live", "--token-file", str(path)) as running:
        login = next(line for line in running.banner if line.startswith("  login: "))
        url = login.split()[1]
        assert url.startswith(f"http://127.0.0.1:{running.port}/login?code=")
        assert running.request("/healthz").json == {"ok": True}
        assert running.request("/latest").status == 401
        assert running.request("/latest", headers=bearer(token)).status == 200
        page = running.request("/dashboard", headers={"Accept": "text/html"})
        assert page.status == 401
        assert b"<code>premath observe-serve</code>" in page.body
        opened = httpx2.get(url, timeout=10)
        cookie = {"Cookie": cookie_of(opened)}
        assert running.request("/dashboard", headers=cookie).status == 200
        stream = EventStream(running.port, headers=cookie)
        assert stream.next_event()[1]["viewer"] == {"caller": "@console", "via": "session"}
        stream.close()
        assert running.stderr() == ""


def test_observe_serve_over_tls(project, certificate):
    cert, key = certificate
    with observe_serve(project, "--tls-cert", str(cert), "--tls-key", str(key)) as running:
        assert running.banner[-1].startswith(
            f"  dashboard: https://127.0.0.1:{running.port}/dashboard "
        )
        trusted = ssl.create_default_context(cafile=str(cert))
        answer = httpx2.get(f"https://127.0.0.1:{running.port}/healthz", verify=trusted)
        assert answer.json() == {"ok": True}


def test_a_bad_certificate_is_refused_before_serving(project, tmp_path):
    (tmp_path / "cert.pem").write_text("not a certificate")
    result = run_premath(
        "observe-serve",
        "--tls-cert",
        str(tmp_path / "cert.pem"),
        "--tls-key",
        str(tmp_path / "cert.pem"),
        cwd=project,
    )
    assert result.returncode == 2
    assert "cannot serve TLS with --tls-cert" in result.stderr.decode()


def test_ctrl_c_delivered_twice_still_finishes_the_writes_in_flight(tmp_path):
    """Ctrl-C under `mise run` reaches the server twice (the terminal's and the forwarded
    SIGINT): one graceful stop, not a forced exit that would drop a write in flight."""
    from tests.cli.test_issue import stored
    from tests.mcp.test_http import _hold_store_lock, post, rpc, tool_text

    seed_project(tmp_path)
    token = new_token()
    path = token_file(tmp_path.parent, w1=token)
    server = start_http_server(tmp_path, "--token-file", str(path), *COMBINED)
    try:
        release = threading.Event()
        holder = _hold_store_lock(tmp_path, HANG_GUARD_S, release)
        answers: list[httpx2.Response] = []
        claim = rpc("issue_claim", {"id": "bd-1", "assignee": "w9"})
        caller = threading.Thread(target=lambda: answers.append(post(server.url, token, claim)))
        caller.start()
        # The claim is in flight once the server queues for the lock (its ticket, named by pid).
        ticket = f".{server.process.pid}.wait"
        wait_for(
            lambda: any(name.endswith(ticket) for name in os.listdir(tmp_path / ".premath")),
            HANG_GUARD_S,
            "the claim to wait for the issues lock",
        )
        server.process.send_signal(signal.SIGINT)
        server.process.send_signal(signal.SIGINT)
        release.set()
        holder.join()
        caller.join()
        assert server.process.wait(timeout=30) == 0
    finally:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)
    assert tool_text(answers[0])[0] is False
    assert stored(tmp_path)["bd-1"]["assignee"] == "w9"
    assert "Traceback" not in server.stderr()
