"""The observation API and the live dashboard as a mountable Starlette piece (specs/observation.md).

`ObservationService(config)` holds everything one server needs (no globals): `routes()` and
`lifespan()` (the watcher that keeps the dashboard current) for the app that mounts it
(premath/web/app.py): `observe-serve` alone, or `mcp-serve --observe` beside `/mcp`. On a
loopback bind the dashboard routes check the Host header (DNS rebinding). Routes:

- the reference's API (observation.md §7): `/`, `/healthz`, `/latest`, `/needs-attention`
  (`/needs_attention`), `/instruction?id=`, `/projection?digest=&match=`, and ours: `/workers`
  (the fleet's worker registry, specs/remote-workers.md "Workers"); pretty JSON with sorted
  keys, `{"error": ...}` bodies, `Access-Control-Allow-Origin: *`; OPTIONS answers a CORS
  preflight (D21-7); `/` and `/healthz` never read the surface (D21-4);
- `/dashboard` (the page and its two assets), `/events` (server-sent events: a `snapshot`, then
  a `delta` whenever a watched file changes), `/runs/<id>/report` (the run's HTML report,
  rendered on request), `/runs/<id>/<path>` (files and folders of that run, as plain text),
  `/issues/<id>/why` (the issue detail's why: blockers, notes, steps, the last failure's output),
  all read-only (D21-10).
"""

from __future__ import annotations

import html
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Any

import anyio
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from premath.errors import NotFound, PremathError
from premath.observe.dashboard import Dashboard, DashboardSources
from premath.observe.runs import run_entry, run_report_html
from premath.observe.surface import ObservationSurface, SurfaceCache, SurfaceUnavailable
from premath.observe.views import (
    ObservationNotFound,
    ProjectionMatch,
    instruction_view,
    latest_view,
    needs_attention_view,
    projection_view,
)
from premath.web.app import api_json
from premath.web.auth import VIA_KEY, host_allowed
from premath.web.server import CALLER_KEY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.clock import Clock

Document = dict[str, Any]
Endpoint = Callable[[Request], Awaitable[Response]]

SERVICE = "premath.observe.v1"
ROUTES = (
    "/healthz",
    "/latest",
    "/needs-attention",
    "/instruction?id=<instruction_id>",
    "/projection?digest=<projection_digest>[&match=typed|compatibility_alias]",
)
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": PAGE_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
PLAIN_POLICY = "default-src 'none'; sandbox"
STATIC = {
    "dashboard.html": "text/html; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
}
REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""The report page carries its style inline and no script."""
LISTING_POLICY = "default-src 'none'; base-uri 'none'"


@dataclass(frozen=True)
class ObservationConfig:
    sources: DashboardSources
    clock: Clock
    poll_interval_s: float = 0.25
    """How often the watcher stats the files (changes reach pages within about this)."""
    ping_s: float = 15.0
    send_timeout_s: float = 10.0
    """A page that takes longer than this to accept one event is disconnected."""
    allowed_hosts: frozenset[str] | None = None
    """Host names the dashboard routes answer (None: any); a server on loopback sets
    LOOPBACK_HOSTS, so a web page on another origin cannot reach them by DNS rebinding."""
    command: str = "observe-serve"
    """The command serving, named in warnings."""


def _error(status: int, message: str) -> Response:
    return api_json(status, {"error": message})


def _preflight(request: Request) -> Response:
    """A CORS preflight any browser accepts for the read-only API (D21-7)."""
    headers = {
        "access-control-allow-origin": "*",
        "access-control-allow-methods": "GET, OPTIONS",
        "access-control-allow-headers": request.headers.get("access-control-request-headers", "*"),
        "access-control-max-age": "600",
    }
    return Response(status_code=204, headers=headers)


def _api(answer: Callable[[Request], Response]) -> Endpoint:
    """GET answers (in a worker thread: it may read the surface), OPTIONS is a preflight,
    anything else 405 as in the reference."""

    async def endpoint(request: Request) -> Response:
        if request.method == "OPTIONS":
            return _preflight(request)
        if request.method != "GET":
            return _error(405, "method not allowed; use GET")
        return await run_in_threadpool(answer, request)

    return endpoint


class _Hub:
    """Pages subscribed to dashboard deltas; a page too slow to keep up is dropped (its
    browser reconnects and starts again from a snapshot)."""

    def __init__(self) -> None:
        self._pages: set[MemoryObjectSendStream[tuple[int, str]]] = set()

    def subscribe(self) -> MemoryObjectReceiveStream[tuple[int, str]]:
        send, receive = anyio.create_memory_object_stream[tuple[int, str]](max_buffer_size=64)
        self._pages.add(send)
        return receive

    def publish(self, version: int, data: str) -> None:
        for page in list(self._pages):
            try:
                page.send_nowait((version, data))
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._pages.discard(page)
                page.close()

    def close(self) -> None:
        for page in self._pages:
            page.close()
        self._pages.clear()

    def __len__(self) -> int:
        return len(self._pages)


def _dumps(document: Document) -> str:
    return orjson.dumps(document).decode("utf-8")


class ObservationService:
    """One server's observation routes, watcher and dashboard state."""

    def __init__(self, config: ObservationConfig) -> None:
        self.config = config
        self.surface = SurfaceCache(config.sources.surface_path)
        self.dashboard = Dashboard(config.sources, config.clock)
        self._hub = _Hub()
        package = resources.files("premath.web") / "static"
        self._static = {name: (package / name).read_bytes() for name in STATIC}

    # --- the reference's API -------------------------------------------------------------------

    def _viewed(self, view: Callable[[ObservationSurface], Document]) -> Response:
        """A view of the surface, or the reference's 500 when it cannot be loaded."""
        try:
            return api_json(200, view(self.surface.load()))
        except SurfaceUnavailable as exc:
            return _error(500, f"internal server error: {exc.cause}")

    def _instruction(self, request: Request) -> Response:
        params = request.query_params
        key = "id" if "id" in params else "instruction_id"
        if key not in params:
            return _error(400, "missing instruction id (use /instruction?id=<instruction_id>)")
        try:
            return self._viewed(lambda s: instruction_view(s, params[key]))
        except ObservationNotFound as exc:
            return _error(404, exc.key)

    def _projection(self, request: Request) -> Response:
        params = request.query_params
        key = "digest" if "digest" in params else "projection_digest"
        if key not in params:
            return _error(
                400, "missing projection digest (use /projection?digest=<projection_digest>)"
            )
        match_key = "match" if "match" in params else "projection_match"
        match = params.get(match_key, "typed")
        if match not in ("typed", "compatibility_alias"):
            return _error(
                400, "invalid projection match mode (use match=typed|compatibility_alias)"
            )
        mode: ProjectionMatch = "compatibility_alias" if match == "compatibility_alias" else "typed"
        try:
            return self._viewed(lambda s: projection_view(s, params[key], mode))
        except ObservationNotFound as exc:
            return _error(404, exc.key)

    def _workers(self, _: Request) -> Response:
        """`/workers`: the fleet's workers now (premath/record/worker_board.py); only where
        the issues are watched (`--live`), whose folder holds the registry."""
        from premath.record.worker_board import workers_document
        from premath.record.worker_registry import registry_path

        live = self.config.sources.live
        if live is None:
            return _error(404, "no worker registry: start the server with --live")
        path, trajectory = registry_path(live.issues_path), self.config.sources.trajectory_path
        try:
            return api_json(200, workers_document(path, trajectory, self.config.clock.now()))
        except PremathError as exc:
            return _error(500, f"internal server error: {exc.message}")

    def api_routes(self) -> list[BaseRoute]:
        def index(_: Request) -> Response:
            return api_json(200, {"routes": list(ROUTES), "service": SERVICE})

        def health(_: Request) -> Response:
            return api_json(200, {"ok": True})

        answers: list[tuple[str, Callable[[Request], Response]]] = [
            ("/", index),
            ("/healthz", health),
            ("/latest", lambda _: self._viewed(latest_view)),
            ("/needs-attention", lambda _: self._viewed(needs_attention_view)),
            ("/needs_attention", lambda _: self._viewed(needs_attention_view)),
            ("/instruction", self._instruction),
            ("/projection", self._projection),
            ("/workers", self._workers),
        ]
        return [Route(path, _api(answer), methods=ALL_METHODS) for path, answer in answers]

    # --- the dashboard -------------------------------------------------------------------------

    def _host_refused(self, request: Request) -> Response | None:
        host = request.headers.get("host", "")
        if host_allowed(host, self.config.allowed_hosts):
            return None
        return _error(403, f"host not allowed: {host}")

    def _page(self, handler: Callable[[Request], Awaitable[Response]]) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            if request.method not in ("GET", "HEAD"):
                return _error(405, "method not allowed; use GET")
            refused = self._host_refused(request)
            return refused if refused is not None else await handler(request)

        return endpoint

    def _asset(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        async def asset(_: Request) -> Response:
            return Response(self._static[name], 200, PAGE_HEADERS, STATIC[name])

        return asset

    async def _events(self, request: Request) -> Response:
        caller = request.scope.get(CALLER_KEY)
        viewer = None if caller is None else {"caller": caller, "via": request.scope[VIA_KEY]}
        pages = self._hub.subscribe()
        shutdown = anyio.Event()

        async def stream() -> AsyncIterator[ServerSentEvent]:
            """The snapshot, then each newer delta; ends when the server stops (so the
            response ends cleanly) or when the hub drops this page for being too slow."""
            with pages:
                snapshot = await run_in_threadpool(self.dashboard.snapshot)
                first = {**snapshot, "viewer": viewer}  # who the page is logged in as, if anyone
                yield ServerSentEvent(_dumps(first), event="snapshot", retry=1000)
                while not shutdown.is_set():
                    update = None
                    with anyio.move_on_after(0.5):
                        try:
                            update = await pages.receive()
                        except anyio.EndOfStream:
                            return
                    if update is not None and update[0] > snapshot["version"]:
                        yield ServerSentEvent(update[1], event="delta")

        return EventSourceResponse(
            stream(),
            ping=int(self.config.ping_s),
            send_timeout=self.config.send_timeout_s,
            headers={"cache-control": "no-store", "x-content-type-options": "nosniff"},
            shutdown_event=shutdown,
            shutdown_grace_period=1.0,
        )

    async def _report(self, request: Request) -> Response:
        runs_dir = self.config.sources.runs_dir
        run_id = request.path_params["run_id"]
        if runs_dir is None:
            return _error(404, "no runs folder: start observe-serve with --live")
        try:
            page = await run_in_threadpool(run_report_html, runs_dir, run_id)
        except PremathError as exc:
            return _error(404, exc.message)
        return Response(
            page,
            200,
            {
                **PAGE_HEADERS,
                "content-security-policy": REPORT_POLICY,
            },
            "text/html; charset=utf-8",
        )

    async def _run_file(self, request: Request) -> Response:
        runs_dir = self.config.sources.runs_dir
        if runs_dir is None:
            return _error(404, "no runs folder: start observe-serve with --live")
        run_id, inner = request.path_params["run_id"], request.path_params["path"]
        try:
            entry = await run_in_threadpool(run_entry, runs_dir, run_id, inner)
        except PremathError as exc:
            return _error(404, exc.message)
        headers = {"content-security-policy": PLAIN_POLICY, "x-content-type-options": "nosniff"}
        if entry.data is not None:
            return Response(entry.data, 200, headers, "text/plain; charset=utf-8")
        items = "".join(
            f'<li><a href="{html.escape(name)}">{html.escape(name)}</a></li>'
            for name in entry.names
        )
        title = html.escape(f"{run_id}/{inner}")
        page = (
            "<!DOCTYPE html><meta charset=utf-8>"
            f"<title>{title}</title><h1>{title}</h1><ul>{items}</ul>"
        )
        return Response(
            page,
            200,
            {**headers, "content-security-policy": LISTING_POLICY},
            "text/html; charset=utf-8",
        )

    async def _issue_why(self, request: Request) -> Response:
        """`/issues/<id>/why`: what the issue detail shows (issue 30)."""
        try:
            why = await run_in_threadpool(self.dashboard.issue_why, request.path_params["issue_id"])
        except NotFound as exc:
            return _error(404, exc.message)
        except PremathError as exc:  # an unreadable store: the server's inputs, not the request
            return _error(500, exc.message)
        return api_json(200, why)

    def dashboard_routes(self) -> list[BaseRoute]:
        pages: list[tuple[str, Callable[[Request], Awaitable[Response]]]] = [
            ("/dashboard", self._asset("dashboard.html")),
            ("/dashboard/dashboard.css", self._asset("dashboard.css")),
            ("/dashboard/dashboard.js", self._asset("dashboard.js")),
            ("/events", self._events),
            ("/runs/{run_id}/report", self._report),
            ("/runs/{run_id}/{path:path}", self._run_file),
            ("/issues/{issue_id}/why", self._issue_why),
        ]
        return [Route(path, self._page(handler), methods=ALL_METHODS) for path, handler in pages]

    def routes(self) -> list[BaseRoute]:
        """Every route of this piece, for a host app (mount them at its root)."""
        return [*self.api_routes(), *self.dashboard_routes()]

    # --- the watcher ---------------------------------------------------------------------------

    def refresh(self) -> None:
        """Bring the dashboard (and, with --live, the surface) up to date now; subscribed pages
        get the change. The watcher calls it in a worker thread on its timer; a host may call
        it once before serving (no page is subscribed yet), so the first request already sees
        a built surface."""
        try:
            changed = self.dashboard.refresh()
        except Exception as exc:  # noqa: BLE001 - one bad refresh must not stop the watcher
            sys.stderr.write(
                f"warning: {self.config.command}: refresh failed: {type(exc).__name__}: {exc}\n"
            )
            return
        if changed is not None and len(self._hub):
            anyio.from_thread.run_sync(self._hub.publish, changed["version"], _dumps(changed))

    async def _watch(self) -> None:
        while True:
            await anyio.sleep(self.config.poll_interval_s)
            await anyio.to_thread.run_sync(self.refresh)

    @asynccontextmanager
    async def lifespan(self, app: object = None) -> AsyncIterator[None]:
        """Refresh once (with --live this builds the surface), then watch until shutdown."""
        del app
        await anyio.to_thread.run_sync(self.refresh)
        async with anyio.create_task_group() as group:
            group.start_soon(self._watch)
            try:
                yield
            finally:
                self._hub.close()
                group.cancel_scope.cancel()
