"""The direct path of `/mcp` for the fleet's hot request, `tools/call` (specs/mcp-http.md
"The direct path"): a request the SDK would answer with one tool result is answered here with
the same bytes and headers, without the SDK's per-request transport, dispatcher and task group,
which cost more CPU than most tool calls. The call itself runs as every call does
(`ToolCalls`: worker thread, deadline, in-flight count, access line).

Only what is plainly such a request takes this path: a known tool, a JSON-RPC 2.0 request with
an integer or string id and no member beyond `jsonrpc`, `id`, `method` and `params` (`name`,
`arguments`), a JSON content type, an Accept the SDK takes, no protocol version header or one
of the handshake versions. Anything else (initialize, tools/list, notifications, batches,
`_meta`, malformed or oversized bodies, wrong headers) goes to the SDK with its body replayed,
so its answers and refusals stay the SDK's own. The gate, the request guard and the access log
sit outside both paths, unchanged. Trade-off: the SDK's per-message OpenTelemetry span (a no-op
until an exporter is installed) is not opened for these calls; the access log names each one.
"""

from __future__ import annotations

import mcp_types as types
import orjson
from mcp.server.streamable_http import check_accept_headers
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import DEFAULT_NEGOTIATED_VERSION, methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from premath.mcp.catalogue import TOOLS_BY_NAME
from premath.mcp.server import ToolCalls
from premath.web.server import CALLER_KEY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JSON = "application/json"
_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_PARAMS_KEYS = frozenset({"name", "arguments"})


def _plain_version(scope: Scope) -> str | None:
    """The protocol version of a POST whose headers the SDK would pass without a word (see the
    module doc), else None."""
    request = Request(scope)
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith(JSON):
        return None
    if JSON not in (part.strip() for part in content_type.split(";")[0].split(",")):
        return None
    if not check_accept_headers(request)[0]:
        return None
    return version or DEFAULT_NEGOTIATED_VERSION


def tool_call(body: bytes) -> tuple[int | str, str, dict[str, Any]] | None:
    """(id, tool, arguments) of a plain `tools/call` request; None for anything else."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(message) is not dict or not message.keys() <= _REQUEST_KEYS:
        return None
    if message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
        return None
    request_id, params = message.get("id"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None  # JSON-RPC ids are integers or strings; `true` is no id
    if type(params) is not dict:
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not params.keys() <= _PARAMS_KEYS or type(arguments) is not dict:
        return None
    if type(name) is not str or name not in TOOLS_BY_NAME:
        return None
    return request_id, name, arguments


def answer_bytes(request_id: int | str, version: str, result: types.CallToolResult) -> bytes:
    """The SDK's JSON-RPC response to a `tools/call` at a handshake-era `version`, shaped by
    the SDK's own serializers (the runner's and the transport's steps for such a result)."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    shaped = methods.serialize_server_result("tools/call", version, dumped)
    response = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=shaped)
    return response.model_dump_json(by_alias=True, exclude_unset=True).encode()


async def _body(receive: Receive) -> bytes | None:
    """The whole body (the request guard has read it already); None if the client left."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


class DirectCalls:
    """`/mcp`'s POST handler: plain `tools/call` requests directly, the rest by `sdk_app`."""

    def __init__(self, calls: ToolCalls, sdk_app: ASGIApp, max_body_bytes: int) -> None:
        self.calls = calls
        self.sdk_app = sdk_app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = _plain_version(scope)
        if version is None:
            await self.sdk_app(scope, receive, send)
            return
        body = await _body(receive)
        if body is None:
            return
        call = tool_call(body) if len(body) <= self.max_body_bytes else None
        if call is None:
            await self.sdk_app(scope, _replay(body, receive), send)
            return
        request_id, name, arguments = call
        result = await self.calls.call(name, arguments, scope.get(CALLER_KEY))
        response = Response(answer_bytes(request_id, version, result), 200, {"Content-Type": JSON})
        await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    queued: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return queued.pop() if queued else await receive()

    return replay
