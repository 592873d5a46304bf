"""Drive a real headless Chromium through the DevTools protocol over a pipe (no websocket).

`--remote-debugging-pipe` makes Chromium read NUL-terminated JSON commands on fd 3 and write
replies and events on fd 4; that is all a test needs to load a page, collect its console
messages, errors and network requests, evaluate expressions and take a screenshot.
"""

import base64
import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Quiet and offline: no sync, no component or safe-browsing updates, no first-run UI.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class PageReport:
    """What a page did while loading: console messages, exceptions, log errors, requests."""

    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log_errors: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


class Browser:
    def __init__(self, process: subprocess.Popen[bytes], write_fd: int, read_fd: int) -> None:
        self.process = process
        self.write_fd = write_fd
        self.read_file = os.fdopen(read_fd, "rb")
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def _read_message(self, deadline: float) -> dict[str, Any]:
        if time.monotonic() > deadline:
            raise TimeoutError("chromium did not answer in time")
        chunks = []
        while True:
            byte = self.read_file.read(1)
            if not byte:
                raise RuntimeError("chromium closed the DevTools pipe")
            if byte == b"\0":
                break
            chunks.append(byte)
        message: dict[str, Any] = orjson.loads(b"".join(chunks))
        return message

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        self.next_id += 1
        command: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session is not None:
            command["sessionId"] = self.session
        os.write(self.write_fd, orjson.dumps(command) + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self.events.append(message)

    def wait_for(self, method: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method:
                return message
            self.events.append(message)

    def load(self, url: str, width: int, height: int) -> PageReport:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")
        self.evaluate("1")  # a round trip, so events queued during load have arrived
        report = PageReport()
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                report.console.append(params)
            elif method == "Runtime.exceptionThrown":
                report.exceptions.append(params)
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                report.log_errors.append(params["entry"])
            elif method == "Network.requestWillBeSent":
                report.requests.append(params["request"]["url"])
        return report

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        data = self.send(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
        )["data"]
        return base64.b64decode(data)


def _above_ten(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


@contextmanager
def chromium(binary: str) -> Iterator[Browser]:
    """A headless Chromium with a fresh profile, ended (and its profile removed) on exit."""
    to_child_read, to_child_write = os.pipe()
    from_child_read, from_child_write = os.pipe()
    # The child's ends move to fds >= 10 first, so moving them to 3 and 4 cannot clobber them.
    to_child_read, from_child_write = _above_ten(to_child_read), _above_ten(from_child_write)
    profile = tempfile.mkdtemp(prefix="premath-chromium-")
    # Chromium wants its pipe ends at fds 3 (commands) and 4 (answers): bash moves them there
    # (dash cannot name a descriptor above 9).
    move = (
        f'exec "$0" "$@" 3<&{to_child_read} 4>&{from_child_write} '
        f"{to_child_read}<&- {from_child_write}>&-"
    )
    process = subprocess.Popen(
        ["bash", "-c", move, binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(to_child_read, from_child_write),
        start_new_session=True,
    )
    os.close(to_child_read)
    os.close(from_child_write)
    browser = Browser(process, to_child_write, from_child_read)
    try:
        yield browser
    finally:
        os.close(to_child_write)
        browser.read_file.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(profile, ignore_errors=True)
