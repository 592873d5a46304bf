"""A real `premath observe-serve` process on an ephemeral loopback port, and ways to talk to it:
plain HTTP (http.client), raw bytes on a socket, and the dashboard's event stream."""

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

PUSH_BOUND_S = 15.0
"""A push comes a fraction of a second after the change (D21-11; the benchmarks watch that
speed); this bound is far above it, so a loaded machine passes and a push that never comes, or
waits for a slow poll, fails."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)


class ObserveServer:
    def __init__(self, process: subprocess.Popen[bytes], stderr_path: Path) -> None:
        self.process = process
        self.stderr_path = stderr_path
        self.banner = self._read_banner()
        line = next(line for line in self.banner if line.startswith("  bind: "))
        self.host, _, port = line.removeprefix("  bind: ").rpartition(":")
        self.port = int(port)

    def _read_banner(self) -> list[str]:
        assert self.process.stdout is not None
        lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            raw = self.process.stdout.readline()
            if not raw:
                raise RuntimeError(f"observe-serve exited: {self.stderr()}")
            lines.append(raw.decode().rstrip("\n"))
            if lines[-1].startswith("  dashboard: "):
                return lines
        raise TimeoutError("observe-serve printed no banner")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def request(
        self,
        path: str,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        timeout: float = 10,
    ) -> Answer:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method, path, headers=headers or {})
            response = connection.getresponse()
            body = response.read()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
        finally:
            connection.close()

    def raw(self, *chunks: bytes, pause_s: float = 0.0, timeout: float = 10) -> bytes:
        """Send `chunks` (apart by `pause_s`) on one connection; all it answers until it closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            for chunk in chunks:
                sock.sendall(chunk)
                time.sleep(pause_s)
            return read_until_closed(sock)

    def stop(self, sig: int = signal.SIGTERM, within_s: float = 15) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=within_s)


def read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def body_of(raw: bytes) -> Any:
    return orjson.loads(raw.partition(b"\r\n\r\n")[2])


@contextmanager
def observe_serve(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[ObserveServer]:
    """`premath observe-serve ARGS` in `cwd` (on `--bind 127.0.0.1:0` unless ARGS bind);
    stopped (SIGTERM) at the end."""
    bind = () if "--bind" in args else ("--bind", "127.0.0.1:0")
    stderr_path = cwd / f".observe-serve-{time.monotonic_ns()}.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "premath", "observe-serve", *bind, *args],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        server = ObserveServer(process, stderr_path)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        assert process.stdout is not None
        process.stdout.close()


class EventStream:
    """The dashboard's server-sent events, read from a raw socket."""

    def __init__(
        self, port: int, timeout: float = 10, headers: dict[str, str] | None = None
    ) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        self.sock.sendall(
            b"GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            + extra.encode()
            + b"\r\n"
        )
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head  # an HTTP/1.0 request: no chunking

    def _until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("event stream closed")
            self.buffer += chunk
        found, _, self.buffer = self.buffer.partition(marker)
        return found

    def next_event(self) -> tuple[str, Any]:
        """The next named event and its decoded data (pings and chunk sizes skipped)."""
        while True:
            block = self._until(b"\r\n\r\n").decode()
            name, data = None, []
            for line in block.split("\r\n"):
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    data.append(line.removeprefix("data: "))
            if name is not None:
                return name, orjson.loads("\n".join(data))

    def delta_with(self, key: str, within_s: float) -> Any:
        """The first `delta` event carrying `key` that arrives within `within_s`."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            name, data = self.next_event()
            if name == "delta" and key in data:
                return data
        raise AssertionError(f"no delta with {key!r} within {within_s}s")

    def close(self) -> None:
        self.sock.close()
