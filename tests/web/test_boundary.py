"""The HTTP boundary of both servers that take logins (`mcp-serve --transport streamable-http
--observe` and `observe-serve --token-file`), attacked over real sockets as issue 31 found it:
strangers' bodies are refused unread (the server's RSS stays put), a body that never arrives
whole changes nothing (the store's bytes), a control character in a path is a clean 400, the
head cap holds whatever the packets, login links never come from the Host header, and one token
holder cannot evict another's sessions or login codes (specs/mcp-http.md "Threat model")."""

import contextlib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import orjson
import pytest

from premath.web.sessions import MAX_CODES, MAX_SESSIONS
from tests.cli.test_issue import stored
from tests.mcp.client import http_server, new_token, token_file
from tests.support.cli import invoke
from tests.support.observation import seed_project
from tests.support.serve import body_of, observe_serve, read_until_closed, status_of

pytestmark = pytest.mark.timeout(180)

KINDS = ("mcp-serve", "observe-serve")
MIB = 1024 * 1024
CONTROL_IN_PATH = {"error": "bad request: a control character in the path"}
INCOMPLETE = {
    "error": "bad request: the body ended before its declared length or chunked terminator"
}
TOO_LARGE = {"error": "request body too large"}


@dataclass
class Server:
    kind: str
    root: Path
    port: int
    pid: int
    output: Callable[[], str]
    """The banner and, for mcp-serve, the access log."""
    errors: Callable[[], str]
    """What the server wrote on stderr."""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def access_lines(self) -> list[dict]:
        return [orjson.loads(line) for line in self.output().splitlines() if line[:1] == "{"]

    def login_url(self) -> str:
        found = re.search(r"  login: (\S+/login\?code=\S+) ", self.output())
        assert found, self.output()
        return found.group(1)

    def memory_bytes(self, field: str) -> int:
        """`VmRSS` (resident now) or `VmHWM` (the peak so far) from /proc/<pid>/status."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        (kib,) = re.findall(rf"^{field}:\s+(\d+) kB$", status, re.MULTILINE)
        return int(kib) * 1024


@dataclass(frozen=True)
class Tokens:
    w1: str
    w2: str


def _start(kind: str, root: Path, tokens: Tokens, *extra: str):
    path = str(token_file(root.parent, w1=tokens.w1, w2=tokens.w2))
    if kind == "mcp-serve":
        options = ("--observe", "--live", "--mutation-policy", "open", "--client-timeout", "5")
        return http_server(root, "--token-file", path, *options, *extra)
    return observe_serve(root, "--live", "--token-file", path, *extra)


def _served(kind: str, root: Path, running) -> Server:
    if kind == "mcp-serve":
        port = int(running.base.rsplit(":", 1)[1])
        return Server(kind, root, port, running.process.pid, running.stderr, running.stderr)
    banner = "\n".join(running.banner)
    pid = running.process.pid
    return Server(kind, root, running.port, pid, lambda: banner, running.stderr)


@pytest.fixture(scope="module")
def tokens() -> Tokens:
    return Tokens(new_token(), new_token())


@pytest.fixture(scope="module", params=KINDS)
def server(request, tmp_path_factory, tokens) -> Iterator[Server]:
    root = tmp_path_factory.mktemp(request.param)
    seed_project(root)
    with _start(request.param, root, tokens) as running:
        yield _served(request.param, root, running)


def _connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def _exchange(server: Server, data: bytes, *, half_close: bool = False) -> bytes:
    with _connect(server) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return read_until_closed(sock)


# 1. Strangers' bodies ------------------------------------------------------------------------


STRANGERS = [  # what the gate lets through without a token, each with a 4 MiB body
    ("OPTIONS", "/mcp"),
    ("GET", "/healthz"),
    ("POST", "/logout"),
    ("POST", "/login"),
]


def _stranger_head(method: str, path: str, chunked: bool) -> bytes:
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {4 * MIB}"
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{framing}\r\n\r\n".encode()
    return head + (f"{4 * MIB:x}\r\n".encode() if chunked else b"")


def test_strangers_bodies_are_refused_unread_and_the_server_does_not_grow(server):
    """30 unauthenticated requests each hold a connection with 4 MiB of body sent but the last
    byte: the server answers each 413 at once and reads none of it into memory (before the
    fix it held every body whole: 30 x 4 MiB, until each request timed out). The peak resident
    size is compared, so the measure cannot miss memory held only for a while."""
    baseline = server.memory_bytes("VmRSS")
    body = b"x" * (4 * MIB - 1)
    sockets = [_connect(server) for _ in range(30)]
    answers: list[bytes] = [b""] * len(sockets)

    def send(index: int) -> None:
        method, path = STRANGERS[index % len(STRANGERS)]
        with contextlib.suppress(OSError):  # the server stops reading once its linger ends
            sockets[index].sendall(_stranger_head(method, path, chunked=index % 2 == 1) + body)

    def read(index: int) -> None:  # while the body is still going out, as a browser reads
        answers[index] = read_until_closed(sockets[index])

    try:
        threads = [
            threading.Thread(target=job, args=(n,))
            for n in range(len(sockets))
            for job in (send, read)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        grown = server.memory_bytes("VmHWM") - baseline
    finally:
        for sock in sockets:
            sock.close()
    assert grown < 24 * MIB, f"the server's peak grew by {grown / MIB:.1f} MiB"
    assert [(status_of(raw), body_of(raw)) for raw in answers] == [(413, TOO_LARGE)] * 30
    assert httpx2.get(server.base + "/healthz", timeout=10).status_code == 200


def test_a_login_form_is_read_within_its_small_cap(server, tokens):
    form = f"token={tokens.w1}&padding=".encode()
    over = form + b"x" * (8 * 1024)
    head = (
        "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded"
    )
    raw = _exchange(server, f"{head}\r\nContent-Length: {len(over)}\r\n\r\n".encode() + over)
    assert (status_of(raw), body_of(raw)) == (413, TOO_LARGE)
    login = httpx2.post(server.base + "/login", data={"token": tokens.w1}, timeout=10)
    assert login.status_code == 303


# 2. Bodies that never arrive whole ----------------------------------------------------------


def _update(token: str, notes: str) -> tuple[bytes, bytes]:
    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "issue_update", "arguments": {"id": "bd-1", "notes": notes}},
        }
    )
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    )
    return head.encode(), body


@pytest.mark.parametrize("server", ["mcp-serve"], indirect=True)  # the server with tools
def test_a_tool_call_whose_body_never_arrives_whole_changes_nothing(server, tokens):
    store = server.root / ".premath" / "issues.jsonl"
    before = store.read_bytes()
    head, body = _update(tokens.w1, "truncated")
    short = f"Content-Length: {len(body) + 100}\r\n\r\n".encode()
    chunked = b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n"
    for framed in (head + short + body, head + chunked):  # the client half-closes: it hears 400
        raw = _exchange(server, framed, half_close=True)
        assert (status_of(raw), body_of(raw)) == (400, INCOMPLETE)
    with _connect(server) as sock:  # the client closes outright: nothing to hear, nothing done
        sock.sendall(head + short + body)
    refused = _access_lines_until(server, lambda lines: len(_mcp_posts(lines)) == 3)
    assert [line["status"] for line in _mcp_posts(refused)] == [400, 400, 400]
    assert store.read_bytes() == before
    head, body = _update(tokens.w1, "whole")  # the same call, complete, is applied
    raw = _exchange(
        server, head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
    )
    assert status_of(raw) == 200
    assert stored(server.root)["bd-1"]["notes"] == "whole"


def _mcp_posts(lines: list[dict]) -> list[dict]:
    return [line for line in lines if (line.get("method"), line.get("path")) == ("POST", "/mcp")]


def _access_lines_until(server: Server, done: Callable[[list[dict]], bool]) -> list[dict]:
    """The access log once `done` holds (each line is written when its request ends)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = server.access_lines()
        if done(lines):
            return lines
        time.sleep(0.05)
    raise AssertionError(f"access log never got there: {server.access_lines()}")


def test_a_login_form_that_never_arrives_whole_opens_no_session(server, tokens):
    form = f"token={tokens.w2}".encode()
    head = (
        "POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {len(form) + 100}\r\n\r\n"
    )
    raw = _exchange(server, head.encode() + form, half_close=True)
    assert (status_of(raw), body_of(raw)) == (400, INCOMPLETE)
    assert b"set-cookie" not in raw.lower()


# 3. Control characters in a path -------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/runs/x/x%00", "/runs/x%01/report", "/latest%0a", "/dashboard%7f"]
)
def test_a_control_character_in_a_path_is_a_clean_400(server, tokens, path):
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {tokens.w1}\r\n"
        "Connection: close\r\n\r\n"
    )
    raw = _exchange(server, request.encode())
    assert (status_of(raw), body_of(raw)) == (400, CONTROL_IN_PATH)
    assert b"Traceback" not in raw
    if server.kind == "mcp-serve":  # observe-serve keeps no access log
        decoded = re.sub(r"%([0-9a-f]{2})", lambda hit: chr(int(hit.group(1), 16)), path)
        lines = _access_lines_until(
            server, lambda seen: any(x.get("path") == decoded for x in seen)
        )
        assert [x["status"] for x in lines if x.get("path") == decoded] == [400]
    assert "Traceback" not in server.errors()


# 4. The head cap -----------------------------------------------------------------------------

HEAD_CAP = 16 * 1024


@pytest.mark.parametrize("where", ["path", "header"])
@pytest.mark.parametrize("pieces", [1, 100], ids=["one-write", "in-pieces"])
def test_the_head_cap_holds_whatever_the_packets(server, where, pieces):
    huge = "a" * 100_000
    target, header = (f"/{huge}", "") if where == "path" else ("/healthz", f"X-Long: {huge}\r\n")
    request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}\r\n".encode()
    size = -(-len(request) // pieces)
    with _connect(server) as sock:
        with contextlib.suppress(OSError):  # the server stops reading once its linger ends
            for start in range(0, len(request), size):
                sock.sendall(request[start : start + size])
        raw = read_until_closed(sock)
    assert status_of(raw) == 431
    assert body_of(raw) == {"error": f"request line and headers over {HEAD_CAP} bytes"}
    assert len(raw) < 1024  # nothing of the path or header is echoed


def test_a_head_just_under_the_cap_is_served(server):
    start, end = (
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ",
        b"\r\nConnection: close\r\n\r\n",
    )
    request = start + b"a" * (HEAD_CAP - len(start) - len(end)) + end
    assert len(request) == HEAD_CAP
    assert status_of(_exchange(server, request)) == 200


# 5. Login links ------------------------------------------------------------------------------


def test_a_login_link_names_the_bound_address_never_the_host_header(server, tokens):
    minted = httpx2.post(
        server.base + "/login/code",
        headers={"Authorization": f"Bearer {tokens.w1}", "Host": "evil.example:666"},
        timeout=10,
    )
    assert minted.status_code == 200
    url = minted.json()["url"]
    assert url.startswith(f"{server.base}/login?code="), url
    assert httpx2.get(url, timeout=10).status_code == 200


@pytest.mark.parametrize("kind", KINDS)
def test_public_url_names_the_login_links(kind, tmp_path, tokens):
    root = tmp_path / "project"
    root.mkdir()
    seed_project(root)
    public = "https://coordinator.example:8443"
    with _start(kind, root, tokens, "--public-url", f"{public}/") as running:
        served = _served(kind, root, running)
        assert served.login_url().startswith(f"{public}/login?code=")
        minted = httpx2.post(
            served.base + "/login/code",
            headers={"Authorization": f"Bearer {tokens.w1}"},
            timeout=10,
        )
        assert minted.json()["url"].startswith(f"{public}/login?code=")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("observe-serve", "--public-url", "https://x.example/sub", "--token-file", "t"),
            "--public-url must be http://HOST[:PORT] or https://HOST[:PORT], without a path",
        ),
        (
            ("observe-serve", "--public-url", "ftp://x.example", "--token-file", "t"),
            "--public-url must be",
        ),
        (
            ("observe-serve", "--public-url", "https://x.example"),
            "--public-url names the login links, which --token-file turns on",
        ),
        (
            ("mcp-serve", "--transport", "streamable-http", "--public-url", "https://x.example"),
            "--public-url names the login links of the dashboard: add --observe",
        ),
    ],
)
def test_a_bad_public_url_is_a_usage_error(args, message):
    result = invoke(*args, "--json")
    assert result.exit_code == 2, result.stderr
    assert result.json["error"]["code"] == "usage_error"
    assert result.json["error"]["message"].startswith(message)


# 6. Per-token caps ---------------------------------------------------------------------------


def test_one_token_holder_cannot_evict_anothers_sessions_or_codes(server, tokens):
    with httpx2.Client(base_url=server.base, timeout=30) as client:
        kept = client.post("/login", data={"token": tokens.w2})
        assert kept.status_code == 303
        kept_cookie = kept.headers["set-cookie"].split(";", 1)[0]
        code_for = {"Authorization": f"Bearer {tokens.w2}"}
        kept_code = client.post("/login/code", headers=code_for).json()["url"]
        client.cookies.clear()
        own = []
        for _ in range(MAX_SESSIONS + 1):
            login = client.post("/login", data={"token": tokens.w1})
            assert login.status_code == 303
            own.append(login.headers["set-cookie"].split(";", 1)[0])
            client.cookies.clear()
        minted = [
            client.post("/login/code", headers={"Authorization": f"Bearer {tokens.w1}"}).json()
            for _ in range(MAX_CODES + 1)
        ]

        def reads(cookie: str) -> int:
            return client.get("/latest", headers={"Cookie": cookie}).status_code

        assert (reads(own[0]), reads(own[1]), reads(own[-1])) == (401, 200, 200)
        assert reads(kept_cookie) == 200
        assert httpx2.get(minted[0]["url"], timeout=10).status_code == 401
        assert httpx2.get(minted[-1]["url"], timeout=10).status_code == 200
        assert httpx2.get(kept_code, timeout=10).status_code == 200


# A route that fails ---------------------------------------------------------------------------


def test_a_failing_route_is_a_json_500_with_its_access_line():
    """What a hostile path used to reach (a traceback and an access line without a status) is
    now refused before any route; a route that still fails answers JSON and logs 500."""
    from starlette.routing import Route

    from premath.web.app import http_app
    from premath.web.server import ServerLimits

    class Log:
        def __init__(self) -> None:
            self.lines: list[dict] = []

        def write(self, event: str, **fields) -> None:
            self.lines.append({"event": event, **fields})

    def fail(request):
        raise ValueError("embedded null byte")

    log = Log()
    app = http_app([Route("/fail", fail)], ServerLimits(), log=log)

    async def scenario() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.get("/fail")

    answer = anyio.run(scenario)
    assert (answer.status_code, answer.json()) == (500, {"error": "internal error"})
    assert [(line["path"], line["status"]) for line in log.lines] == [("/fail", 500)]
