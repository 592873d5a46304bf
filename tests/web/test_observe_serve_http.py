"""`premath observe-serve` as a real process: every route and error case of observation.md §7,
and the robustness the reference lacks (D21-4 to D21-9): concurrent and idle clients, split and
malformed requests, slow clients, limits, path traversal, a surface that changes under the
server, binds and signals."""

import os
import signal
import socket
import threading
import time
from pathlib import Path

import orjson
import pytest

from premath.store.canonical import response_bytes
from tests.support.cli import run_premath
from tests.support.observation import ALIAS, TYPED, instruction_witness, seed_project
from tests.support.processes import HANG_GUARD_S
from tests.support.serve import body_of, observe_serve, status_of

pytestmark = pytest.mark.timeout(120)

SURFACE = Path("artifacts/observation/latest.json")
CORS = {"access-control-allow-origin": "*", "access-control-allow-methods": "GET"}
INDEX = {
    "routes": [
        "/healthz",
        "/latest",
        "/needs-attention",
        "/instruction?id=<instruction_id>",
        "/projection?digest=<projection_digest>[&match=typed|compatibility_alias]",
    ],
    "service": "premath.observe.v1",
}
UNICODE_ID = "20260222T030000Z-ünïcode-✓"
HEADER_TIMEOUT_S = 3


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("observed")
    seed_project(root)
    witness = root / "artifacts" / "ciwitness" / "20260222T030000Z-unicode.json"
    witness.write_bytes(orjson.dumps(instruction_witness(UNICODE_ID)))
    assert run_premath("observe-build", cwd=root).returncode == 0
    return root


@pytest.fixture(scope="module")
def server(project):
    # Short enough for the deadline tests below, long enough that a loaded machine still sends
    # every other test's head in time.
    with observe_serve(project, "--header-timeout-seconds", str(HEADER_TIMEOUT_S)) as running:
        yield running


def _observe(project: Path, *args: str):
    result = run_premath("observe", *args, "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return orjson.loads(result.stdout)


def test_banner_names_the_bound_port_and_the_routes(server):
    assert server.banner[:3] == [
        "premath observe-serve",
        f"  bind: 127.0.0.1:{server.port}",
        "  surface: artifacts/observation/latest.json",
    ]
    assert server.banner[3:9] == ["  routes:", *(f"    GET {route}" for route in INDEX["routes"])]
    assert server.port != 0


def test_index_and_health_answer_sorted_pretty_json_with_cors(server):
    index = server.request("/")
    assert (index.status, index.body) == (200, response_bytes(INDEX))
    assert index.headers["content-type"] == "application/json"
    assert {k: index.headers[k] for k in CORS} == CORS
    health = server.request("/healthz")
    assert (health.status, health.body) == (200, b'{\n  "ok": true\n}')


@pytest.mark.parametrize(
    ("route", "mode"),
    [
        ("/latest", "latest"),
        ("/needs-attention", "needs_attention"),
        ("/needs_attention", "needs_attention"),
    ],
)
def test_views_are_the_cli_views_with_sorted_keys(server, project, route, mode):
    answer = server.request(route)
    assert answer.status == 200
    assert answer.body == response_bytes(_observe(project, "--mode", mode))


@pytest.mark.parametrize("key", ["id", "instruction_id"])
def test_instruction_by_either_key(server, project, key):
    answer = server.request(f"/instruction?{key}=20260222T010000Z-ci-wiring")
    expected = _observe(
        project, "--mode", "instruction", "--instruction-id", "20260222T010000Z-ci-wiring"
    )
    assert (answer.status, answer.body) == (200, response_bytes(expected))


@pytest.mark.parametrize(
    ("target", "status", "error"),
    [
        ("/instruction", 400, "missing instruction id (use /instruction?id=<instruction_id>)"),
        (
            "/instruction?other=1",
            400,
            "missing instruction id (use /instruction?id=<instruction_id>)",
        ),
        ("/instruction?id=nope", 404, "nope"),
        ("/instruction?id=", 404, ""),
        ("/instruction?id=../../etc/passwd", 404, "../../etc/passwd"),
        ("/instruction?id=a&id=nope2", 404, "nope2"),  # a repeated key keeps the last value
        (
            "/projection",
            400,
            "missing projection digest (use /projection?digest=<projection_digest>)",
        ),
        ("/projection?digest=ev1_none", 404, "ev1_none"),
        (f"/projection?digest={ALIAS}", 404, ALIAS),
        (
            f"/projection?digest={TYPED}&match=Typed",
            400,
            "invalid projection match mode (use match=typed|compatibility_alias)",
        ),
        (
            "/projection?digest=ev1_none&match=alias",
            400,
            "invalid projection match mode (use match=typed|compatibility_alias)",
        ),
        ("/nope", 404, "unknown route: /nope"),
        ("/latest/", 404, "unknown route: /latest/"),
        ("/LATEST", 404, "unknown route: /LATEST"),
    ],
)
def test_route_errors(server, target, status, error):
    answer = server.request(target)
    assert (answer.status, answer.json) == (status, {"error": error})
    assert {k: answer.headers[k] for k in CORS} == CORS


@pytest.mark.parametrize(
    "query",
    [
        f"digest={TYPED}",
        f"projection_digest={TYPED}",
        f"digest={ALIAS}&match=compatibility_alias",
        f"digest={ALIAS}&projection_match=compatibility_alias",
    ],
)
def test_projection_queries(server, project, query):
    answer = server.request(f"/projection?{query}")
    assert answer.status == 200
    assert answer.json["required"]["typedCoreProjectionDigest"] == TYPED
    assert list(answer.json) == ["decision", "delta", "projectionDigest", "required"]


def test_d21_6_percent_escapes_decode_as_utf8(server):
    from urllib.parse import quote

    answer = server.request("/instruction?id=" + quote(UNICODE_ID))
    assert (answer.status, answer.json["instructionId"]) == (200, UNICODE_ID)
    missing = server.request("/instruction?id=%E2%9C%93+x%zz")
    assert (missing.status, missing.json) == (404, {"error": "✓ x%zz"})
    assert server.request("/lat%65st").body == server.request("/latest").body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_other_methods_are_405(server, method):
    answer = server.request("/latest", method=method)
    assert (answer.status, answer.json) == (405, {"error": "method not allowed; use GET"})


def test_head_is_405_without_a_body(server):
    answer = server.request("/latest", method="HEAD")
    assert (answer.status, answer.body) == (405, b"")


def test_d21_7_options_is_a_preflight_a_browser_accepts(server):
    answer = server.request(
        "/latest",
        method="OPTIONS",
        headers={
            "Origin": "http://elsewhere.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "x-trace",
        },
    )
    assert answer.status == 204
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "GET" in answer.headers["access-control-allow-methods"]
    assert answer.headers["access-control-allow-headers"] == "x-trace"


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET\r\n\r\n",  # no target
        b"\r\n\r\n\r\n",  # blank request line
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET /latest HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    ],
)
def test_d21_5_malformed_requests_get_a_json_400_and_the_server_keeps_serving(
    server, request_bytes
):
    raw = server.raw(request_bytes)
    assert status_of(raw) == 400
    assert body_of(raw) == {"error": "bad request: malformed HTTP request"}
    assert server.request("/healthz").status == 200


def test_a_client_that_sends_nothing_is_harmless(server):
    with socket.create_connection(("127.0.0.1", server.port)):
        pass
    assert server.request("/healthz").status == 200


def test_d21_8_a_request_line_split_across_packets_is_read_whole(server):
    raw = server.raw(
        b"GET /hea", b"lthz HTTP/1.1\r\nHost: x\r\n", b"Connection: close\r\n\r\n", pause_s=0.2
    )
    assert (status_of(raw), body_of(raw)) == (200, {"ok": True})


def test_d21_8_an_idle_connection_blocks_no_one_and_times_out(server):
    idle = socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_S)
    try:
        assert server.request("/healthz").status == 200
        # answered while the idle connection still waits for its deadline (no duration taken:
        # a server serving one connection at a time would have answered it first)
        idle.setblocking(False)
        with pytest.raises(BlockingIOError):
            idle.recv(4096)
        idle.settimeout(HANG_GUARD_S)
        raw = b""
        while chunk := idle.recv(4096):  # the header deadline closes it
            raw += chunk
        assert status_of(raw) == 408
        assert body_of(raw) == {"error": "request line and headers too slow"}
    finally:
        idle.close()


def test_d21_8_a_slow_client_trickling_headers_is_cut_off(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_S) as sock:
        sock.sendall(b"GET /latest HTTP/1.1\r\n")
        trickling_until = time.monotonic() + HANG_GUARD_S  # far past the deadline and linger
        try:
            while time.monotonic() < trickling_until:
                sock.sendall(b"X-Slow: 1\r\n")
                time.sleep(0.1)
        except OSError:
            pass  # the server closed the connection under us
        assert status_of(read_all(sock)) == 408
        assert time.monotonic() < trickling_until  # cut off, not waited out


def test_a_kept_alive_connection_left_idle_closes_without_a_stray_408(server):
    """After an answer, a connection that sends nothing more is closed silently: a client may
    be sending its next request at that very moment, and would read a 408 as its answer. One
    that sends part of its next head still gets the 408."""
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    for follow_up, expected in ((b"", b""), (b"GET /lat", b"HTTP/1.1 408 ")):
        with socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_S) as sock:
            sock.sendall(request)
            first = b""
            while b'"ok": true' not in first:
                first += sock.recv(4096)
            sock.sendall(follow_up)
            rest = read_all(sock)  # closed by the server (a socket timeout would raise)
            assert rest[: len(expected)] == expected
            assert rest.startswith(b"HTTP") == bool(expected)


def read_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_d21_8_concurrent_clients_are_all_answered(server):
    failures: list[object] = []

    def client() -> None:
        for _ in range(20):
            try:
                answer = server.request("/needs-attention")
                if answer.status != 200:
                    failures.append(answer.status)
            except OSError as exc:
                failures.append(exc)

    threads = [threading.Thread(target=client) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_keep_alive_serves_several_requests_on_one_connection(server):
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    closing = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    raw = server.raw(request, request, closing)
    assert raw.count(b"HTTP/1.1 200 OK") == 3


def test_a_declared_body_over_the_limit_is_refused(server):
    raw = server.raw(b"POST /latest HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
    assert (status_of(raw), body_of(raw)) == (413, {"error": "request body too large"})


@pytest.mark.parametrize(
    "target",
    [
        "/runs/x/../../issues.jsonl",
        "/runs/..%2F..%2F.premath/issues.jsonl",
        "/runs/%2e%2e/%2e%2e/etc/passwd",
        "/dashboard/../../.premath/issues.jsonl",
        "/../../etc/passwd",
    ],
)
def test_path_traversal_reads_nothing_outside(server, target):
    raw = server.raw(
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    )
    assert status_of(raw) in (400, 404)
    assert b"root:" not in raw
    assert b"Wire the observation dashboard" not in raw


def test_d21_4_healthz_does_not_depend_on_the_surface(tmp_path):
    with observe_serve(tmp_path, "--surface", "missing.json") as running:
        assert running.request("/healthz").json == {"ok": True}
        assert running.request("/").json == INDEX
        latest = running.request("/latest")
        assert (latest.status, latest.json) == (
            500,
            {
                "error": "internal server error: failed to read observation surface: No such "
                "file or directory (os error 2)"
            },
        )


def test_a_surface_rewritten_deleted_or_replaced_while_serving(project, tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    surface = folder / "latest.json"
    good = (project / SURFACE).read_bytes()
    surface.write_bytes(good)
    with observe_serve(folder, "--surface", "latest.json") as running:
        assert running.request("/latest").status == 200
        surface.write_text('{"schema": 2}')
        broken = running.request("/latest")
        assert broken.status == 500
        assert broken.json["error"].startswith(
            "internal server error: failed to parse observation surface JSON: missing field"
        )
        document = orjson.loads(good)
        document["schema"] = 2
        surface.write_bytes(orjson.dumps(document))
        assert running.request("/latest").json == {
            "error": "internal server error: invalid observation surface: schema mismatch "
            "(expected=1, actual=2)"
        }
        surface.unlink()
        assert running.request("/needs-attention").status == 500
        surface.mkdir()
        assert running.request("/latest").json == {
            "error": "internal server error: failed to read observation surface: Is a directory "
            "(os error 21)"
        }
        surface.rmdir()
        os.mkfifo(surface)
        fifo = running.request("/latest", timeout=5)
        assert fifo.status == 500
        assert "is not a regular file (a FIFO)" in fifo.json["error"]
        surface.unlink()
        surface.write_bytes(good)
        restored = orjson.loads(good)
        expected = {"summary": restored["summary"], "latest": restored["latest"]}
        assert running.request("/latest").body == response_bytes(expected)


def test_a_huge_surface_is_refused_not_read(project, tmp_path):
    surface = tmp_path / "latest.json"
    surface.write_bytes((project / SURFACE).read_bytes())
    env = {"PREMATH_MAX_DOCUMENT_BYTES": "1024"}
    with observe_serve(tmp_path, "--surface", "latest.json", env=env) as running:
        answer = running.request("/latest")
        assert answer.status == 500
        assert "is larger than 1024 bytes" in answer.json["error"]


@pytest.mark.parametrize("bind", ["localhost:0", "[::1]:0"])
def test_d21_9_localhost_and_ipv6_loopback_binds(tmp_path, bind):
    if bind.startswith("[") and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    with observe_serve(tmp_path, "--bind", bind) as running:
        host = "127.0.0.1" if bind.startswith("localhost") else "[::1]"
        assert running.banner[1] == f"  bind: {host}:{running.port}"
        family = socket.AF_INET6 if host == "[::1]" else socket.AF_INET
        with socket.socket(family) as sock:
            sock.connect((host.strip("[]"), running.port))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            assert status_of(read_all(sock)) == 200
        assert running.stderr() == ""


def test_d21_9_a_public_bind_is_said_aloud(tmp_path):
    with observe_serve(tmp_path, "--bind", "0.0.0.0:0") as running:
        # said (and flushed) before the banner, which observe_serve has read
        assert "warning: observe-serve listens on 0.0.0.0:" in running.stderr()
        assert "reachable from other machines" in running.stderr()
        assert running.request("/dashboard", headers={"Host": "box.example"}).status == 200


def test_the_dashboard_refuses_a_foreign_host_on_loopback(server):
    answer = server.request("/dashboard", headers={"Host": "attacker.example"})
    assert (answer.status, answer.json) == (403, {"error": "host not allowed: attacker.example"})
    assert server.request("/latest", headers={"Host": "attacker.example"}).status == 200


@pytest.mark.parametrize(
    ("bind", "message"),
    [
        (
            "example.com:80",
            "invalid --bind address `example.com:80`: invalid socket address syntax",
        ),
        ("127.0.0.1", "invalid --bind address `127.0.0.1`: invalid socket address syntax"),
        ("::1:80", "invalid --bind address `::1:80`: invalid socket address syntax"),
        (
            "127.0.0.1:99999",
            "invalid --bind address `127.0.0.1:99999`: invalid socket address syntax",
        ),
    ],
)
def test_bad_binds_exit_1_with_the_reference_text(tmp_path, bind, message):
    result = run_premath("observe-serve", "--bind", bind, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, b"")
    assert result.stderr.decode() == f"error: {message}\n"


def test_a_taken_port_is_a_bind_failure(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_premath("observe-serve", "--bind", f"127.0.0.1:{port}", "--json", cwd=tmp_path)
    assert result.returncode == 1
    assert orjson.loads(result.stdout)["error"] == {
        "code": "io_error",
        "message": "observation API failed: bind failed: Address already in use (os error 98)",
    }


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signals_stop_the_server_cleanly_even_with_streams_open(project, sig):
    from tests.support.serve import EventStream

    with observe_serve(project, "--live") as running:
        streams = [EventStream(running.port) for _ in range(3)]
        assert all(stream.next_event()[0] == "snapshot" for stream in streams)
        started = time.monotonic()
        assert running.stop(sig) == 0
        assert time.monotonic() - started < 6
        for stream in streams:
            stream.close()
        assert "Traceback" not in running.stderr()
