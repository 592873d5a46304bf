"""Serve an ASGI app with uvicorn, hardened for clients nobody vetted (specs/observation.md
"Server"). Any premath HTTP face runs through `serve`.

- **Binding**: `parse_bind` takes `IP:port`, `[IPv6]:port` and `localhost:PORT` (loopback);
  no other host name. The socket is bound before anything is announced, so `:0` reports the
  port it got, and `BindAddress.loopback` tells the caller to warn about a public bind.
- **Slow and idle clients**: each request's line and headers must arrive within
  `header_timeout_s` of the connection opening or the previous response ending, else the
  connection gets a 408 and is closed; idle keep-alive connections close after
  `keep_alive_s`. The event loop serves every connection at once, so an idle one never
  blocks another.
- **Limits**: request line and headers at most `max_header_bytes` (larger: 400), a declared
  body over `max_body_bytes` is refused with 413 before the app runs, at most
  `max_connections` connections and requests at once (more: 503).
- **Malformed requests** get a JSON 400 (`{"error": "bad request: ..."}`) instead of uvicorn's
  plain text, with the CORS header, so a browser client can read it.
- **Shutdown**: SIGINT or SIGTERM stops accepting, lets running requests finish for
  `shutdown_grace_s`, then cancels what is left (streams end at once) and returns.
"""

import asyncio
import contextlib
import ipaddress
import resource
import signal
import socket
import threading
from collections.abc import Awaitable, Callable, Generator, MutableMapping
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from premath.errors import InputInvalid

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


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


@dataclass(frozen=True)
class ServerLimits:
    header_timeout_s: float = 10.0
    keep_alive_s: int = 5
    max_header_bytes: int = 16 * 1024
    max_body_bytes: int = 1 << 20
    max_connections: int = 16_384
    shutdown_grace_s: int = 3


def _json_response(status: int, reason: str, message: str) -> bytes:
    body = ('{\n  "error": "' + message + '"\n}').encode("ascii")
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\naccess-control-allow-origin: *\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's line and headers and
    JSON error answers. `header_timeout_s` is set on a subclass per server (`_protocol`)."""

    header_timeout_s = 10.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._header_deadline: asyncio.TimerHandle | None = None
        self._timed_cycle: object = None
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm_header_deadline()

    def _arm_header_deadline(self) -> None:
        self._cancel_header_deadline()
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._too_slow)

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _too_slow(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            with contextlib.suppress(RuntimeError, OSError):
                self.transport.write(
                    _json_response(408, "Request Timeout", "request line and headers too slow")
                )
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and self.cycle is not self._timed_cycle:
            self._timed_cycle = self.cycle  # a whole request line and headers arrived
            self._cancel_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start a pipelined request already received
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._timed_cycle = self.cycle  # that request's headers are in: no deadline
            return
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        del msg  # uvicorn's text names no cause a client can act on
        with contextlib.suppress(RuntimeError, OSError):
            self.transport.write(
                _json_response(400, "Bad Request", "bad request: malformed HTTP request")
            )
        self.transport.close()


def _protocol(limits: ServerLimits) -> type[GuardedH11Protocol]:
    return type(
        "ServerProtocol", (GuardedH11Protocol,), {"header_timeout_s": limits.header_timeout_s}
    )


def body_limit(app: ASGIApp, max_body_bytes: int) -> ASGIApp:
    """Refuse (413) a request whose declared body is larger than `max_body_bytes`, and stop
    reading one that grows past it."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and (not value.isdigit() or int(value) > max_body_bytes):
                body = b'{\n  "error": "request body too large"\n}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 413,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"access-control-allow-origin", b"*"),
                            (b"connection", b"close"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > max_body_bytes:
                return {"type": "http.disconnect"}
            return message

        await app(scope, counted, send)

    return guarded


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by SIGINT/SIGTERM without re-raising the signal afterwards
    (the command then returns normally, exit 0)."""

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


def _raise_open_file_limit() -> None:
    """Many clients need many descriptors: lift the soft limit to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def serve(app: ASGIApp, sock: socket.socket, limits: ServerLimits = ServerLimits()) -> None:
    """Run `app` (with its lifespan) on the bound `sock` until SIGINT or SIGTERM."""
    _raise_open_file_limit()
    config = uvicorn.Config(
        body_limit(app, limits.max_body_bytes),
        http=_protocol(limits),
        ws="none",
        lifespan="on",
        log_config=None,
        log_level="error",
        access_log=False,
        server_header=False,
        date_header=False,
        timeout_keep_alive=limits.keep_alive_s,
        timeout_graceful_shutdown=limits.shutdown_grace_s,
        limit_concurrency=limits.max_connections,
        h11_max_incomplete_event_size=limits.max_header_bytes,
    )
    server = _Server(config)
    asyncio.run(server.serve(sockets=[sock]))
