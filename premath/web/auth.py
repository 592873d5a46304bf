"""Who may call what on a premath HTTP server (specs/mcp-http.md "Tokens", "People: browser
login").

`Gate` is the ASGI layer in front of every route but the public ones:
- `Authorization: Bearer <token>` of a configured token, on any path: the caller is the token's
  id;
- else, when browser sessions are on, the session cookie, for GET and HEAD only and never on a
  bearer-only path (`/mcp`, `/login/code`): a cookie reads the dashboard and its API, it never
  drives a tool or mints a login, so a page on another site cannot act through a logged-in
  browser (the cookie is SameSite=Strict besides); an event stream ends with its session;
- public paths, and OPTIONS (a CORS preflight never carries credentials; the routes answer it
  with no data), pass without a caller, so the request guard behind gives them no body but a
  login form's few bytes (premath/web/server.py `RequestGuard`).
Anything else gets 401: JSON with `WWW-Authenticate: Bearer` as RFC 6750 words it, or, for a
browser asking for a page, the login page. The caller's id goes into the scope (`CALLER_KEY`)
for the access log and the faces; no token, code or cookie value is kept or logged.

`Login` serves `/login` (the one-time link, and a form taking a token), `/logout` and
`/login/code` (a new one-time link, for a bearer token).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import anyio
from starlette.datastructures import Headers
from starlette.requests import Request, cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from premath.web.login_page import PAGE_HEADERS, login_page, opening_page
from premath.web.server import CALLER_KEY, Listening
from premath.web.sessions import (
    CODE_TTL_S,
    CONSOLE_CALLER,
    SESSION_TTL_S,
    BrowserSessions,
    Session,
)
from premath.web.tokens import TokenSet

VIA_KEY = "premath.via"
"""Scope key: `bearer` or `session`, how the caller was recognised."""
Via = Literal["bearer", "session"]
REALM = "premath"
LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"
CODE_PATH = "/login/code"
COOKIE_PREFIX = "premath_session_"
SAFE_METHODS = frozenset({"GET", "HEAD"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""The Host names pages answer on a loopback bind, so a page of another origin cannot reach
them by DNS rebinding."""


def host_allowed(host: str, allowed: frozenset[str] | None) -> bool:
    """Whether a `Host` header names one of `allowed` (None: any), port aside."""
    if allowed is None:
        return True
    name = host.rpartition(":")[0] if host.rpartition(":")[2].isdigit() else host
    return name.strip("[]") in allowed


@dataclass(frozen=True)
class Access:
    """A server's authentication: its tokens and, for people, browser sessions."""

    tokens: TokenSet
    command: str = "mcp-serve"
    """The command serving, named on the login page."""
    port: int = 0
    """The bound port names the cookie: browsers send a host's cookies to all its ports."""
    sessions: BrowserSessions | None = None
    """Browser sessions on: the login routes are public, the cookie reads."""
    public_paths: frozenset[str] = frozenset()
    bearer_only_paths: frozenset[str] = frozenset()
    """Paths a cookie never authorises (besides `/login/code` and every non-read)."""
    allowed_hosts: frozenset[str] | None = None
    """Host names the login pages answer (None: any), as the dashboard's (DNS rebinding)."""
    public_base: str = ""
    """`scheme://host[:port]` login links start with: `--public-url`, else the bound address;
    never the request's Host, which any client writes."""

    def is_public(self, path: str) -> bool:
        login = self.sessions is not None and path in (LOGIN_PATH, LOGOUT_PATH)
        return login or path in self.public_paths

    def cookie_may(self, scope: Scope) -> bool:
        """A session cookie may authorise this request: a read, not on a bearer-only path."""
        path = scope["path"]
        return (
            scope["method"] in SAFE_METHODS
            and path != CODE_PATH
            and path not in self.bearer_only_paths
        )

    def cookie_name(self, scope: Scope) -> str:
        """`__Host-` (Secure, whole host, no Domain) where the request came over TLS."""
        secure = "__Host-" if scope.get("scheme") == "https" else ""
        return f"{secure}{COOKIE_PREFIX}{self.port}"

    def session_id(self, scope: Scope) -> str | None:
        cookies = cookie_parser(Headers(scope=scope).get("cookie", ""))
        return cookies.get(self.cookie_name(scope))


def _until_session_ends(receive: Receive, sessions: BrowserSessions, session: Session) -> Receive:
    """`receive` that reports a disconnect once the session expires or logs out, so an open
    event stream ends with its session."""

    async def bounded() -> Message:
        taken: list[Message] = []
        async with anyio.create_task_group() as group:

            async def take() -> None:
                taken.append(await receive())
                group.cancel_scope.cancel()

            group.start_soon(take)
            with anyio.move_on_after(sessions.remaining_s(session)):
                await session.ended.wait()
            group.cancel_scope.cancel()
        return taken[0] if taken else {"type": "http.disconnect"}

    return bounded


class Gate:
    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        access = self.access
        path = scope.get("path", "")
        if scope["type"] != "http" or scope["method"] == "OPTIONS" or access.is_public(path):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        header = headers.get("authorization")
        if header is not None:
            bearer = header[:7].lower() == "bearer "
            token_id = access.tokens.identify(header[7:].strip()) if bearer else None
            if token_id is None:
                await self._refuse(scope, headers, send, invalid=bearer)
                return
            self._admit(scope, token_id, "bearer")
            await self.app(scope, receive, send)
            return
        session = self._session(scope)
        if session is not None and access.sessions is not None:
            self._admit(scope, session.caller, "session")
            await self.app(scope, _until_session_ends(receive, access.sessions, session), send)
            return
        await self._refuse(scope, headers, send, invalid=False)

    @staticmethod
    def _admit(scope: Scope, caller: str, via: Via) -> None:
        scope[CALLER_KEY] = caller
        scope[VIA_KEY] = via

    def _session(self, scope: Scope) -> Session | None:
        access = self.access
        if access.sessions is None or not access.cookie_may(scope):
            return None
        session_id = access.session_id(scope)
        return None if session_id is None else access.sessions.find(session_id)

    async def _refuse(self, scope: Scope, headers: Headers, send: Send, *, invalid: bool) -> None:
        """401 as RFC 6750 words it (no error code when no token was sent); a browser asking
        for a page gets the login page."""
        challenge = f'Bearer realm="{REALM}"'
        if invalid:
            description = "the bearer token is not one of this server's"
            challenge += f', error="invalid_token", error_description="{description}"'
            body = {"error": "invalid_token", "error_description": description}
        else:
            description = "send Authorization: Bearer <token>"
            body = {"error": "unauthorized", "error_description": description}
        response: Response
        wants_page = scope["method"] == "GET" and "text/html" in headers.get("accept", "")
        if wants_page and self.access.sessions is not None:
            response = HTMLResponse(
                login_page(self.access.command, "Log in to see this page."),
                401,
                {**PAGE_HEADERS, "www-authenticate": challenge},
            )
        else:
            response = JSONResponse(body, 401, {"www-authenticate": challenge})
        await response(scope, _no_receive, send)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def _cross_site(request: Request) -> bool:
    """A form post from another site (the browser says so in Sec-Fetch-Site). Proxies pass
    that header through unchanged, unlike Host and Origin, which they may rewrite."""
    return request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none")


Endpoint = Callable[[Request], Awaitable[Response]]


class Login:
    """The login routes of a server whose `access` has browser sessions."""

    def __init__(self, access: Access) -> None:
        assert access.sessions is not None
        self.access = access
        self.sessions = access.sessions

    def routes(self) -> list[BaseRoute]:
        return [
            Route(LOGIN_PATH, self._guarded(self._login), methods=["GET", "HEAD", "POST"]),
            Route(LOGOUT_PATH, self._guarded(self._logout), methods=["POST"]),
            Route(CODE_PATH, self._mint, methods=["POST"]),
        ]

    def _guarded(self, handler: Endpoint) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            host = request.headers.get("host", "")
            if not host_allowed(host, self.access.allowed_hosts):
                return JSONResponse({"error": f"host not allowed: {host}"}, 403)
            if request.method == "POST" and _cross_site(request):
                return JSONResponse({"error": "cross-site form posts are refused"}, 403)
            return await handler(request)

        return endpoint

    def _page(self, status: int, notice: str | None = None) -> Response:
        return HTMLResponse(login_page(self.access.command, notice), status, PAGE_HEADERS)

    def _cookie(self, request: Request, response: Response, session_id: str | None) -> None:
        """Set the session cookie (None: delete it): HttpOnly, SameSite=Strict, the whole
        host, Secure over TLS."""
        name = self.access.cookie_name(request.scope)
        secure = request.url.scheme == "https"
        if session_id is None:
            response.delete_cookie(name, secure=secure, httponly=True, samesite="strict")
            return
        max_age = int(SESSION_TTL_S)
        response.set_cookie(
            name, session_id, max_age, secure=secure, httponly=True, samesite="strict"
        )

    def _logged_in(self, request: Request, caller: str, response: Response) -> Response:
        request.scope[CALLER_KEY] = caller  # the access line names who logged in
        self._cookie(request, response, self.sessions.open(caller))
        return response

    async def _login(self, request: Request) -> Response:
        if request.method == "POST":
            fields = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))
            token = (fields.get("token") or [""])[-1].strip()
            caller = self.access.tokens.identify(token) if token else None
            if caller is None:
                return self._page(401, "That is not one of this server's tokens.")
            return self._logged_in(request, caller, RedirectResponse("/dashboard", 303))
        code = request.query_params.get("code")
        if code is None or request.method == "HEAD":  # a HEAD (a link checker) spends nothing
            return self._page(200)
        caller = self.sessions.redeem(code)
        if caller is None:
            return self._page(401, "This login link has been used or has expired.")
        opening = HTMLResponse(opening_page(), 200, PAGE_HEADERS)
        return self._logged_in(request, caller, opening)

    async def _logout(self, request: Request) -> Response:
        session_id = self.access.session_id(request.scope)
        if session_id is not None:
            self.sessions.close(session_id)
        response = RedirectResponse(LOGIN_PATH, 303, PAGE_HEADERS)
        self._cookie(request, response, None)
        return response

    async def _mint(self, request: Request) -> Response:
        """A new one-time login link for the bearer token's holder (the gate lets only a
        bearer token here)."""
        code = self.sessions.mint_code(request.scope[CALLER_KEY])
        url = f"{self.access.public_base}{LOGIN_PATH}?code={code}"
        return JSONResponse(
            {"url": url, "expiresInSeconds": int(CODE_TTL_S)},
            headers={"cache-control": "no-store"},
        )


def people_access(
    tokens: TokenSet,
    command: str,
    listening: Listening,
    public_paths: frozenset[str],
    bearer_only_paths: frozenset[str] = frozenset(),
    public_url: str | None = None,
) -> tuple[Access, str]:
    """Tokens and browser sessions for a server that people use too, and the banner's line
    with the one-time login link (on `public_url`, `--public-url`, when given)."""
    base = public_url or listening.base
    sessions = BrowserSessions()
    access = Access(
        tokens,
        command=command,
        port=listening.port,
        sessions=sessions,
        public_paths=public_paths,
        bearer_only_paths=bearer_only_paths,
        allowed_hosts=LOOPBACK_HOSTS if listening.bind.loopback else None,
        public_base=base,
    )
    login = f"{base}{LOGIN_PATH}"
    code = sessions.mint_code(CONSOLE_CALLER)
    minutes = round(CODE_TTL_S / 60)
    return access, (
        f"  login: {login}?code={code} (opens the dashboard in a browser; works once, within "
        f"{minutes} minutes; then log in at {login} with a token)"
    )
