"""A lean MCP client over streamable HTTP, for the fleet's workers (`McpAuthority`): each
JSON-RPC request is one plain POST (orjson) on a kept-alive connection (the stdlib's
http.client), with the session protocol of streamable HTTP (specs/mcp-http.md "Connecting a
client"): `initialize` first, then `notifications/initialized`; the `Mcp-Session-Id` the server
gives (a stateful server; ours is stateless and gives none) and the negotiated
`MCP-Protocol-Version` are sent on every later request, and a 404 to a session the server has
forgotten opens a new one. Answers may be JSON or a `text/event-stream`.

The SDK's client (premath/mcp/http_client.py) spends more CPU per call than the server's whole
tool call, on the same cores as the fleet's server; this client spends a few hundred
microseconds. Synchronous, and safe to share between threads (a connection per call in flight).
"""

from __future__ import annotations

import http.client
import itertools
import threading
import time
from urllib.parse import urlsplit

import orjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL_VERSION = "2025-11-25"
"""The handshake-era version we ask for (the SDK's latest; a test keeps them equal)."""
CLIENT_INFO = {"name": "premath-worker", "version": "1"}
IDLE_REUSE_S = 2.0
"""A connection idle longer than this is not reused: the server closes idle keep-alive
connections (after 5 s by default), and a request sent on one being closed may be lost."""


class HttpAnswer(Exception):
    """The server answered, but not with a JSON-RPC response (a 401, a 404, a 5xx, an HTML
    page): `status` and the start of the body say what."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
        self.status = status
        self.body = body


class RpcError(Exception):
    """A JSON-RPC error response: the server refused the request itself."""

    def __init__(self, code: object, message: object) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code


class McpHttpClient:
    """One MCP session with the server at `url` (`http[s]://HOST:PORT/mcp`), carrying
    `Authorization: Bearer <token>`; `timeout_s` bounds each request."""

    def __init__(self, url: str, token: str, *, timeout_s: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._timeout_s = timeout_s
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        self._session_id: str | None = None
        self._lock = threading.Lock()
        self._idle: list[tuple[float, http.client.HTTPConnection]] = []
        self._ids = itertools.count(1)

    # --- the session ------------------------------------------------------------------------------

    def initialize(self) -> dict[str, Any]:
        """Open the session: its `initialize` result."""
        self._session_id = None
        self._headers.pop("MCP-Protocol-Version", None)
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        }
        result = self._request("initialize", params)
        version = result.get("protocolVersion")
        if isinstance(version, str):
            self._headers["MCP-Protocol-Version"] = version
        self._notify("notifications/initialized")
        return result

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request; a session the server forgot is opened again once."""
        try:
            return self._request(method, params)
        except HttpAnswer as answer:
            if answer.status != 404 or self._session_id is None:
                raise
        self.initialize()  # a 404 to a session: the request was not served
        return self._request(method, params)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(is_error, text of the first content block) of one tool call."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        content = result.get("content") or [{}]
        return bool(result.get("isError")), str(content[0].get("text", ""))

    def tool_names(self) -> set[str]:
        """The names `tools/list` gives (every page)."""
        names: set[str] = set()
        params: dict[str, Any] = {}
        while True:
            result = self.request("tools/list", params)
            names |= {str(tool.get("name")) for tool in result.get("tools", [])}
            cursor = result.get("nextCursor")
            if not cursor:
                return names
            params = {"cursor": cursor}

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for _, connection in idle:
            connection.close()

    # --- the wire ---------------------------------------------------------------------------------

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        status, content_type, session_id, body = self._post(orjson.dumps(message))
        if status != 200:
            raise HttpAnswer(status, body)
        if session_id is not None and method == "initialize":
            self._session_id = session_id
        answer = _response(body, content_type, request_id)
        if answer is None:
            raise HttpAnswer(status, body)
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise RpcError(error.get("code"), error.get("message"))
        result = answer.get("result")
        if not isinstance(result, dict) or answer.get("id") != request_id:
            raise HttpAnswer(status, body)
        return result

    def _notify(self, method: str) -> None:
        status, _, _, body = self._post(orjson.dumps({"jsonrpc": "2.0", "method": method}))
        if status not in (200, 202):
            raise HttpAnswer(status, body)

    def _post(self, body: bytes) -> tuple[int, str, str | None, bytes]:
        """(status, content type, session id, body) of one POST on a kept-alive connection;
        a connection that failed is closed, never reused."""
        headers = self._headers
        if self._session_id is not None:
            headers = {**headers, "Mcp-Session-Id": self._session_id}
        connection = self._connection()
        try:
            connection.request("POST", self._target, body, headers)
            response = connection.getresponse()
            data = response.read()
        except BaseException:
            connection.close()
            raise
        if response.will_close:
            connection.close()
        else:
            with self._lock:
                self._idle.append((time.monotonic(), connection))
        return (
            response.status,
            response.getheader("content-type", ""),
            response.getheader("mcp-session-id"),
            data,
        )

    def _connection(self) -> http.client.HTTPConnection:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                since, connection = self._idle.pop()
                if now - since < IDLE_REUSE_S:
                    return connection
                connection.close()
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout_s)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout_s)


def _response(body: bytes, content_type: str, request_id: int) -> dict[str, Any] | None:
    """The JSON-RPC response to `request_id` in a JSON or event-stream body; None if none."""
    if content_type.startswith("text/event-stream"):
        for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = b"\n".join(
                line[5:].removeprefix(b" ")
                for line in event.split(b"\n")
                if line.startswith(b"data:")
            )
            answer = _parsed(data)
            if answer is not None and answer.get("id") == request_id:
                return answer
        return None
    return _parsed(body)


def _parsed(data: bytes) -> dict[str, Any] | None:
    try:
        answer = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(answer, dict) or ("result" not in answer and "error" not in answer):
        return None
    return answer
