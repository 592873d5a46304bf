"""A remote worker's presence at its MCP authority (specs/remote-workers.md "Workers"): it
registers when the loop starts, heartbeats its phase (at once when it changes, and every
`heartbeat_s` seconds on a thread of its own), and deregisters with the loop's stop reason.

Reports never stop the work: a beat waits for an unreachable server at most one interval, and
the first beat that gets through after a lost one registers the worker again (the authority
may have restarted); so does a beat that finds the connection was made again since the worker
registered (an outage the beat's own retries, or another call of the worker's, got over: the
restarted authority still reads the worker as running from its registry file); a server that
no longer knows the worker (`worker.not_registered`) gets a new registration too; a beat the
server answered `stored: false` (over its rate) is sent again a second later with the state of
then. Only a refused identity stops the worker, before it claims anything: its token may not
act as its worker id (premath/mcp/worker_identity.py).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable

from premath import __version__
from premath.clock import SystemClock
from premath.errors import AuthorityRefused, AuthorityUnreachable, PremathError
from premath.mcp.remote import McpAuthority, ToolError
from premath.mcp.worker_tools import IDENTITY_REFUSED
from premath.record.worker_registry import NOT_REGISTERED, Phase
from premath.timefmt import format_seconds_z

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from premath.clock import Clock

Report = Callable[[str], None]
RESEND_S = 1.1
"""After a beat the server did not store (its rate limit) or a refused one, the next one goes
this much later."""
DEREGISTER_PATIENCE_S = 5.0


class McpPresence:
    """The `Presence` (premath/harness/presence.py) of worker `worker_id` at `authority`."""

    def __init__(
        self,
        authority: McpAuthority,
        worker_id: str,
        *,
        node: str = "",
        heartbeat_s: float = 10.0,
        report: Report = lambda _line: None,
        clock: Clock | None = None,
    ) -> None:
        self.authority = authority
        self.worker_id = worker_id
        self.heartbeat_s = max(1.0, heartbeat_s)
        self._report = report
        self._registration = {
            "workerId": worker_id,
            "host": socket.gethostname(),
            "node": node,
            "pid": os.getpid(),
            "premathVersion": __version__,
            "startedAt": format_seconds_z((clock or SystemClock()).now()),
            "heartbeatSeconds": max(1, round(self.heartbeat_s)),
        }
        self._state: dict[str, Any] = {"phase": "idle"}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._enabled = False
        self._lost = False
        self._registered_on = 0
        """The authority's `sessions_opened` when the worker last registered."""

    # --- Presence -------------------------------------------------------------------------------

    def start(self) -> None:
        self._enabled = self._register(first=True)
        if not self._enabled:
            return
        self._thread = threading.Thread(
            target=self._beats, name=f"premath-presence-{self.worker_id}", daemon=True
        )
        self._thread.start()

    def phase(
        self,
        phase: Phase,
        issue_id: str | None = None,
        attempt: int | None = None,
        max_attempts: int | None = None,
    ) -> None:
        state = {"phase": phase, "issueId": issue_id, "attempt": attempt}
        state["maxAttempts"] = max_attempts
        with self._lock:
            if state == self._state:
                return
            self._state = state
        self._wake.set()

    def stop(self, reason: str) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self.heartbeat_s + DEREGISTER_PATIENCE_S)
        if not self._enabled:
            return
        args = {"workerId": self.worker_id, "reason": reason}
        try:
            done = self.authority.call_within(
                "harness_worker_deregister", args, patience_s=DEREGISTER_PATIENCE_S
            )
        except (ToolError, PremathError) as exc:
            done = None
            self._report(f"[worker:{self.worker_id}] could not deregister: {_text(exc)}")
        if done is not None:
            self._report(f"[worker:{self.worker_id}] deregistered ({reason})")

    # --- the reports ----------------------------------------------------------------------------

    def _register(self, *, first: bool) -> bool:
        """Register; False when the server has no registry (an older premath). A refused
        identity raises AuthorityRefused on the first registration."""
        try:
            done = self.authority.call_within(
                "harness_worker_register", self._registration, patience_s=self.heartbeat_s
            )
        except ToolError as error:
            if error.text.startswith(f"[failureClass={IDENTITY_REFUSED}]") and first:
                raise AuthorityRefused(
                    f"the MCP server refused to register worker {self.worker_id}: {error.text}"
                ) from None
            if error.text.startswith("Unknown tool"):
                self._report(
                    f"[worker:{self.worker_id}] the MCP server keeps no worker registry (an "
                    "older premath): this worker is not shown there"
                )
                return False
            if not error.text.startswith("[failureClass=worker.rate_limited]"):
                self._report(f"[worker:{self.worker_id}] registration refused: {error.text}")
            return first
        if done is None:
            self._lost = True
            return True
        self._lost = False
        self._registered_on = self.authority.sessions_opened
        again = "" if first else " again"
        self._report(
            f"[worker:{self.worker_id}] registered{again} with the authority (heartbeat every "
            f"{self.heartbeat_s:g} s)"
        )
        return True

    def _beats(self) -> None:
        wait_s = self.heartbeat_s
        while not self._stopping.is_set():
            self._wake.wait(wait_s)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                landed = self._beat()
            except AuthorityUnreachable:
                return  # given up for good: the loop stops on its own next call
            wait_s = self.heartbeat_s if landed in ("stored", "unreached") else RESEND_S

    def _beat(self) -> str:
        """One heartbeat with the state of now: `stored`, `dropped` (the server's rate; sent
        again soon), `refused` or `unreached` (the call waited its patience already)."""
        if self._lost or self._reconnected():
            self._lost = True
            self._register(first=False)
            if self._lost:
                return "refused"
        with self._lock:
            args = {"workerId": self.worker_id, **self._state}
        args = {key: value for key, value in args.items() if value is not None}
        try:
            answer = self.authority.call_within(
                "harness_worker_heartbeat", args, patience_s=self.heartbeat_s
            )
        except ToolError as error:
            if error.text.startswith(f"[failureClass={NOT_REGISTERED}]"):
                self._lost = True
                return "refused"
            self._report(f"[worker:{self.worker_id}] heartbeat refused: {error.text}")
            return "refused"
        if answer is None:
            self._lost = True
            return "unreached"
        if self._reconnected():  # this beat's retries got over an outage: register now
            self._lost = True
            self._register(first=False)
        return "stored" if answer.get("stored") else "dropped"

    def _reconnected(self) -> bool:
        return self.authority.sessions_opened != self._registered_on


def _text(exc: BaseException) -> str:
    return getattr(exc, "text", None) or getattr(exc, "message", None) or str(exc)


def fleet_workers(authority: McpAuthority) -> dict[str, Any]:
    """`harness_workers` at the authority (`harness-loop status --mcp-url`)."""
    try:
        document = authority.call_within("harness_workers", {}, patience_s=authority.retry_s)
    except ToolError as error:
        raise AuthorityRefused(f"the MCP server refused harness_workers: {error.text}") from None
    if document is None:
        raise AuthorityUnreachable(f"the MCP server at {authority.url} did not answer")
    return document
