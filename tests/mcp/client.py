"""Drive a real `premath mcp-serve` subprocess with the MCP SDK's own stdio client."""

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
from mcp import ClientSession, StdioServerParameters, stdio_client

REPO_ROOT = Path(__file__).resolve().parents[2]


@contextlib.asynccontextmanager
async def session(cwd: Path, *options: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "premath", "mcp-serve", *options],
        cwd=str(cwd),
        env={"PYTHONPATH": str(REPO_ROOT)},
    )
    with open(cwd / "server.stderr", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


async def call(client: ClientSession, name: str, arguments: dict | None = None):
    """(is_error, document or error text) of one tool call."""
    result = await client.call_tool(name, {} if arguments is None else arguments)
    text = result.content[0].text
    return bool(result.is_error), (text if result.is_error else orjson.loads(text))
