"""`premath mcp-serve --transport streamable-http`: the MCP tools over the official SDK's
streamable HTTP transport at `/mcp`, behind bearer tokens (specs/mcp-http.md), on premath's one
HTTP server (premath/web/server.py). With `--observe` the same process serves the observation
API and the live dashboard beside `/mcp` (premath/web/observation.py), so one process on the
coordinator's host serves agents and people alike: agents with bearer tokens, people in a
browser through a one-time login link and a session cookie that can only read.

`build_http_app` is the one ASGI app: `/mcp` (stateless streamable HTTP, JSON responses, POST
only), an unauthenticated `/healthz`, and any extra Starlette routes mounted beside them, all
behind the access log, the gate (premath/web/auth.py: tokens everywhere, cookies for reads
never on `/mcp`) and the request guard (premath/web/app.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from premath.clock import SystemClock
from premath.errors import InvalidUsage
from premath.mcp.access_log import AccessLog
from premath.mcp.direct_calls import DirectCalls
from premath.mcp.server import CallLimits, InFlight, ToolServer, build_server
from premath.mcp.tools import ServerConfig, ToolService
from premath.store.documents import os_error_text
from premath.web.app import Lifespan, http_app
from premath.web.auth import Access, people_access
from premath.web.serve import ObservationOptions
from premath.web.server import (
    CALLER_KEY,
    BindAddress,
    Listening,
    ServerLimits,
    TlsFiles,
    bind_socket,
    exposure_warning,
    send_error,
    serve,
)
from premath.web.tokens import TokenSet

MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
MCP_LIMITS = ServerLimits(
    client_timeout_s=15.0,
    max_body_bytes=4 * 1024 * 1024,
    max_connections=4096,
    shutdown_grace_s=35,
)
"""The defaults of `mcp-serve`'s HTTP flags (specs/mcp-http.md "Limits")."""


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


class McpEndpoint:
    """POST only (a stateless server never sends on a GET stream, which would stay open idle);
    the gate's caller becomes the SDK's `AuthenticatedUser`, which the tool access lines name.
    `post` takes the POSTs: the direct path for premath's own tools, else the SDK."""

    def __init__(self, post: ASGIApp) -> None:
        self.post = post

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await send_error(send, 405, "method not allowed; use POST", ((b"allow", b"POST"),))
            return
        caller = scope.get(CALLER_KEY)
        if caller is not None:
            scope["user"] = AuthenticatedUser(
                AccessToken(token=caller, client_id=caller, scopes=[])
            )
            scope["auth"] = AuthCredentials([])
        await self.post(scope, receive, send)


def build_http_app(
    server: Server[Any],
    tokens: TokenSet,
    *,
    log: AccessLog,
    limits: ServerLimits | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    extra_lifespans: Sequence[Lifespan] = (),
    access: Access | None = None,
) -> Starlette:
    """The ASGI app of one server: `/mcp`, `/healthz` and `extra_routes` (with their
    lifespans), all behind the access log, the request guard and (but `/healthz`) the gate:
    `tokens`, or `access` when people log in too (the observation routes).

    The MCP endpoint is stateless with JSON responses: every call is one POST that carries its
    own token, no session outlives a request, so a client survives a server restart and
    shutdown never waits on an idle stream. A `ToolServer`'s plain `tools/call` POSTs take the
    direct path (premath/mcp/direct_calls.py), answered as the SDK answers them."""
    limits = limits or MCP_LIMITS
    manager = StreamableHTTPSessionManager(
        server, json_response=True, stateless=True, max_request_body_size=limits.max_body_bytes
    )
    post: ASGIApp = StreamableHTTPASGIApp(manager)
    if isinstance(server, ToolServer):
        post = DirectCalls(server.tool_calls, post, limits.max_body_bytes)
    routes: list[BaseRoute] = [
        Route(HEALTH_PATH, _healthz, methods=["GET", "HEAD"]),
        Route(MCP_PATH, McpEndpoint(post)),
        *extra_routes,
    ]
    return http_app(
        routes,
        limits,
        lifespans=[lambda app: manager.run(), *extra_lifespans],
        access=access or mcp_access(tokens),
        log=log,
    )


def mcp_access(tokens: TokenSet) -> Access:
    """Bearer tokens only: agents, no browser."""
    return Access(
        tokens, public_paths=frozenset({HEALTH_PATH}), bearer_only_paths=frozenset({MCP_PATH})
    )


def serve_http(
    config: ServerConfig,
    name: str,
    version: str,
    *,
    bind: BindAddress,
    tokens: TokenSet,
    limits: CallLimits,
    server_limits: ServerLimits,
    log: AccessLog,
    tls: TlsFiles | None = None,
    observation: ObservationOptions | None = None,
    public_url: str | None = None,
) -> None:
    """Serve the tools (and with `observation` the observation API and dashboard) over HTTP
    until SIGTERM/SIGINT; then finish the requests in flight and wait for every tool call still
    running (its write completes) before exiting. Login links start with `public_url`
    (`--public-url`), else the bound address."""
    in_flight = InFlight()
    clock = SystemClock()
    # One token is one trust domain: its holder may act as any worker (worker_identity.py).
    service = ToolService(replace(config, single_token=len(tokens.entries) == 1), clock)
    server = build_server(service, name, version, limits=limits, log=log, in_flight=in_flight)
    try:
        sock = bind_socket(bind, backlog=min(server_limits.max_connections, 4096))
    except OSError as exc:
        raise InvalidUsage(f"cannot listen on {bind.display()}: {os_error_text(exc)}") from None
    listening = Listening(bind, sock.getsockname()[1], tls)
    base = listening.base
    lines = [
        f"  listening: {base}{MCP_PATH}",
        f"  health: {base}{HEALTH_PATH}",
        f"  tokens: {len(tokens.entries)} from {tokens.source}",
    ]
    access = None
    extra_routes: list[BaseRoute] = []
    extra_lifespans: list[Lifespan] = []
    if observation is not None:
        piece = observation.service(clock, bind, "mcp-serve")
        extra_routes, extra_lifespans = piece.routes(), [piece.lifespan]
        access, login = people_access(
            tokens,
            "mcp-serve",
            listening,
            public_paths=frozenset({HEALTH_PATH}),
            bearer_only_paths=frozenset({MCP_PATH}),
            public_url=public_url,
        )
        lines += [f"  dashboard: {base}/dashboard", login]
    app = build_http_app(
        server,
        tokens,
        log=log,
        limits=server_limits,
        extra_routes=extra_routes,
        extra_lifespans=extra_lifespans,
        access=access,
    )
    warning = exposure_warning("mcp-serve", listening, authenticated=True)
    if warning:
        lines.append(warning)
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
    serve(app, sock, server_limits, name="mcp-serve", tls=tls)
    if not in_flight.wait_idle(limits.run_timeout_s):
        sys.stderr.write("premath mcp-serve: stopped with tool calls still running\n")
    sys.stderr.write("premath mcp-serve: stopped\n")
    sys.stderr.flush()
    os._exit(0)
