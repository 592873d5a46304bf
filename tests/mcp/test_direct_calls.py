"""The direct path of `/mcp` (premath/mcp/direct_calls.py): a plain `tools/call` is answered
with the bytes and headers the SDK's own path gives, at every handshake protocol version, for
results and tool errors alike; everything else still reaches the SDK and gets its answers."""

from datetime import UTC, datetime
from typing import Any

import anyio
import httpx2
import orjson
import pytest
from mcp.server.lowlevel import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from premath.clock import FrozenClock
from premath.mcp.access_log import AccessLog
from premath.mcp.direct_calls import tool_call
from premath.mcp.http import build_http_app
from premath.mcp.server import ToolServer, build_server, token_id_of
from premath.mcp.tools import ServerConfig, ToolService
from premath.web.tokens import parse_token_file
from tests.mcp.client import new_token

TOKEN = new_token()
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}
SEED = [
    ("issue_add", {"title": "first é \u001f / \U0001f600", "id": "bd-1"}),
    ("issue_add", {"title": "second", "id": "bd-2"}),
]
CALLS = [
    ("issue_claim_next", {"assignee": "w1"}),
    ("issue_show", {"id": "bd-1"}),
    ("issue_show", {"id": "bd-404"}),  # a tool error
    ("issue_list", {"status": "in_progress"}),
    ("issue_lease_renew", {"id": "bd-2", "assignee": "w1"}),  # refused: not held
    ("issue_ready", {}),
]


def _servers() -> tuple[ToolServer, Server[Any]]:
    """A premath server, and an SDK-only server making the very same calls."""
    clock = FrozenClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    direct = build_server(
        ToolService(ServerConfig(mutation_policy="open"), clock), "premath-mcp", "0"
    )

    async def on_call(ctx: Any, params: Any) -> Any:
        return await direct.tool_calls.call(params.name, params.arguments, token_id_of(ctx))

    return direct, Server("premath-mcp", version="0", on_call_tool=on_call)


def _answers(server: Server[Any], bodies: list[bytes], headers: dict[str, str]) -> list[Any]:
    app = build_http_app(server, parse_token_file("t", f"w1 {TOKEN}\n"), log=AccessLog(None))

    async def scenario() -> list[Any]:
        async with app.router.lifespan_context(app):
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://t") as client:
                answers = []
                for body in bodies:
                    response = await client.post("/mcp", content=body, headers=headers)
                    answers.append(
                        (
                            int(response.status_code),
                            response.headers.multi_items(),
                            response.content,
                        )
                    )
                return answers

    return anyio.run(scenario)


def _bodies(request_id: int | str = 7) -> list[bytes]:
    return [
        orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        for name, arguments in [("init_tool", {}), *SEED, *CALLS]
    ]


@pytest.mark.parametrize("version", [None, *HANDSHAKE_PROTOCOL_VERSIONS])
@pytest.mark.parametrize("request_id", [7, "call-7"])
def test_the_direct_path_answers_as_the_sdk_does(workdir, version, request_id):
    headers = HEADERS if version is None else {**HEADERS, "mcp-protocol-version": version}
    direct, plain = _servers()
    (workdir / "a").mkdir()
    (workdir / "b").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workdir / "a")
        ours = _answers(direct, _bodies(request_id), headers)
        patch.chdir(workdir / "b")
        sdks = _answers(plain, _bodies(request_id), headers)
    assert ours == sdks
    errors = [orjson.loads(body)["result"]["isError"] for _, _, body in ours]
    assert errors == [False, False, False, False, False, True, False, True, False]


def test_a_plain_tool_call_never_enters_the_sdk(workdir):
    """Without the SDK's session manager running (no lifespan), the SDK cannot answer at all;
    the direct path still does, and the rest still goes to the SDK (a 500)."""
    direct, _ = _servers()
    app = build_http_app(direct, parse_token_file("t", f"w1 {TOKEN}\n"), log=AccessLog(None))

    async def scenario() -> list[int]:
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx2.AsyncClient(transport=transport, base_url="http://t") as client:
            bodies = [_bodies()[0], orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})]
            return [
                (await client.post("/mcp", content=body, headers=HEADERS)).status_code
                for body in bodies
            ]

    assert anyio.run(scenario) == [200, 500]


READY = {"name": "issue_ready", "arguments": {}}
PLAIN = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": READY}


@pytest.mark.parametrize(
    "message",
    [
        {**PLAIN, "method": "tools/list"},
        {key: value for key, value in PLAIN.items() if key != "id"},
        {**PLAIN, "id": True},
        {**PLAIN, "id": 1.5},
        {**PLAIN, "id": None},
        {**PLAIN, "jsonrpc": "1.0"},
        {**PLAIN, "params": {"name": "issue_ready"}},
        {**PLAIN, "params": {"name": "nope", "arguments": {}}},
        {**PLAIN, "params": {"name": "issue_ready", "arguments": []}},
        {**PLAIN, "params": {**READY, "_meta": {}}},
        {**PLAIN, "x": 1},
        [PLAIN],
    ],
)
def test_anything_but_a_plain_tool_call_is_left_to_the_sdk(message):
    assert tool_call(orjson.dumps(PLAIN)) == (1, "issue_ready", {})
    assert tool_call(orjson.dumps(message)) is None


def test_refusals_stay_the_sdks(workdir):
    """Wrong headers and bodies: the same status, headers and bytes by both servers."""
    requests = [
        ({**HEADERS, "Accept": "text/event-stream"}, _bodies()[0]),
        ({**HEADERS, "Content-Type": "text/plain"}, _bodies()[0]),
        ({**HEADERS, "mcp-protocol-version": "1999-01-01"}, _bodies()[0]),
        (HEADERS, b"{not json"),
        (HEADERS, orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "nope/nope"})),
    ]
    direct, plain = _servers()
    ours = [_answers(direct, [body], headers)[0] for headers, body in requests]
    sdks = [_answers(plain, [body], headers)[0] for headers, body in requests]
    assert ours == sdks
    assert [status for status, _, _ in ours] == [406, 400, 400, 400, 200]
