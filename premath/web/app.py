"""How every premath HTTP app is assembled, so both servers (`observe-serve`, `mcp-serve
--transport streamable-http`) stack the same layers in the same order. Outermost first:

1. the access log, when the server keeps one (one line a request: method, path without its
   query, status, caller's token id, client, duration; never a header or a body);
2. the gate (premath/web/auth.py), when the server has tokens; its login routes are mounted
   too when it takes browser sessions;
3. the request guard (premath/web/server.py): bodies capped (a login form's few bytes for
   anyone, more only for a caller the gate recognised), timed and complete, slow readers
   dropped;
then the routes, where unknown paths and methods get JSON 404 and 405, and an exception a JSON
500 (its access line says 500). The pieces' lifespans
(the MCP session manager, the observation watcher) run together.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from premath.store.canonical import response_bytes
from premath.web.auth import LOGIN_PATH, Access, Gate, Login
from premath.web.server import CALLER_KEY, RequestGuard, ServerLimits, error_body

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]
API_HEADERS = {"access-control-allow-origin": "*", "access-control-allow-methods": "GET"}


class RequestLog(Protocol):
    def write(self, event: str, **fields: Any) -> None: ...


def api_json(status: int, document: Any) -> Response:
    """A JSON answer as the observation API writes them: keys sorted, 2-space indent, CORS."""
    return Response(response_bytes(document), status, API_HEADERS, "application/json")


def not_found(request: Request, exc: Exception) -> Response:
    """JSON 404/405 for paths and methods no route takes."""
    if isinstance(exc, HTTPException) and exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "GET")
        hint = "GET" if "GET" in allowed else allowed  # the reference's words for its routes
        return api_json(405, {"error": f"method not allowed; use {hint}"})
    return api_json(404, {"error": f"unknown route: {request.url.path}"})


def internal_error(request: Request, exc: Exception) -> Response:
    """JSON 500 for a failure no route expected (uvicorn logs its traceback)."""
    return Response(error_body("internal error"), 500, API_HEADERS, "application/json")


class AccessLogMiddleware:
    """One `http` access line per request, written when the response has been sent."""

    def __init__(self, app: ASGIApp, log: RequestLog) -> None:
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
        except Exception:
            status.append(500)  # what the outermost layer answers
            raise
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


def _together(lifespans: Sequence[Lifespan]) -> Lifespan:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for each in lifespans:
                await stack.enter_async_context(each(app))
            yield

    return lifespan


def http_app(
    routes: Sequence[BaseRoute],
    limits: ServerLimits,
    *,
    lifespans: Sequence[Lifespan] = (),
    access: Access | None = None,
    log: RequestLog | None = None,
) -> Starlette:
    """The app of one server: `routes` (plus the login routes when `access` has browser
    sessions) behind the access log, the gate and the request guard."""
    middleware = []
    if log is not None:
        middleware.append(Middleware(AccessLogMiddleware, log=log))
    login: list[BaseRoute] = []
    if access is not None:
        middleware.append(Middleware(Gate, access=access))
        if access.sessions is not None:
            login = Login(access).routes()
    form_paths = frozenset({LOGIN_PATH}) if login else frozenset()
    middleware.append(Middleware(RequestGuard, limits=limits, form_paths=form_paths))
    app = Starlette(
        routes=[*login, *routes],
        middleware=middleware,
        lifespan=_together(lifespans),
        exception_handlers={404: not_found, 405: not_found, Exception: internal_error},
    )
    app.router.redirect_slashes = False  # exact paths: `/latest/` is not `/latest` (D21-6)
    return app
