"""`premath mcp-serve`: the tool service behind the official MCP SDK's low-level server, over
stdio or streamable HTTP (`premath/mcp/http.py`). Every failure of a call is a tool error
result (`isError`), never a crash: the server keeps serving after bad input, unknown tools and
broken stores.

Each call runs on a worker thread with a deadline (D22-7): a call that blocks or runs long
delays only itself. Its lock waits end just before the deadline (the caller hears the lock's
refusal, and the write never starts); anything else still running then is answered with a tool
error while the thread runs to its end (a write it began completes whole).
`InFlight` counts those threads so the process never exits under a write.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from premath.clock import SystemClock
from premath.errors import PremathError
from premath.mcp.access_log import AccessLog, failure_class
from premath.mcp.caller import calling_as
from premath.mcp.catalogue import TOOLS, TOOLS_BY_NAME
from premath.mcp.tools import (
    Rendered,
    ServerConfig,
    ToolRefused,
    ToolService,
    call_deadline,
)
from premath.models.params import Reading, check_arguments
from premath.models.serde import SchemaViolation
from premath.ops.catalogue import by_face
from premath.store.canonical import stdout_bytes

WORKER_THREADS = 64
"""Calls running at once; later ones wait their turn (their deadline still runs)."""

TITLE = "Premath MCP Server"
DESCRIPTION = "MCP tool surface for premath JSONL issue memory and observations"
WEBSITE = "https://github.com/premath/premath"
INSTRUCTIONS = (
    "Use init_tool to initialize canonical .premath/issues.jsonl memory. issue/dep mutation tools "
    "(including issue_claim, issue_lease_renew, issue_lease_release, and issue_discover) are "
    "instruction-mediated by policy (default: instruction-linked) and reads may use jsonl or "
    "surreal projection backends. Use issue_backend_status for backend integration state, "
    "issue_lease_projection for deterministic stale/contended lease views, and dep_diagnostics "
    "for scoped dependency-cycle diagnostics. Use instruction_* tools for doctrine-gated runs "
    "(instruction envelopes require normalizerId + policyDigest, requestedChecks must be "
    "policy-allowlisted, optional capabilityClaims are carried to witness for mutation gating, "
    "and optional proposal ingestion uses proposal/llmProposal) and observe_* tools for "
    "observation queries."
)


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if error:
        return types.CallToolResult(content=content, is_error=True)
    return types.CallToolResult(content=content)


OPERATIONS = by_face("mcp")
"""The tools the catalogue runs (premath/ops/); the others are `ToolService` methods."""


def call_tool(service: ToolService, name: str, arguments: Any) -> types.CallToolResult:
    """One call: the result document as pretty sorted JSON, or an error result."""
    if arguments is None:
        return _text(
            f"Invalid arguments for tool '{name}': Missing 'arguments' field in the request",
            error=True,
        )
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        return _text(f"Unknown tool: {name}", error=True)
    try:
        args = check_arguments(tool.fields, arguments, Reading(f"struct {tool.name}"))
        operation = OPERATIONS.get(name)
        if operation is not None and operation.run is not None:
            document = service.run_operation(operation, args)
        else:
            document = getattr(service, name)(args)
        if isinstance(document, Rendered):
            return _text(document.text)
    except SchemaViolation as exc:
        return _text(str(exc), error=True)
    except ToolRefused as refused:
        return _text(refused.message, error=True)
    except PremathError as exc:
        return _text(exc.message, error=True)
    except Exception as exc:  # noqa: BLE001 - a tool bug is an error result, the server lives on
        return _text(f"internal error: {type(exc).__name__}: {exc}", error=True)
    return _text(stdout_bytes(document).decode("utf-8").removesuffix("\n"))


@dataclass(frozen=True)
class CallLimits:
    """Each call's deadline: `call_timeout_s`, or `run_timeout_s` for `instruction_run` (its
    checks run for minutes)."""

    call_timeout_s: float = 30.0
    run_timeout_s: float = 900.0

    def for_tool(self, name: str) -> float:
        return self.run_timeout_s if name == "instruction_run" else self.call_timeout_s


class InFlight:
    """Tool calls running on worker threads, so shutdown can wait for their writes."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    def __enter__(self) -> None:
        with self._idle:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        """True once no call runs; False if some still does after `timeout_s`."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout=timeout_s)


def token_id_of(ctx: Any) -> str | None:
    """The token id of the HTTP request behind a call (None for the stdio transport)."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    token = getattr(user, "access_token", None)
    client_id = getattr(token, "client_id", None)
    return client_id if isinstance(client_id, str) else None


def _deadline_result(name: str, timeout_s: float) -> types.CallToolResult:
    return _text(
        f"[failureClass=tool.deadline_exceeded] {name} did not finish within {timeout_s:g} s "
        "(mcp-serve --call-timeout); it still runs to its end, and a write it makes completes "
        "whole: read the issue before retrying",
        error=True,
    )


class ToolCalls:
    """How every tool call runs, whichever path it came by (the SDK's handler, or the HTTP
    face's direct path for `tools/call`, premath/mcp/direct_calls.py): on a worker thread
    within its deadline, counted in flight, and named in the access log."""

    def __init__(
        self,
        service: ToolService,
        *,
        limits: CallLimits | None = None,
        log: AccessLog | None = None,
        in_flight: InFlight | None = None,
    ) -> None:
        self.service = service
        self.limits = limits or CallLimits()
        self.log = log or AccessLog(None)
        self.in_flight = in_flight or InFlight()
        self._workers = anyio.CapacityLimiter(WORKER_THREADS)

    def _work(
        self, tool: str, arguments: Any, deadline: float, caller: str | None
    ) -> types.CallToolResult:
        with self.in_flight, call_deadline(deadline), calling_as(caller):
            return call_tool(self.service, tool, arguments)

    async def call(self, name: str, arguments: Any, token_id: str | None) -> types.CallToolResult:
        """The result of tool `name` called by the holder of `token_id` (None: stdio)."""
        started = time.monotonic()
        timeout_s = self.limits.for_tool(name)
        result: types.CallToolResult | None = None
        outcome = "cancelled"
        try:
            with anyio.move_on_after(timeout_s):
                result = await anyio.to_thread.run_sync(
                    self._work,
                    name,
                    arguments,
                    started + timeout_s,
                    token_id,
                    abandon_on_cancel=True,
                    limiter=self._workers,
                )
            if result is None:
                result = _deadline_result(name, timeout_s)
                outcome = "deadline"
            else:
                outcome = "tool_error" if result.is_error else "ok"
            return result
        finally:
            first = result.content[0] if result is not None and result.is_error else None
            self.log.write(
                "tool",
                tool=name if name in TOOLS_BY_NAME else "(unknown)",
                caller=token_id or "stdio",
                outcome=outcome,
                failureClass=failure_class(first.text)
                if isinstance(first, types.TextContent)
                else None,
                durationMs=round((time.monotonic() - started) * 1000, 3),
            )


class ToolServer(Server[Any]):
    """The SDK's low-level server of premath's tools, which also lends its `ToolCalls` to the
    HTTP face's direct path."""

    def __init__(self, calls: ToolCalls, name: str, version: str, **handlers: Any) -> None:
        super().__init__(name, version=version, **handlers)
        self.tool_calls = calls


def build_server(
    service: ToolService,
    name: str,
    version: str,
    *,
    limits: CallLimits | None = None,
    log: AccessLog | None = None,
    in_flight: InFlight | None = None,
) -> ToolServer:
    tools = [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema(),
            annotations=types.ToolAnnotations(
                read_only_hint=tool.read_only,
                idempotent_hint=None if tool.read_only else tool.idempotent,
            ),
        )
        for tool in TOOLS
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    calls = ToolCalls(service, limits=limits, log=log, in_flight=in_flight)

    async def on_call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await calls.call(params.name, params.arguments, token_id_of(ctx))

    return ToolServer(
        calls,
        name,
        version,
        title=TITLE,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        website_url=WEBSITE,
        on_list_tools=list_tools,
        on_call_tool=on_call,
    )


def serve(
    config: ServerConfig, name: str, version: str, limits: CallLimits, log: AccessLog
) -> None:
    """Serve over stdio until the client closes stdin; calls still running then finish first."""
    in_flight = InFlight()
    service = ToolService(config, SystemClock())
    server = build_server(service, name, version, limits=limits, log=log, in_flight=in_flight)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
    in_flight.wait_idle(limits.run_timeout_s)
    sys.stderr.flush()
    os._exit(0)
