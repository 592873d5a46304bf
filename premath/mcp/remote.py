"""`McpAuthority`: issue memory's authority over MCP, for workers on other machines.

Every read and mutation of a remote worker's loop goes through the MCP server over streamable
HTTP (specs/mcp-http.md) with a lean JSON-RPC client (`premath.mcp.rpc_client`: plain POSTs on
kept-alive connections, one MCP session), so the loop's synchronous code (and its heartbeat
thread) call it like the local store, at a fraction of the SDK client's CPU per call. The
worker never touches a local copy of the issues: its clone's `.premath/issues.jsonl` is not an
authority.

Losing the server (specs/remote-workers.md "Losing the server"): a call whose connection fails
is retried with exponential back-off (0.2 s doubling to 5 s, jittered) on a fresh session until
the outage has lasted `retry_s`; then the authority gives up for good: that call and every later
one raise `AuthorityUnreachable`, and the worker stops cleanly (its lease goes stale and another
worker reclaims the issue). A call is never re-sent blindly when its answer may have been lost
after the server applied it: a claim carries its own lease id and is looked up first (the
server may have granted it), a finish first reads the issue to see whether it landed.

Refusals that retrying cannot cure raise `AuthorityRefused` at once: a token the server does not
accept (401), a URL that is not an MCP endpoint, a server that lacks the tools remote workers
use, a mutation the instruction gate refuses (name the fleet's witness with `--instruction-id`).
"""

from __future__ import annotations

import http.client
import random
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import orjson

from premath.errors import (
    AuthorityRefused,
    AuthorityUnreachable,
    InputInvalid,
    LeaseRefused,
    NotFound,
    PremathError,
)
from premath.harness.authority import BootView, Claimed, HeldLease, refused
from premath.harness.handoff import LeaseSnapshot
from premath.harness.loop_paths import LoopPaths
from premath.issues.held import Discovery, Finished, holder_problem
from premath.mcp.rpc_client import HttpAnswer, McpHttpClient, RpcError
from premath.ops import catalogue as ops
from premath.text import id_token

TYPE_CHECKING = False
if TYPE_CHECKING:
    from premath.issues.held import FinishStatus
    from premath.models.issue_row import IssueRow
    from premath.ops.operation import Operation

DEFAULT_RETRY_S = 120.0
CALL_TIMEOUT_S = 90.0
"""An HTTP request's own deadline: above the server's `--call-timeout` (30 s by default)."""
REQUIRED_TOOLS = tuple(
    str(name)
    for name in (ops.ISSUE_CLAIM_NEXT.faces.mcp, "issue_show", ops.ISSUE_LEASE_FINISH.faces.mcp)
)
_BACKOFF_FIRST_S, _BACKOFF_MAX_S = 0.2, 5.0
_GATE_LEADS = (
    "mutation policy `instruction-linked`",
    "instruction witness",
    "instruction `",
    "instruction policyDigest",
    "[failureClass=witness.",
    "[failureClass=path.",
    "[failureClass=mutation.",
)
_TRANSIENT_LEADS = (
    "[failureClass=lease_mutation_lock_busy]",
    "issue-memory lock busy",
    "[failureClass=tool.deadline_exceeded]",
)
_LEASE_RECOVERY = {
    op.faces.transport: op for op in (ops.ISSUE_LEASE_RENEW, ops.ISSUE_LEASE_RELEASE)
}
"""The transport actions a lease recovery dispatches, run by their operations' MCP tools."""
Report = Callable[[str], None]


class _Down(Exception):
    """The server could not be reached, or gave no usable answer (retry)."""


class ToolError(Exception):
    """The server answered the call with a tool error; `text` is its message."""

    def __init__(self, text: str, *, maybe_applied: bool) -> None:
        super().__init__(text)
        self.text = text
        self.maybe_applied = maybe_applied
        """An earlier attempt of the same call was lost after it may have been applied."""


class McpAuthority:
    """The loop's `IssueAuthority` over an MCP server; use it as a context manager."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        instruction_id: str | None = None,
        retry_s: float = DEFAULT_RETRY_S,
        report: Report = lambda _line: None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self._token = token
        self.instruction_id = instruction_id
        self.retry_s = retry_s
        self._report = report
        self._sleep = sleep
        self._lock = threading.Lock()
        self._open = False
        self._client: McpHttpClient | None = None
        self._outage_since: float | None = None
        self._failures = 0
        self._sessions_opened = 0
        self._gave_up: str | None = None

    # --- lifetime --------------------------------------------------------------------------------

    def __enter__(self) -> McpAuthority:
        self._open = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._drop_session()
            self._open = False

    @property
    def sessions_opened(self) -> int:
        """How many MCP sessions were opened so far: a new one after the first means the
        connection was lost and made again (the server may have restarted meanwhile)."""
        return self._sessions_opened

    def connect(self) -> None:
        """Reach the server now (retrying within the bound): a worker learns of a wrong URL or
        token before it claims anything."""
        self._call("issue_ready", {})

    # --- the connection -------------------------------------------------------------------------

    def _open_session(self) -> McpHttpClient:
        """A new session whose server offers the tools remote workers use. Tells a refused
        token (401) or a URL that is no MCP endpoint apart from a server that is down."""
        client = McpHttpClient(self.url, self._token, timeout_s=CALL_TIMEOUT_S)
        try:
            client.initialize()
            tools = client.tool_names()
        except (HttpAnswer, RpcError) as answer:
            client.close()
            status = answer.status if isinstance(answer, HttpAnswer) else 200
            if status == 401:
                raise AuthorityRefused(
                    f"the MCP server at {self.url} refused our bearer token (HTTP 401): check "
                    "--token-file (or PREMATH_MCP_TOKEN) against the server's token file"
                ) from None
            if status in (408, 429) or status >= 500:
                raise _Down(f"HTTP {status}") from None
            raise AuthorityRefused(
                f"{self.url} is not an MCP endpoint (HTTP {status} to an MCP request): "
                "give the server's URL ending in /mcp (premath mcp-serve --transport "
                "streamable-http prints it as `listening:`)"
            ) from None
        except _transport_failures() as exc:
            client.close()
            raise _Down(_first_reason(exc)) from None
        missing = [name for name in REQUIRED_TOOLS if name not in tools]
        if missing:
            client.close()
            raise AuthorityRefused(
                f"the MCP server at {self.url} has no {', '.join(missing)}: remote workers need "
                "a premath mcp-serve that offers them (upgrade the server)"
            )
        return client

    def _ensure_session(self) -> McpHttpClient:
        with self._lock:
            if not self._open:
                raise PremathError("McpAuthority used outside its `with` block")
            if self._client is None:
                self._client = self._open_session()
                self._sessions_opened += 1
            return self._client

    def _drop_session(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def _outage(self, reason: str, patience_end: float | None) -> float:
        """Note a failed attempt; the back-off before the next, or give up (raise)."""
        now = time.monotonic()
        with self._lock:
            self._drop_session()
            self._failures += 1
            if self._outage_since is None:
                self._outage_since = now
                self._report(
                    f"[authority] lost the MCP server at {self.url} ({reason}); retrying for up "
                    f"to {self.retry_s:g} s"
                )
            lasted = now - self._outage_since
            if lasted >= self.retry_s:
                self._gave_up = (
                    f"the MCP server at {self.url} could not be reached for {lasted:.0f} s "
                    f"({reason}); gave up (--mcp-retry-seconds {self.retry_s:g})"
                )
                raise AuthorityUnreachable(self._gave_up)
        if patience_end is not None and now >= patience_end:
            raise _Down(reason)
        pause = min(_BACKOFF_MAX_S, _BACKOFF_FIRST_S * 2 ** min(self._failures - 1, 8))
        pause = min(pause * random.uniform(0.8, 1.2), self._outage_since + self.retry_s - now)
        if patience_end is not None:
            pause = min(pause, patience_end - now)
        return max(0.0, float(pause))

    def _call(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        patience_s: float | None = None,
        landed: Callable[[], dict[str, Any] | None] | None = None,
    ) -> dict[str, Any]:
        """The tool's result document; ToolError for a tool error; retried while the server
        is down (see the module doc). `landed` is asked, before an attempt is sent again after
        one that may have been applied, for that attempt's result (None: send it again)."""
        patience_end = None if patience_s is None else time.monotonic() + patience_s
        maybe_applied = False
        while True:
            if self._gave_up is not None:
                raise AuthorityUnreachable(self._gave_up)
            if maybe_applied and landed is not None:
                found = landed()
                if found is not None:
                    return found
            try:
                is_error, text = self._ensure_session().call_tool(tool, args)
            except _transport_failures() as exc:
                # A request that reached the wire may have been applied; a probe's failure not.
                maybe_applied = maybe_applied or not isinstance(exc, _Down)
                self._sleep(self._outage(_first_reason(exc), patience_end))
                continue
            if self._outage_since is not None:
                self._report(f"[authority] the MCP server at {self.url} answers again")
                self._outage_since, self._failures = None, 0
            if not is_error:
                parsed: dict[str, Any] = orjson.loads(text)
                return parsed
            if text.startswith(_TRANSIENT_LEADS):
                maybe_applied = maybe_applied or "deadline_exceeded" in text
                self._sleep(self._outage(text.split("] ", 1)[-1][:200], patience_end))
                continue
            if text.startswith(_GATE_LEADS):
                raise AuthorityRefused(
                    f"the MCP server refused {tool}: {text} (the fleet's instruction witness "
                    "must authorise it: --instruction-id, specs/remote-workers.md "
                    '"Authorisation")'
                )
            raise ToolError(text, maybe_applied=maybe_applied)

    def _gated(self, args: dict[str, Any]) -> dict[str, Any]:
        return {**args, "instructionId": self.instruction_id} if self.instruction_id else args

    def _run(
        self,
        operation: Operation,
        args: dict[str, Any],
        *,
        patience_s: float | None = None,
        landed: Callable[[], dict[str, Any] | None] | None = None,
    ) -> dict[str, Any]:
        """A gated operation of the catalogue (premath/ops/) through its MCP tool, by the name
        and with the parameters it declares there."""
        tool = operation.faces.mcp
        declared = {p.name for p in operation.params_at("mcp")}
        assert tool is not None, operation.action
        assert declared.issuperset(args), (tool, sorted(args))
        return self._call(tool, self._gated(args), patience_s=patience_s, landed=landed)

    def call_within(
        self, tool: str, args: dict[str, Any], *, patience_s: float
    ) -> dict[str, Any] | None:
        """One call of `tool`, retried for at most `patience_s` while the server is down (None
        then, not given up); a tool error raises ToolError. The worker's presence reports use
        it (premath/mcp/presence.py): a report must not outlive its beat."""
        try:
            return self._call(tool, args, patience_s=patience_s)
        except _Down:
            return None

    def _show(self, issue_id: str) -> dict[str, Any] | None:
        try:
            return self._call("issue_show", {"id": issue_id})
        except ToolError as error:
            if error.text == f"issue not found: {issue_id}":
                return None
            raise InputInvalid(f"issue_show {issue_id}: {error.text}") from None

    # --- IssueAuthority ---------------------------------------------------------------------------

    def location(self) -> str:
        return self.url

    def recorded_issues(self, paths: LoopPaths) -> tuple[str, str]:
        return "", self.url

    def boot_view(self, now: datetime) -> BootView:
        listing = self._call("issue_list", {})["items"]
        integrity = self._call("dep_diagnostics", {"graphScope": "active"})["integrity"]
        return BootView(
            issues_root={"name": "issues", "path": self.url, "state": "present"},
            statuses={item["id"]: item["status"] for item in listing},
            ready_ids=self.ready_ids(now),
            integrity={"graphScope": "active", **integrity},
            snapshot_ref=None,
        )

    def claim_next(self, worker_id: str, *, ttl_s: int, now: datetime) -> Claimed | None:
        lease_id = f"lease1_{id_token(worker_id, 'anon')}_{secrets.token_hex(6)}"

        def landed() -> dict[str, Any] | None:
            listing = self._call("issue_list", {"assignee": worker_id, "status": "in_progress"})
            for item in listing["items"]:
                if (item.get("lease") or {}).get("leaseId") == lease_id:
                    return {"issue": item}
            return None

        args = {"assignee": worker_id, "leaseId": lease_id, "leaseTtlSeconds": ttl_s}
        try:
            document = self._run(ops.ISSUE_CLAIM_NEXT, args, landed=landed)
        except ToolError as error:
            raise InputInvalid(f"{ops.ISSUE_CLAIM_NEXT.faces.mcp}: {error.text}") from None
        issue = document.get("issue")
        if not issue:
            return None
        return Claimed(issue["id"], (issue.get("lease") or {}).get("leaseId"))

    def issue(self, issue_id: str, now: datetime) -> dict[str, Any]:
        shown = self._show(issue_id)
        return {} if shown is None else dict(shown["issue"])

    def holder_lease(self, issue_id: str, worker_id: str, now: datetime) -> str:
        shown = self._show(issue_id)
        if shown is None:
            raise NotFound(f"issue not found: {issue_id} (at {self.url})")
        row = _holder_row(shown["issue"])
        refused(issue_id, worker_id, holder_problem(row, worker_id, None))
        return str(shown["issue"]["lease"]["leaseId"])

    def snapshot(self, issue_id: str, now: datetime) -> LeaseSnapshot:
        shown = self._show(issue_id)
        if shown is None:
            return LeaseSnapshot(issue_id, "missing_issue", "", "", None, None, None)
        issue = shown["issue"]
        lease = issue.get("lease") or {}
        return LeaseSnapshot(
            issue_id=issue_id,
            lease_state=shown["leaseState"],
            status=issue["status"],
            assignee=issue.get("assignee", ""),
            lease_id=lease.get("leaseId") or None,
            lease_owner=lease.get("owner") or None,
            expires_at=lease.get("expiresAt"),
        )

    def renew(
        self,
        issue_id: str,
        worker_id: str,
        lease_id: str,
        *,
        ttl_s: int,
        now: datetime,
        patience_s: float | None = None,
        queue_state: Mapping[str, str] | None = None,
    ) -> None:
        args: dict[str, Any] = {"id": issue_id, "assignee": worker_id, "leaseId": lease_id}
        if queue_state is not None:
            from premath.models.merge_queue import queue_state_lines

            args["mergeQueue"] = queue_state_lines(queue_state)
        try:
            self._run(
                ops.ISSUE_LEASE_RENEW, {**args, "leaseTtlSeconds": ttl_s}, patience_s=patience_s
            )
        except _Down:
            return  # out of patience, not given up: the next beat tries again
        except ToolError as error:
            tool = ops.ISSUE_LEASE_RENEW.faces.mcp
            raise LeaseRefused(f"{tool} {issue_id}: {error.text}") from None

    def release(
        self, issue_id: str, worker_id: str, lease_id: str | None, *, now: datetime
    ) -> None:
        args: dict[str, Any] = {"id": issue_id, "assignee": worker_id}
        if lease_id:
            args["leaseId"] = lease_id
        try:
            self._run(ops.ISSUE_LEASE_RELEASE, args)
        except ToolError as error:
            if error.maybe_applied and not self._holds(issue_id, worker_id, lease_id):
                return  # our first attempt released it; its answer was lost
            tool = ops.ISSUE_LEASE_RELEASE.faces.mcp
            raise LeaseRefused(f"{tool} {issue_id}: {error.text}") from None

    def _holds(self, issue_id: str, worker_id: str, lease_id: str | None) -> bool:
        shown = self._show(issue_id)
        return shown is not None and not holder_problem(
            _holder_row(shown["issue"]), worker_id, lease_id
        )

    def finish(
        self,
        issue_id: str,
        worker_id: str,
        lease_id: str | None,
        *,
        status: FinishStatus,
        now: datetime,
        note: str | None = None,
        witness_refs: Sequence[str] = (),
        discover: Discovery | None = None,
    ) -> Finished:
        args: dict[str, Any] = {
            "id": issue_id,
            "assignee": worker_id,
            "leaseId": lease_id or "",
            "status": status,
        }
        if note is not None:
            args["notes"] = note
        if witness_refs:
            args["witnessRefs"] = list(witness_refs)
        if discover is not None:
            args |= {"discoverTitle": discover.title, "discoverDescription": discover.description}

        def landed() -> dict[str, Any] | None:
            shown = self._show(issue_id)
            if shown is None or not _finished_as(shown["issue"], worker_id, status, note):
                return None
            return {"createdIssueId": _discovered(shown["issue"].get("notes", ""))}

        try:
            document = self._run(ops.ISSUE_LEASE_FINISH, args, landed=landed)
        except ToolError as error:
            if error.maybe_applied and (found := landed()) is not None:
                return Finished(True, "", found["createdIssueId"])
            return Finished(False, error.text.split("] ", 1)[-1])
        return Finished(True, "", document.get("createdIssueId"))

    def dispatch(self, action: str, payload: dict[str, Any], *, now: datetime) -> dict[str, Any]:
        """The transport envelope of a lease recovery, run by the MCP lease tool of the same
        action: accepted or rejected with its class, and the action's semantic digest."""
        from premath.transport.registry import ROUTES_BY_ACTION, dispatch_digest

        route = ROUTES_BY_ACTION[action]
        digest = dispatch_digest(route.action, route.action_id)
        envelope: dict[str, Any] = {"action": action, "semanticDigest": digest}
        try:
            self._run(_LEASE_RECOVERY[action], payload)
        except ToolError as error:
            klass = error.text[len("[failureClass=") :].split("]", 1)[0]
            known = error.text.startswith("[failureClass=")
            return {**envelope, "result": "rejected", "failureClasses": [klass] if known else []}
        return {**envelope, "result": "accepted", "failureClasses": []}

    def ready_ids(self, now: datetime) -> list[str]:
        """In claim-next's order (priority, then id in natural order), as boot lists them."""
        from premath.issues.leases import natural_key

        items = [i for i in self._call("issue_ready", {})["items"] if not i.get("escalation")]
        ordered = sorted(items, key=lambda i: (i["priority"], natural_key(i["id"]), i["id"]))
        return [item["id"] for item in ordered]

    def active_cycle(self, now: datetime) -> list[str] | None:
        integrity = self._call("dep_diagnostics", {"graphScope": "active"})["integrity"]
        cycle = integrity.get("cyclePath")
        return list(cycle) if cycle else None

    def held_leases(self, now: datetime) -> list[HeldLease]:
        items = self._call("issue_list", {})["items"]
        return [
            HeldLease(item["id"], lease["owner"], lease["leaseId"], lease["state"])
            for item in items
            if (lease := item.get("lease"))
        ]

    def release_for(self, issue_id: str, owner: str, lease_id: str, *, now: datetime) -> bool:
        args = {"id": issue_id, "assignee": owner, "leaseId": lease_id}
        try:
            self._run(ops.ISSUE_LEASE_RELEASE, args)
        except ToolError:
            return False
        return True

    # --- the fleet's record (premath.harness.outbox.StepShipping) -------------------------------

    def ship_step(
        self,
        worker_id: str,
        lease_id: str | None,
        row: dict[str, Any],
        files: list[tuple[str, str]],
        *,
        patience_s: float | None,
    ) -> bool:
        """One step row and its record to the authority's trajectory (idempotent by step id,
        so a call whose answer was lost is simply sent again)."""
        from premath.harness.outbox import ShipPostponed, ShipRefused

        args: dict[str, Any] = {"workerId": worker_id, "row": row}
        if lease_id:
            args["leaseId"] = lease_id
        if files:
            args["stepFiles"] = [{"path": path, "text": text} for path, text in files]
        try:
            document = self._run(ops.HARNESS_TRAJECTORY_APPEND, args, patience_s=patience_s)
        except _Down as down:
            raise ShipPostponed(f"the MCP server at {self.url} did not answer: {down}") from None
        except ToolError as error:
            raise ShipRefused(error.text) from None
        return bool(document.get("appended"))


def _transport_failures() -> tuple[type[BaseException], ...]:
    """What a call raises when no usable answer came: the connection failed or timed out, the
    HTTP exchange broke, or the server answered with no JSON-RPC result (a restart's 503, a
    proxy's page, a refusal of the request itself)."""
    return (_Down, OSError, http.client.HTTPException, HttpAnswer, RpcError)


def _first_reason(exc: BaseException) -> str:
    """A transport failure in one line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _holder_row(issue: dict[str, Any]) -> IssueRow:
    """The fields `holder_problem` reads, from an `issue show` item."""
    lease = issue.get("lease")
    row: dict[str, Any] = {"id": issue["id"], "status": issue["status"]}
    if lease:
        row["lease"] = {"owner": lease["owner"], "lease_id": lease["leaseId"]}
    return row  # type: ignore[return-value]


def _finished_as(issue: dict[str, Any], worker_id: str, status: str, note: str | None) -> bool:
    """Whether an issue shows the finish `worker_id` asked for (an answer that was lost)."""
    if issue["status"] != status or issue.get("lease"):
        return False
    if status == "closed":
        return issue.get("assignee") == worker_id  # a close keeps the holder as assignee
    return note is None or note.strip() in issue.get("notes", "")


def _discovered(notes: str) -> str | None:
    for line in reversed(notes.splitlines()):
        if line.startswith("discoveredIssue: "):
            return line.removeprefix("discoveredIssue: ").strip()
    return None
