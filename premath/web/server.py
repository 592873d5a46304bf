"""The one HTTP server of every premath face: `observe-serve` and `mcp-serve --transport
streamable-http` both run through `serve` (specs/observation.md "Server", specs/mcp-http.md
"Limits"). uvicorn on h11, hardened for clients nobody vetted:

- **Binding**: `parse_bind` takes `IP:port`, `[IPv6]:port` and `localhost:PORT` (loopback);
  no other host name. The socket is bound before anything is announced, so `:0` reports the
  port it got, and `BindAddress.loopback` tells the caller to say a public bind aloud
  (`exposure_warning`).
- **Slow and idle clients** (`GuardedH11Protocol`): each request's line and headers must arrive
  within `client_timeout_s` of the connection opening or the previous response ending, else the
  connection gets a JSON 408 and is closed (a kept-alive connection that sent nothing since its
  last answer is closed without one: the client may be sending its next request on it at that
  very moment, and would take the 408 for that request's answer). Idle keep-alive connections
  close after `keep_alive_s`. The event loop serves every connection at once, so an idle one
  never blocks another. Accepted sockets get TCP_NODELAY (a response's head and body leave in
  two writes; without it Nagle holds the body back until the client's delayed ACK).
- **Limits**: request line and headers at most `max_header_bytes`, however the client splits
  them into packets (larger: 431); a body is read whole before the app runs, within
  `max_body_bytes` for a caller the gate recognised, `form_body_bytes` on the login form for
  anyone, and nothing on GET, HEAD and OPTIONS (413), and within `client_timeout_s` (408)
  (`RequestGuard`); a body that ends before its declared length or chunked terminator (the
  client closed) is never passed on (400); a path with a control character is refused (400); a
  response the client does not take within `send_timeout_s` ends its request; at most
  `max_connections` connections and requests at once (more: 503).
- **Malformed requests** get a JSON 400 instead of uvicorn's plain text. Every answer of the
  guard is `{"error": ...}` with the CORS header, so a browser page can read it, and is
  followed by a lingering close: the server half-closes and drops what the client still sends
  for `LINGER_S`, so a client still writing (a slow head dripping in, a refused body) reads the
  refusal instead of a reset that would discard it.
- **TLS**: `tls_files` checks a certificate and key pair before anything is announced.
- **Shutdown**: SIGINT or SIGTERM stops accepting, lets running requests finish for
  `shutdown_grace_s`, then cancels what is left (event streams end at once) and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
import resource
import signal
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Generator
from dataclasses import dataclass
from types import FrameType

import anyio
import h11
import orjson
import uvicorn
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from premath.errors import InputInvalid, InvalidUsage

CALLER_KEY = "premath.caller"
"""Scope key: the caller's token id (or the console's), set by the gate (premath/web/auth.py)
on a request it recognised. The request guard gives a body room only to such a caller."""
TRUSTED_PROXIES = "127.0.0.1,::1"
"""`X-Forwarded-For`/`-Proto` are honoured from these only: a TLS reverse proxy on the same
host (the documented set-up) then shows the real client and scheme (Secure cookies)."""


@dataclass(frozen=True)
class BindAddress:
    host: str
    """An IP literal (IPv6 without brackets)."""
    port: int

    @property
    def family(self) -> socket.AddressFamily:
        return socket.AF_INET6 if ":" in self.host else socket.AF_INET

    @property
    def loopback(self) -> bool:
        return ipaddress.ip_address(self.host).is_loopback

    def display(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port if port is None else port}"


def parse_bind(text: str) -> BindAddress:
    """`IP:port`, `[IPv6]:port` or `localhost:PORT` (127.0.0.1); InputInvalid otherwise, worded
    as the reference's `invalid --bind address` error."""

    def refused(reason: str) -> InputInvalid:
        return InputInvalid(f"invalid --bind address `{text}`: {reason}")

    host, colon, port_text = text.rpartition(":")
    if not colon or not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
        raise refused("invalid socket address syntax")
    port = int(port_text)
    if port > 65535:
        raise refused("invalid socket address syntax")
    if host == "localhost":
        return BindAddress("127.0.0.1", port)
    bracketed = host.startswith("[") and host.endswith("]")
    literal = host[1:-1] if bracketed else host
    try:
        address = ipaddress.ip_address(literal)
    except ValueError:
        raise refused("invalid socket address syntax") from None
    if (address.version == 6) != bracketed or "%" in literal:
        raise refused("invalid socket address syntax")
    return BindAddress(str(address), port)


def bind_socket(bind: BindAddress, backlog: int = 4096) -> socket.socket:
    """A listening socket on `bind` (OSError when the address is taken or not ours)."""
    sock = socket.socket(bind.family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if bind.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((bind.host, bind.port))
        sock.listen(backlog)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


_NETLOC = re.compile(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")


def parse_public_url(text: str | None) -> str | None:
    """`--public-url`: `http[s]://HOST[:PORT]`, where people reach the server (a TLS proxy's
    address, a machine name for a wildcard bind); login links start with it. InvalidUsage
    for anything with a path, query, user or odd host."""
    if text is None:
        return None
    parts = urllib.parse.urlsplit(text)
    if (
        parts.scheme not in ("http", "https")
        or not _NETLOC.fullmatch(parts.netloc)
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise InvalidUsage(
            "--public-url must be http://HOST[:PORT] or https://HOST[:PORT], without a path "
            f"(e.g. https://coordinator.example), got {text!r}"
        )
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class TlsFiles:
    cert: str
    key: str


def tls_files(cert: str | None, key: str | None) -> TlsFiles | None:
    """`--tls-cert`/`--tls-key`: both or neither, and a pair that loads (InvalidUsage
    otherwise), checked before the server announces itself."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise InvalidUsage("--tls-cert and --tls-key go together")
    import ssl

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidUsage(
            f"cannot serve TLS with --tls-cert {cert} and --tls-key {key}: {reason}"
        ) from None
    return TlsFiles(cert, key)


@dataclass(frozen=True)
class Listening:
    """Where a bound server answers."""

    bind: BindAddress
    port: int
    """The port actually taken (`:0` binds any free one)."""
    tls: TlsFiles | None = None

    @property
    def address(self) -> str:
        return self.bind.display(self.port)

    @property
    def base(self) -> str:
        """`http[s]://host:port`, what the banner's URLs start with."""
        return f"{'https' if self.tls else 'http'}://{self.address}"


def exposure_warning(command: str, listening: Listening, *, authenticated: bool) -> str | None:
    """What to say on stderr about a bind that is not loopback (None: nothing to warn of)."""
    if listening.bind.loopback:
        return None
    lead = f"warning: {command} listens on {listening.address}, reachable from other machines"
    if not authenticated:
        return (
            f"{lead}; it has no authentication and serves issue titles, leases and run files "
            "to anyone who can connect (bind 127.0.0.1 to keep it local, or give --token-file)"
        )
    if listening.tls is None:
        return (
            f"{lead}, over plain HTTP: bearer tokens and session cookies cross the network in "
            "clear text; use --tls-cert/--tls-key or a TLS reverse proxy"
        )
    return None


@dataclass(frozen=True)
class ServerLimits:
    """What one client may cost a server."""

    client_timeout_s: float = 10.0
    """A request's line and headers, and then its body, must each arrive within this."""
    keep_alive_s: int = 5
    max_header_bytes: int = 16 * 1024
    max_body_bytes: int = 1 << 20
    """For a caller the gate recognised (a token, a session)."""
    form_body_bytes: int = 8 * 1024
    """For anyone, on `form_paths`: the few bytes of the login form (a pasted token)."""
    max_connections: int = 16_384
    send_timeout_s: float = 60.0
    """A response message the client does not take within this ends its request."""
    shutdown_grace_s: int = 3
    """After SIGINT/SIGTERM, running requests get this long before they are cancelled."""


def error_body(message: str) -> bytes:
    """`{"error": message}` as the guard and the observation API write it."""
    return orjson.dumps({"error": message}, option=orjson.OPT_INDENT_2)


def _raw_error(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, for the protocol's own refusals."""
    body = error_body(message)
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\naccess-control-allow-origin: *\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


INCOMPLETE_BODY = "bad request: the body ended before its declared length or chunked terminator"
LINGER_S = 2.0
"""How long a refused connection's late bytes are read and dropped before it is closed."""


class _CycleTransport:
    """The transport as a request's cycle sees it. A cycle closes the connection after an
    answer that refuses the request's body (413, 408): the client may still be sending that
    body, so the close lingers (`GuardedH11Protocol.close_lingering`) instead of resetting the
    connection, which would discard the answer before the client reads it."""

    def __init__(self, protocol: GuardedH11Protocol) -> None:
        self._protocol = protocol

    def __getattr__(self, name: str) -> object:
        return getattr(self._protocol.transport, name)

    def close(self) -> None:
        if self._protocol.conn.their_state is h11.SEND_BODY:
            self._protocol.close_lingering()
        else:
            self._protocol.transport.close()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's line and headers, a head
    cap whatever the packets, JSON refusals, lingering closes and TCP_NODELAY.
    `client_timeout_s` and `max_header_bytes` are set on a subclass per server (`_protocol`)."""

    client_timeout_s = 10.0
    max_header_bytes = 16 * 1024

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._head_deadline: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._timed_cycle: object = None
        self._answered = False
        super().connection_made(transport)  # type: ignore[arg-type]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._arm_head_deadline()

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(self.client_timeout_s, self._too_slow)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _too_slow(self) -> None:
        """No request is being served (none yet, or the last one answered) and the next head
        is late. A request being served is never cut by this timer."""
        self._head_deadline = None
        if self.transport.is_closing() or self._linger is not None:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return
        if not self._answered or self.conn.trailing_data[0]:
            self._refuse(_raw_error(408, "Request Timeout", "request line and headers too slow"))
        else:
            self.transport.close()

    def _refuse(self, answer: bytes) -> None:
        """Send the guard's own answer, then close without a reset: half-close and drop what
        the client still sends for `LINGER_S` (closing with its bytes unread would reset the
        connection, and the client would lose the answer before reading it)."""
        with contextlib.suppress(RuntimeError, OSError):
            self.transport.write(answer)
        self.close_lingering()

    def close_lingering(self) -> None:
        """Half-close now, drop what still arrives, close after LINGER_S."""
        if self._linger is not None:
            return
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        with contextlib.suppress(RuntimeError, OSError):
            self.transport.write_eof()
        self._linger = self.loop.call_later(LINGER_S, self.transport.close)

    def data_received(self, data: bytes) -> None:
        if self._linger is not None:
            return  # refused: its late bytes are dropped until it closes or the linger ends
        if self._head_too_large(data):
            message = f"request line and headers over {self.max_header_bytes} bytes"
            self._refuse(_raw_error(431, "Request Header Fields Too Large", message))
            return
        super().data_received(data)
        if self.cycle is not None and self.cycle is not self._timed_cycle:
            self._timed_cycle = self.cycle  # a whole request line and headers arrived
            self._cancel_head_deadline()

    def _head_too_large(self, data: bytes) -> bool:
        """Whether the request head being received is over the cap. h11's own cap sees only a
        head still incomplete after a read, so one write of 100 KB would pass it."""
        if self.conn.their_state not in (h11.IDLE, h11.DONE):
            return False  # body bytes, or a connection already ending
        pending = self.conn.trailing_data[0]  # the head's bytes not yet parsed
        if len(pending) + len(data) <= self.max_header_bytes:
            return False
        window = (pending + data)[: self.max_header_bytes + 4]
        return b"\r\n\r\n" not in window and b"\n\n" not in window

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not isinstance(self.cycle.transport, _CycleTransport):
            self.cycle.transport = _CycleTransport(self)  # type: ignore[assignment]

    def eof_received(self) -> None:
        """The client half-closed. In the middle of a body its request can never complete:
        answer 400 and end the request as disconnected, so nothing acts on the part that came
        (the transport then closes, as it does on any end of input)."""
        cycle = self.cycle
        if (
            cycle is not None
            and not cycle.response_started
            and self.conn.their_state is h11.SEND_BODY
            and self._linger is None
        ):
            with contextlib.suppress(RuntimeError, OSError):
                self.transport.write(_raw_error(400, "Bad Request", INCOMPLETE_BODY))
            cycle.disconnected = True
            cycle.message_event.set()

    def on_response_complete(self) -> None:
        self._answered = True
        super().on_response_complete()  # may start a pipelined request already received
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._timed_cycle = self.cycle  # that request's head is in: no deadline
            return
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        del msg  # uvicorn's text names no cause a client can act on
        self._refuse(_raw_error(400, "Bad Request", "bad request: malformed HTTP request"))


def _protocol(limits: ServerLimits) -> type[GuardedH11Protocol]:
    return type(
        "ServerProtocol",
        (GuardedH11Protocol,),
        {
            "client_timeout_s": limits.client_timeout_s,
            "max_header_bytes": limits.max_header_bytes,
        },
    )


async def send_error(
    send: Send, status: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    """`{"error": message}` with the CORS header, from ASGI code."""
    body = error_body(message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"access-control-allow-origin", b"*"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


_CLOSE = ((b"connection", b"close"),)


BODILESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


class RequestGuard:
    """Bodies are read whole, within a size cap (413) and a time limit (408), before the app
    runs; one that never completes (the client closed first) is answered 400 and never passed
    on; a response message the client does not take within the limit ends the request.

    Mount it inside any authentication: the cap is `max_body_bytes` only for a caller the gate
    recognised (CALLER_KEY). Anyone else (an OPTIONS, `/healthz`, the login pages, a server
    without tokens) may send `form_body_bytes` on `form_paths` and no body elsewhere, so an
    unknown client never makes the server hold more than a login form. GET, HEAD and OPTIONS
    take no body from anyone. A path with a control character (`%00`) is refused: no route
    names one, and a file system call would fail on it."""

    def __init__(
        self, app: ASGIApp, limits: ServerLimits, form_paths: frozenset[str] = frozenset()
    ) -> None:
        self.app = app
        self.limits = limits
        self.form_paths = form_paths

    def body_limit(self, scope: Scope) -> int:
        if scope["method"] in BODILESS_METHODS:
            return 0
        if scope.get(CALLER_KEY) is not None:
            return self.limits.max_body_bytes
        return self.limits.form_body_bytes if scope["path"] in self.form_paths else 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _CONTROL_CHARACTER.search(scope["path"]):
            await send_error(send, 400, "bad request: a control character in the path")
            return
        limit = self.body_limit(scope)
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await send_error(send, 413, "request body too large", _CLOSE)
            return
        body = bytearray()
        with anyio.move_on_after(self.limits.client_timeout_s) as reading:
            while True:
                message = await receive()
                if message["type"] != "http.request":  # the client left before the end
                    await send_error(send, 400, INCOMPLETE_BODY, _CLOSE)
                    return
                body.extend(message.get("body", b""))
                if len(body) > limit:
                    await send_error(send, 413, "request body too large", _CLOSE)
                    return
                if not message.get("more_body", False):
                    break
        if reading.cancelled_caught:
            await send_error(send, 408, "request body not received in time", _CLOSE)
            return
        queued: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

        async def replay() -> Message:
            return queued.pop(0) if queued else await receive()

        async def bounded_send(message: Message) -> None:
            with anyio.fail_after(self.limits.send_timeout_s):
                await send(message)

        await self.app(scope, replay, bounded_send)


REPEATED_SIGNAL_S = 1.0
"""A second stop signal within this of the first is the same stop: Ctrl-C under a task runner
(`mise run`) reaches the server twice, from the terminal and forwarded. A later SIGINT forces
the exit (uvicorn's rule), without waiting for running requests."""


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by SIGINT/SIGTERM without re-raising the signal afterwards
    (the command then returns normally, exit 0)."""

    _stopping_since: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        now = time.monotonic()
        if self._stopping_since is not None and now - self._stopping_since < REPEATED_SIGNAL_S:
            return
        self._stopping_since = self._stopping_since or now
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
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


def _raise_open_file_limit(wanted: int) -> None:
    """Many clients need many descriptors: lift the soft limit towards `wanted`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def _not_cancelled(record: logging.LogRecord) -> bool:
    """A task cancelled by a forced exit is no error worth a traceback."""
    return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


def _log_to_stderr(name: str) -> None:
    """uvicorn's own warnings and errors (never an access line) on stderr, named."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"premath {name}: %(message)s"))
    handler.addFilter(_not_cancelled)
    logger = logging.getLogger("uvicorn.error")
    logger.handlers = [handler]
    logger.propagate = False


def serve(
    app: ASGIApp,
    sock: socket.socket,
    limits: ServerLimits,
    *,
    name: str,
    tls: TlsFiles | None = None,
) -> None:
    """Run `app` (with its lifespan) on the bound `sock` until SIGINT or SIGTERM; `name` (the
    command) prefixes the server's own log lines."""
    _raise_open_file_limit(limits.max_connections + 256)
    _log_to_stderr(name)
    config = uvicorn.Config(
        app,
        http=_protocol(limits),
        ws="none",
        lifespan="on",
        log_config=None,
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=True,
        forwarded_allow_ips=TRUSTED_PROXIES,
        timeout_keep_alive=limits.keep_alive_s,
        timeout_graceful_shutdown=limits.shutdown_grace_s,
        limit_concurrency=limits.max_connections,
        backlog=min(limits.max_connections, 4096),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        ssl_certfile=tls.cert if tls else None,
        ssl_keyfile=tls.key if tls else None,
    )
    _Server(config).run(sockets=[sock])
