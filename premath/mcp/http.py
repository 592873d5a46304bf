"""`premath mcp-serve --transport streamable-http`: the MCP tools over the official SDK's
streamable HTTP transport at `/mcp`, behind bearer-token authentication (specs/mcp-http.md).

`build_http_app` is the one ASGI app: `/mcp` (stateless streamable HTTP, JSON responses), an
unauthenticated `/healthz`, and any extra Starlette routes a caller mounts beside them (the
observation routes and dashboard), all behind the same middleware, outermost first:
- `AccessLogMiddleware`: one structured line per request (method, path, status, caller's token
  id, duration); never a header or a body;
- `TokenAuth`: every request but `/healthz` carries `Authorization: Bearer <token>` (401 with
  `WWW-Authenticate` otherwise, even for unknown paths, before any body is read); the caller
  becomes the SDK's `AuthenticatedUser` named by the token's id;
- `RequestGuard`: bodies over `max_body_bytes` are answered 413, a body that does not arrive
  within `body_timeout_s` 408, and a response the client will not read is dropped after
  `send_timeout_s`.

`run_uvicorn` is the one function that starts uvicorn; its HTTP protocol closes a connection
whose request head does not arrive within `head_timeout_s` (uvicorn alone waits forever for a
client that connects and sends nothing, or one byte at a time).
"""

import os
import resource
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from premath.clock import SystemClock
from premath.errors import InvalidUsage
from premath.mcp.access_log import AccessLog
from premath.mcp.server import CallLimits, InFlight, build_server
from premath.mcp.tokens import TokenSet
from premath.mcp.tools import ServerConfig, ToolService

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
PUBLIC_PATHS = frozenset({HEALTH_PATH})
CALLER_KEY = "premath.caller"
REALM = "premath"


@dataclass(frozen=True)
class HttpLimits:
    """What one client may cost the server (specs/mcp-http.md "Limits")."""

    max_body_bytes: int = 4 * 1024 * 1024
    head_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    send_timeout_s: float = 60.0
    keep_alive_s: int = 5
    max_connections: int = 4096
    shutdown_grace_s: float = 30.0


@dataclass(frozen=True)
class Bind:
    """`--bind HOST:PORT` (`[::1]:8765` for IPv6; port 0 picks a free one)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> "Bind":
        host, sep, port = text.strip().rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not sep or not host or not port.isdigit() or int(port) > 65535:
            raise InvalidUsage(f"--bind must be HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
        return cls(host, int(port))

    @property
    def loopback(self) -> bool:
        import ipaddress

        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def url(self, port: int, scheme: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{port}"


async def _send_plain(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class TokenAuth:
    """Refuse every request without a configured bearer token (but `/healthz`); make the caller
    the SDK's `AuthenticatedUser` named by the token id. The token itself is kept nowhere."""

    def __init__(self, app: ASGIApp, tokens: TokenSet) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization")
        if header is None or header[:7].lower() != "bearer ":
            await self._refuse(send, None, "send Authorization: Bearer <token>")
            return
        token_id = self.tokens.identify(header[7:].strip())
        if token_id is None:
            await self._refuse(
                send, "invalid_token", "the bearer token is not one of this server's"
            )
            return
        scope[CALLER_KEY] = token_id
        scope["user"] = AuthenticatedUser(
            AccessToken(token=token_id, client_id=token_id, scopes=[])
        )
        scope["auth"] = AuthCredentials([])
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(send: Send, error: str | None, description: str) -> None:
        """401 as RFC 6750 words it: no error code when no token was sent."""
        challenge = f'Bearer realm="{REALM}"'
        if error is not None:
            challenge += f', error="{error}", error_description="{description}"'
        body = b'{"error": "%s", "error_description": "%s"}' % (
            (error or "unauthorized").encode(),
            description.encode(),
        )
        await _send_plain(send, 401, body, [(b"www-authenticate", challenge.encode())])


class RequestGuard:
    """Bodies are read whole, within a size cap (413) and a time limit (408), before the app
    runs; a response send that the client does not take within the limit ends the request."""

    def __init__(self, app: ASGIApp, limits: HttpLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.max_body_bytes
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _too_large(send, limit)
            return
        body = bytearray()
        trailing: list[Message] = []
        with anyio.move_on_after(self.limits.body_timeout_s) as reading:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    trailing.append(message)
                    break
                body.extend(message.get("body", b""))
                if len(body) > limit:
                    await _too_large(send, limit)
                    return
                if not message.get("more_body", False):
                    break
        if reading.cancelled_caught:
            await _send_plain(
                send,
                408,
                b'{"error": "request body not received in time"}',
                [(b"connection", b"close")],
            )
            return
        queued: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]
        queued.extend(trailing)

        async def replay() -> Message:
            return queued.pop(0) if queued else await receive()

        async def bounded_send(message: Message) -> None:
            with anyio.fail_after(self.limits.send_timeout_s):
                await send(message)

        await self.app(scope, replay, bounded_send)


async def _too_large(send: Send, limit: int) -> None:
    body = b'{"error": "request body larger than %d bytes"}' % limit
    await _send_plain(send, 413, body, [(b"connection", b"close")])


class AccessLogMiddleware:
    """One `http` access line per request, written when the response has been sent."""

    def __init__(self, app: ASGIApp, log: AccessLog) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status: list[int] = []

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            client = scope.get("client")
            self.log.write(
                "http",
                method=scope["method"],
                path=scope["path"],
                status=status[0] if status else None,
                caller=scope.get(CALLER_KEY),
                client=f"{client[0]}:{client[1]}" if client else None,
                durationMs=round((time.monotonic() - started) * 1000, 3),
            )


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def build_http_app(
    server: Server[Any],
    tokens: TokenSet,
    *,
    log: AccessLog,
    limits: HttpLimits | None = None,
    extra_routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The ASGI app of one server: `/mcp`, `/healthz` and `extra_routes`, all behind the access
    log, the request guard and (but `/healthz`) the bearer tokens.

    The MCP endpoint is stateless with JSON responses: every call is one POST that carries its
    own token, no session outlives a request, so a client survives a server restart and
    shutdown never waits on an idle stream."""
    limits = limits or HttpLimits()
    manager = StreamableHTTPSessionManager(
        server, json_response=True, stateless=True, max_request_body_size=limits.max_body_bytes
    )
    routes: list[BaseRoute] = [
        Route(HEALTH_PATH, _healthz, methods=["GET", "HEAD"]),
        # POST only: a stateless server never sends on a GET stream, which would stay open idle
        Route(MCP_PATH, StreamableHTTPASGIApp(manager), methods=["POST"]),
        *extra_routes,
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(AccessLogMiddleware, log=log),
            Middleware(TokenAuth, tokens=tokens),  # before any body is read
            Middleware(RequestGuard, limits=limits),
        ],
        lifespan=lambda app: manager.run(),
    )


def bind_socket(bind: Bind) -> socket.socket:
    """The listening socket, bound before the banner so port 0 can print its real port."""
    family = socket.AF_INET6 if ":" in bind.host else socket.AF_INET
    try:
        info = socket.getaddrinfo(bind.host, bind.port, family, socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
    except OSError as exc:
        raise InvalidUsage(
            f"cannot listen on {bind.host}:{bind.port}: {exc.strerror or exc}"
        ) from None
    sock.set_inheritable(True)
    return sock


def _head_timeout_protocol(head_timeout_s: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose next request head takes longer than
    `head_timeout_s` to arrive (counted from the connection, or the end of the last response),
    with TCP_NODELAY on (asyncio leaves it off on sockets accepted from a socket we bound)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadTimeoutProtocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                # headers and body leave in two writes: without this, Nagle holds the body
                # until the client's delayed ACK (40 ms a call on a kept-alive connection)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._head_timer: Any = None
            self._arm()

        def _arm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(head_timeout_s, self._too_slow)

        def _too_slow(self) -> None:
            """No request in progress (none yet, or the last one answered): the next head is
            late. A request being served is never cut by this timer."""
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and not self.transport.is_closing():
                self.transport.close()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            super().connection_lost(exc)

    return HeadTimeoutProtocol


def _raise_open_file_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def run_uvicorn(
    app: ASGIApp,
    sock: socket.socket,
    limits: HttpLimits,
    tls: tuple[str, str] | None = None,
) -> None:
    """Serve `app` on `sock` until SIGTERM or SIGINT, then finish the requests in flight (up
    to `shutdown_grace_s`). The one place uvicorn is configured."""
    import logging

    import uvicorn

    _raise_open_file_limit(limits.max_connections + 256)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("premath mcp-serve: %(message)s"))
    logging.getLogger("uvicorn.error").addHandler(handler)
    logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    config = uvicorn.Config(
        app,
        http=_head_timeout_protocol(limits.head_timeout_s),
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_keep_alive=limits.keep_alive_s,
        timeout_graceful_shutdown=int(limits.shutdown_grace_s),
        limit_concurrency=limits.max_connections,
        backlog=min(limits.max_connections, 4096),
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    _graceful_server_class()(config).run(sockets=[sock])


def _graceful_server_class() -> type:
    import contextlib
    import signal
    import threading
    from collections.abc import Iterator

    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn's server, except that a SIGTERM/SIGINT it has handled (a graceful stop) is
        not raised again afterwards: the caller still waits for tool calls in flight."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            signals = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in signals}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return GracefulServer


def serve_http(
    config: ServerConfig,
    name: str,
    version: str,
    *,
    bind: Bind,
    tokens: TokenSet,
    limits: CallLimits,
    http_limits: HttpLimits,
    log: AccessLog,
    tls: tuple[str, str] | None = None,
) -> None:
    """Serve the tools over streamable HTTP until SIGTERM/SIGINT; then finish the requests in
    flight and wait for every tool call still running (its write completes) before exiting."""
    in_flight = InFlight()
    service = ToolService(config, SystemClock())
    server = build_server(service, name, version, limits=limits, log=log, in_flight=in_flight)
    app = build_http_app(server, tokens, log=log, limits=http_limits)
    sock = bind_socket(bind)
    base = bind.url(sock.getsockname()[1], "https" if tls else "http")
    sys.stderr.write(
        f"  listening: {base}{MCP_PATH}\n  health: {base}{HEALTH_PATH}\n"
        f"  tokens: {len(tokens.entries)} from {tokens.source}\n"
    )
    sys.stderr.flush()
    run_uvicorn(app, sock, http_limits, tls)
    if not in_flight.wait_idle(limits.run_timeout_s):
        sys.stderr.write("premath mcp-serve: stopped with tool calls still running\n")
    sys.stderr.write("premath mcp-serve: stopped\n")
    sys.stderr.flush()
    os._exit(0)
