"""The workers' lean MCP client (premath/mcp/rpc_client.py): against premath's server it gets
the SDK client's answers; against the SDK's own stateful server (JSON or event-stream answers)
it keeps the session protocol: the session id on every request, and a forgotten session
opened again without losing the call."""

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from starlette.applications import Starlette
from starlette.routing import Route

from premath.mcp.rpc_client import PROTOCOL_VERSION, HttpAnswer, McpHttpClient
from tests.mcp.client import http_server, http_session, new_token, token_file


def test_it_asks_for_the_sdks_latest_handshake_version():
    assert PROTOCOL_VERSION == LATEST_HANDSHAKE_VERSION


def test_it_gets_the_sdk_clients_answers_from_premaths_server(workdir):
    token = new_token()
    tokens = token_file(workdir.parent, w1=token)
    calls = [
        ("init_tool", {}),
        ("issue_add", {"title": "one é \u001f", "id": "bd-1"}),
        ("issue_show", {"id": "bd-1"}),
        ("issue_show", {"id": "bd-404"}),
        ("issue_lease_renew", {"id": "bd-1", "assignee": "w1"}),
    ]
    with http_server(workdir, "--token-file", str(tokens), "--mutation-policy", "open") as server:
        client = McpHttpClient(server.url, token, timeout_s=60)
        assert client.initialize()["serverInfo"]["name"] == "premath-mcp"
        lean = [client.call_tool(name, arguments) for name, arguments in calls]
        names = client.tool_names()
        client.close()

        async def sdk() -> list[tuple[bool, str]]:
            async with http_session(server.url, token) as session:
                answers = []
                for name, arguments in calls[2:]:
                    result = await session.call_tool(name, arguments)
                    answers.append((bool(result.is_error), result.content[0].text))
                return answers

        assert lean[2:] == anyio.run(sdk)
        stranger = McpHttpClient(server.url, "x" * 40, timeout_s=60)
        with pytest.raises(HttpAnswer) as refused:
            stranger.initialize()
        stranger.close()
    assert refused.value.status == 401
    assert [error for error, _ in lean] == [False, False, False, True, True]
    assert lean[3][1] == "issue not found: bd-404"
    assert {"issue_claim_next", "issue_show", "issue_lease_finish"} <= names


def _echo_server() -> Server[Any]:
    async def on_call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = f"{params.name} {params.arguments}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("echo", version="0", on_call_tool=on_call)


@contextlib.contextmanager
def _stateful(json_response: bool) -> Iterator[tuple[str, StreamableHTTPSessionManager]]:
    """The SDK's own stateful streamable HTTP server on a loopback port, in a thread."""
    manager = StreamableHTTPSessionManager(_echo_server(), json_response=json_response)
    app = Starlette(
        routes=[Route("/mcp", StreamableHTTPASGIApp(manager))],
        lifespan=lambda app: manager.run(),
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]})
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise AssertionError("the SDK's server did not start")
            threading.Event().wait(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", manager
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()


@pytest.mark.parametrize("json_response", [True, False])
def test_it_keeps_the_session_protocol_of_a_stateful_server(json_response):
    with _stateful(json_response) as (url, manager):
        client = McpHttpClient(url, "unused", timeout_s=60)
        client.initialize()
        assert client.call_tool("a", {"n": 1}) == (False, "a {'n': 1}")
        assert len(manager._server_instances) == 1  # one session, carried by every request
        manager._server_instances.clear()  # the server forgets it (a restart, an idle reap)
        assert client.call_tool("b", {}) == (False, "b {}")
        assert len(manager._server_instances) == 1
        client.close()
