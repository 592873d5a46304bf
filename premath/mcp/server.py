"""`premath mcp-serve`: the tool service behind the official MCP SDK's low-level server, over
stdio. Every failure of a call is a tool error result (`isError`), never a crash: the server
keeps serving after bad input, unknown tools and broken stores."""

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from premath.clock import SystemClock
from premath.errors import PremathError
from premath.mcp.arguments import parse_arguments
from premath.mcp.catalogue import TOOLS, TOOLS_BY_NAME
from premath.mcp.tools import ServerConfig, ToolRefused, ToolService
from premath.models.serde import SchemaViolation
from premath.store.canonical import stdout_bytes

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
        args = parse_arguments(tool, arguments)
        document = getattr(service, name)(args)
    except SchemaViolation as exc:
        return _text(str(exc), error=True)
    except ToolRefused as refused:
        return _text(refused.message, error=True)
    except PremathError as exc:
        return _text(exc.message, error=True)
    except Exception as exc:  # noqa: BLE001 - a tool bug is an error result, the server lives on
        return _text(f"internal error: {type(exc).__name__}: {exc}", error=True)
    return _text(stdout_bytes(document).decode("utf-8").removesuffix("\n"))


def build_server(service: ToolService, name: str, version: str) -> Server[Any]:
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

    async def on_call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return call_tool(service, params.name, params.arguments)

    return Server(
        name,
        version=version,
        title=TITLE,
        description=DESCRIPTION,
        instructions=INSTRUCTIONS,
        website_url=WEBSITE,
        on_list_tools=list_tools,
        on_call_tool=on_call,
    )


def serve(config: ServerConfig, name: str, version: str) -> None:
    """Serve over stdio until the client closes stdin."""
    service = ToolService(config, SystemClock())
    server = build_server(service, name, version)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
    sys.stderr.flush()
    os._exit(0)
